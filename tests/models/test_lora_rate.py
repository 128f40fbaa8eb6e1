"""LoRA's own default learning rate: a model compiled with its task's default optimizer
trains adapters at LORA_LEARNING_RATE (issue 45 item 6); an optimizer of one's own is kept."""

import keras
import numpy as np
import pytest

from keras_bert.models.lora import LORA_LEARNING_RATE
from keras_bert.tasks import BertClassifier
from keras_bert.training.finetune import FinetuneTask

TEXTS, LABELS = ["good movie", "bad film", "lovely plot", "awful film"], [1, 0, 1, 0]


def rate(model):
    return float(keras.ops.convert_to_numpy(model.optimizer.learning_rate))


@pytest.fixture
def fresh(tiny_model_dir):
    return BertClassifier.from_pretrained(tiny_model_dir, num_classes=2)


def test_from_pretrained_then_enable_lora_trains_at_loras_rate(fresh):
    full = rate(fresh)
    assert np.isclose(full, float(FinetuneTask.default_optimizer().learning_rate))
    fresh.enable_lora(rank=2)
    assert np.isclose(rate(fresh), LORA_LEARNING_RATE) and LORA_LEARNING_RATE > 10 * full
    kernel = fresh.encoder.encoder_blocks[0].qkv_dense
    before = [keras.ops.convert_to_numpy(v).copy() for v in fresh.trainable_weights]
    fresh.fit(TEXTS, LABELS, epochs=1, batch_size=4, verbose=0)
    assert np.isclose(rate(fresh), LORA_LEARNING_RATE)
    assert any(not np.allclose(b, keras.ops.convert_to_numpy(v))
               for b, v in zip(before, fresh.trainable_weights))
    assert kernel.lora_targets  # Still the LoRA model.
    fresh.merge_lora()  # A plain model again: full fine-tuning's rate.
    assert np.isclose(rate(fresh), full)


def test_compiled_on_first_fit_after_enable_lora(fresh):
    model = BertClassifier(fresh.encoder, num_classes=2, preprocessor=fresh.preprocessor)
    model.enable_lora(rank=2)
    model.fit(TEXTS, LABELS, epochs=1, batch_size=4, verbose=0)
    assert np.isclose(rate(model), LORA_LEARNING_RATE)


def test_an_optimizer_of_ones_own_is_kept(fresh):
    fresh.compile(optimizer=keras.optimizers.SGD(0.05))
    fresh.enable_lora(rank=2)
    assert isinstance(fresh.optimizer, keras.optimizers.SGD) and np.isclose(rate(fresh), 0.05)
