"""keras-hub's keras_hub/src/models/bert/bert_backbone_test.py, on keras_bert's BertEncoder.

keras-hub's BertBackbone(vocabulary_size, num_layers, num_heads, hidden_dim,
intermediate_dim, max_sequence_length) is BertEncoder(vocab_size, num_layers,
num_heads, hidden_size, intermediate_size, max_position_embeddings): BertConfig's
names, as everywhere in keras_bert. Its preset tests download keras-hub presets;
converting a preset is tests/checkpoints/test_keras_hub.py's.
"""

import keras
import numpy as np
import pytest

from keras_bert import BertEncoder
from tests.peers.peer_case import run_backbone_predict_test, run_backbone_test
from tests.test_case import run_model_saving_test

INIT_KWARGS = {"vocab_size": 10, "num_layers": 2, "num_heads": 2, "hidden_size": 2,
               "intermediate_size": 4, "max_position_embeddings": 5}


def input_data():
    return {"token_ids": np.ones((2, 5), "int32"), "segment_ids": np.zeros((2, 5), "int32"),
            "padding_mask": np.ones((2, 5), "int32")}


def test_backbone_basics():
    """bert_backbone_test.py test_backbone_basics (run_backbone_test, mixed precision
    included; Keras' compiled predict is test_backbone_predict, slow tier)."""
    run_backbone_test(BertEncoder, INIT_KWARGS, input_data(),
                      {"sequence_output": (2, 5, 2), "pooled_output": (2, 2)})


@pytest.mark.slow
def test_backbone_predict():
    """bert_backbone_test.py test_backbone_basics, its compiled predict on arrays and on
    a dataset (run_backbone_test's predict part: the rest, config round trip, shapes and
    mixed precision, is test_backbone_basics', in the default tier)."""
    run_backbone_predict_test(BertEncoder(**INIT_KWARGS), input_data())


@pytest.mark.slow
def test_quantization():
    """keras-hub's run_quantization_test (called by run_backbone_test): int8 weights of
    the Dense layers (Keras' own `quantize`), the same shapes, a config round trip."""
    encoder = BertEncoder(**INIT_KWARGS)
    encoder(input_data())
    encoder.quantize("int8")
    quantized = [layer for layer in encoder._flatten_layers()
                 if getattr(layer, "quantization_mode", None) == "int8"]
    assert quantized, "no layer was quantized"
    output = encoder(input_data())
    assert tuple(output["sequence_output"].shape) == (2, 5, 2)
    revived = BertEncoder.from_config(encoder.get_config())
    assert revived.get_config() == encoder.get_config()


@pytest.mark.slow
def test_saved_model(tmp_path):
    """bert_backbone_test.py test_saved_model (run_model_saving_test: .keras save/load,
    the same class and outputs)."""
    keras.utils.set_random_seed(0)
    run_model_saving_test(BertEncoder(**INIT_KWARGS), input_data(), tmp_path)
