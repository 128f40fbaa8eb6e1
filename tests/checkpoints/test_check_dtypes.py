"""`convert_checkpoint(check=True)` on float16 and bfloat16 Hugging Face checkpoints.

The check compares in float32 whatever the source dtype. transformers (not a
dependency) loads a model in its saved dtype (config.json "torch_dtype", the
default of recent versions), so the reference pass must widen it to float32:
a float16 forward pass is off by ~1e-3 (a false mismatch), and a bfloat16
output has no numpy dtype (TypeError). Here transformers is replaced by a
stand-in with that loading behaviour, whose forward pass is
`reference.numpy_forward` rounded to the parameters' dtype.
"""

import json
import os
import sys
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

from keras_bert.checkpoints import convert_checkpoint, reference  # noqa: E402
from keras_bert.checkpoints.huggingface import read_huggingface_checkpoint  # noqa: E402
from tests.checkpoints.conftest import (  # noqa: E402
    huggingface_config,
    random_weights,
    tiny_config,
    to_huggingface,
    write_vocab,
)

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


class _SavedDtypeBertModel(torch.nn.Module):
    """transformers.BertModel as loaded with dtype "auto": parameters in the saved dtype."""

    def __init__(self, source, dtype):
        super().__init__()
        self.config = source.config
        self.names = sorted(source.weights)
        self.values = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.from_numpy(source.weights[n]).to(dtype), requires_grad=False)
             for n in self.names])

    @classmethod
    def from_pretrained(cls, folder, **kwargs):
        saved = safetensors_torch.load_file(os.path.join(folder, "model.safetensors"))
        dtype = next(v.dtype for v in saved.values() if v.is_floating_point())
        return cls(read_huggingface_checkpoint(folder), dtype)

    def forward(self, input_ids, token_type_ids, attention_mask):
        weights = {n: p.detach().double().numpy() for n, p in zip(self.names, self.values)}
        out = reference.numpy_forward(weights, self.config, input_ids.numpy(),
                                      token_type_ids.numpy(), attention_mask.numpy())
        dtype = self.values[0].dtype  # The computation's precision is the parameters'.
        return types.SimpleNamespace(
            last_hidden_state=torch.from_numpy(out["sequence_output"]).to(dtype),
            pooler_output=torch.from_numpy(out["pooled_output"]).to(dtype))


@pytest.fixture
def fake_transformers(monkeypatch):
    module = types.ModuleType("transformers")
    module.BertModel = _SavedDtypeBertModel
    monkeypatch.setitem(sys.modules, "transformers", module)
    assert reference.transformers_available()


def _write_checkpoint(folder, dtype):
    config = tiny_config(hidden_act="gelu")
    tensors = to_huggingface(random_weights(config, heads=False), config)
    os.makedirs(folder)
    safetensors_torch.save_file(
        {k: torch.from_numpy(np.ascontiguousarray(v)).to(DTYPES[dtype])
         if v.dtype.kind == "f" else torch.from_numpy(np.ascontiguousarray(v))
         for k, v in tensors.items()},
        os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({**huggingface_config(config), "torch_dtype": dtype}, f)
    write_vocab(os.path.join(folder, "vocab.txt"))
    return folder


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_check_passes_on_half_precision_checkpoints(tmp_path, fake_transformers, dtype):
    source = _write_checkpoint(str(tmp_path / dtype), dtype)
    report = convert_checkpoint(source, str(tmp_path / "out"), check=True)
    assert report.reference.startswith("transformers")
    # Both sides run the same (exactly widened) weights in float32.
    assert report.max_abs_diff["sequence_output"] < 1e-4
    assert report.max_abs_diff["pooled_output"] < 1e-4
    assert os.path.isfile(tmp_path / "out" / "model.weights.h5")


def test_reference_outputs_are_float32(tmp_path, fake_transformers):
    source = _write_checkpoint(str(tmp_path / "bf16"), "bfloat16")
    ids = np.array([[2, 5, 6, 3]], np.int32)
    out = reference.transformers_forward(source, ids, np.zeros_like(ids), np.ones_like(ids))
    assert out["sequence_output"].dtype == np.float32
    assert out["sequence_output"].shape == (1, 4, 16)
