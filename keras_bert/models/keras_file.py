"""Atomic `.keras` saves for keras_bert's models."""

import os

from keras_bert.files import save_atomically


class AtomicKerasSave:
    """Mixin for a `keras.Model`: `save("model.keras")` replaces the file atomically.

    Keras writes a `.keras` file in place: a save that fails part-way leaves
    neither model. `.h5`, unzipped and remote saves go to Keras unchanged;
    `overwrite=False` on an existing file raises FileExistsError (no prompt).
    """

    def save(self, filepath, overwrite=True, **kwargs):
        target = os.fspath(filepath) if isinstance(filepath, (str, os.PathLike)) else None
        if target is None or kwargs.get("zipped") is False or "://" in target:
            return super().save(filepath, overwrite=overwrite, **kwargs)
        return save_atomically(super().save, filepath, overwrite, **kwargs)
