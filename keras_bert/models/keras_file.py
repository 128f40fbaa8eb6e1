"""Atomic `.keras` saves for keras_bert's models."""

import os
import shutil

from keras_bert.staging import make_staging_dir


class AtomicKerasSave:
    """Mixin for a `keras.Model`: `save("model.keras")` replaces the file atomically.

    Keras writes a `.keras` file in place, so a save that fails part-way (a
    full disk, an error in a layer's `save_assets`) leaves neither the old
    model nor the new one. Here the file is written in a uniquely named
    staging folder beside it and renamed over it once complete; the previous
    file stays loadable whatever happens before that rename. `.h5`,
    unzipped and remote (`gs://`, `hf://`) saves go to Keras unchanged.
    """

    def save(self, filepath, overwrite=True, zipped=None, **kwargs):
        target = os.fspath(filepath)
        if (not isinstance(target, str) or not target.endswith(".keras")
                or zipped is False or "://" in target
                or (not overwrite and os.path.exists(target))):
            # The last: Keras asks before overwriting, on a terminal.
            return super().save(filepath, overwrite=overwrite, zipped=zipped, **kwargs)
        folder = os.path.dirname(os.path.abspath(target))
        os.makedirs(folder, exist_ok=True)
        staging = make_staging_dir(folder, ".tmp-keras-", os.path.basename(target))
        try:
            # Keras tells formats by the extension: the staged file keeps the name.
            staged = os.path.join(staging, os.path.basename(target))
            super().save(staged, overwrite=True, zipped=zipped, **kwargs)
            os.replace(staged, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
