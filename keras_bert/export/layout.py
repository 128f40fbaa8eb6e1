"""The TF Serving layout of exports, for every format: exports/NAME/VERSION, versions
chosen and checked."""

import os

from keras_bert import steps, storage
from keras_bert.export.predict import INFO_FILE, is_version, version_numbers
from keras_bert.files import (
    Kind,
    OutputError,
    check_not_input,
    check_writable,
    prepare_output_dir,
    real_path,
)
from keras_bert.staging import claimed_labels

STAGING_PREFIX = ".tmp-export-"


class NextVersion(str):
    """A version folder path that `resolve_export_dir` chose as "the next one":
    `save_serving_module` claims the next free version for it when it saves."""


def next_version(export_base):
    """1 + the largest version under `export_base` (1 if none): integer folders,
    and the versions running exports have claimed (`resolve_export_dir`)."""
    versions = version_numbers(export_base)
    versions += [int(label) for label in claimed_labels(export_base, STAGING_PREFIX)
                 if is_version(label)]
    return max(versions, default=0) + 1


def resolve_export_dir(output, version=None):
    """exports/NAME -> exports/NAME/<next version>; exports/NAME/7 stays as it is.

    Nothing is written: `save_serving_module` claims the next free version
    when it saves (two exports at the same time get two versions).
    """
    output = storage.normpath(output)
    if is_version(os.path.basename(output)):
        if version is not None and int(os.path.basename(output)) != int(version):
            raise ValueError(
                f"output={output!r} already ends in a version; it differs from "
                f"version={version!r}. Pass exports/NAME with version, or exports/NAME/VERSION."
            )
        return output
    if version is None:
        resolved = NextVersion(os.path.join(output, str(next_version(output))))
        steps.reached("resolved")
        return resolved
    if not isinstance(version, int) or version < 0:
        raise ValueError(
            f"Expected version to be an int >= 0 (TF Serving serves integer "
            f"directories). Received: version={version!r}"
        )
    return os.path.join(output, str(version))


#: What `save_serving_module` replaces (with overwrite): a version folder
#: holding saved_model.pb and nothing but what an export writes.
EXPORT_VERSION_KIND = Kind(
    "SavedModel version folder", required=("saved_model.pb",),
    allowed=("saved_model.pb", "fingerprint.pb", "variables", "assets", "assets.extra",
             INFO_FILE))


def check_export_dir(export_dir, overwrite=False, inputs=(), kind=EXPORT_VERSION_KIND):
    """Raises unless `export_dir` (exports/NAME/VERSION) may be written.

    A new version folder is always fine; an existing one (even empty: TF
    Serving may be watching it) needs `overwrite` and must be an export of
    `kind`; neither it nor exports/NAME may be an input.

    Returns:
        str, its real path (links resolved).
    """
    base = os.path.dirname(storage.abspath(export_dir))
    check_not_input(base, inputs, flag="The export folder")
    if storage.isfile(base):
        raise OutputError(f"The export folder {base} is a file: give exports/NAME, a folder "
                          f"for the versions (e.g. --output exports/sentiment).")
    if isinstance(export_dir, NextVersion):  # Claimed when saved, never overwritten.
        check_writable(export_dir)
        return real_path(export_dir)
    real = prepare_output_dir(export_dir, kind, inputs=inputs,
                              overwrite_flag="overwrite=True (--overwrite)")
    if storage.lexists(real) and not overwrite:
        raise FileExistsError(
            f"{export_dir} exists. Export to a new version (leave the version "
            f"out to get the next one), or pass overwrite=True (--overwrite)."
        )
    return real
