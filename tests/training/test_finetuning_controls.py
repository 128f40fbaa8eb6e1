import keras
import numpy as np
import pytest

from keras_bert.models import BertEncoder
from keras_bert.tasks import BertClassifier
from keras_bert.training.finetuning_controls import (
    GradualUnfreezing,
    freeze_encoder_layers,
    layerwise_lr_multipliers,
    with_lr_multipliers,
)
from keras_bert.training.optimizers import create_optimizer
from tests.models.conftest import tiny_config

# Each test fine-tunes and compares weight updates step by step.
pytestmark = pytest.mark.slow

X = {
    "token_ids": np.array([[2, 5, 7, 3, 0], [2, 9, 4, 8, 3]], dtype="int32"),
    "segment_ids": np.zeros((2, 5), dtype="int32"),
    "padding_mask": np.array([[1, 1, 1, 1, 0], [1] * 5], dtype="int32"),
}
Y = np.array([0, 1])


def classifier(num_layers=3):
    keras.utils.set_random_seed(0)
    config = tiny_config(num_layers=num_layers, dropout_rate=0.0, attention_dropout_rate=0.0)
    return BertClassifier(BertEncoder(**config.to_dict()), num_classes=2)


def snapshot(layer):
    return [w.numpy().copy() for w in layer.weights]


def changed(before, layer):
    return [not np.array_equal(b, w.numpy()) for b, w in zip(before, layer.weights)]


def loss():
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def test_frozen_encoder_stays_bit_identical_and_head_trains():
    model = classifier()
    model.encoder.trainable = False
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=loss())
    encoder_before, head_before = snapshot(model.encoder), snapshot(model.output_dense)
    model.fit(X, Y, epochs=3, verbose=0)
    assert not any(changed(encoder_before, model.encoder))
    assert all(changed(head_before, model.output_dense))


def test_freeze_bottom_layers():
    model = classifier()
    freeze_encoder_layers(model, 2)
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=loss())
    layers = [model.encoder.embeddings, *model.encoder.encoder_blocks]
    before = [snapshot(layer) for layer in layers]
    model.fit(X, Y, epochs=2, verbose=0)
    moved = [any(changed(b, layer)) for b, layer in zip(before, layers)]
    assert moved == [False, False, False, True]
    with pytest.raises(ValueError, match=r"num_layers in \[0, 3\]"):
        freeze_encoder_layers(model, 4)


def test_layerwise_decay_scales_sgd_steps_exactly():
    decay, lr = 0.5, 0.1
    plain, decayed = classifier(), classifier()
    plain.compile(optimizer=keras.optimizers.SGD(lr), loss=loss())
    multipliers = layerwise_lr_multipliers(decayed, decay=decay, encoder_multiplier=0.8)
    decayed.compile(
        optimizer=with_lr_multipliers(keras.optimizers.SGD(lr), multipliers), loss=loss()
    )
    groups = lambda m: [m.encoder.embeddings, *m.encoder.encoder_blocks,
                        m.encoder.pooler, m.output_dense]
    before = [snapshot(g) for g in groups(plain)]
    plain.fit(X, Y, epochs=1, batch_size=2, verbose=0, shuffle=False)
    decayed.fit(X, Y, epochs=1, batch_size=2, verbose=0, shuffle=False)
    # embeddings: 0.8 * d^3; block k: 0.8 * d^(2-k); pooler: 0.8; head: 1.
    expected = [0.8 * decay**3, 0.8 * decay**2, 0.8 * decay, 0.8, 0.8, 1.0]
    for b, p, d, factor in zip(before, groups(plain), groups(decayed), expected):
        for w0, wp, wd in zip(b, p.weights, d.weights):
            step_plain = wp.numpy() - w0
            np.testing.assert_allclose(wd.numpy() - w0, factor * step_plain, atol=1e-7)
        assert any(np.abs(wp.numpy() - w0).max() > 0 for w0, wp in zip(b, p.weights))


def test_layerwise_multipliers_also_scale_adamw():
    model = classifier(num_layers=2)
    multipliers = layerwise_lr_multipliers(model, decay=0.5)
    optimizer = with_lr_multipliers(keras.optimizers.AdamW(1e-2, weight_decay=0.0), multipliers)
    model.compile(optimizer=optimizer, loss=loss())
    bottom, top = model.encoder.encoder_blocks
    k_bottom, k_top = bottom.qkv_dense.kernel, top.qkv_dense.kernel
    b0, t0 = k_bottom.numpy().copy(), k_top.numpy().copy()
    model.fit(X, Y, epochs=1, verbose=0)
    # Adam's first step moves each weight by ~lr * sign(grad): the ratio is the decay.
    ratio = np.abs(k_bottom.numpy() - b0).max() / np.abs(k_top.numpy() - t0).max()
    assert ratio == pytest.approx(0.5, rel=0.05)


@pytest.mark.parametrize("make", [
    lambda: keras.optimizers.AdamW(0.1, weight_decay=0.5),
    lambda: create_optimizer(0.1, num_train_steps=10, weight_decay=0.5, global_clipnorm=None),
])
def test_layerwise_multipliers_scale_the_weight_decay(make):
    model = classifier(num_layers=2)
    multipliers = layerwise_lr_multipliers(model, decay=0.5)
    optimizer = with_lr_multipliers(make(), multipliers)
    assert isinstance(optimizer, type(make()))  # A subclass instance, same config.
    assert optimizer.get_config()["lr_multipliers"] == multipliers
    bottom, top = model.encoder.encoder_blocks
    kernels = [bottom.qkv_dense.kernel, top.qkv_dense.kernel]
    before = [k.numpy().copy() for k in kernels]
    variables = model.trainable_variables
    # Zero gradients leave the Adam moments at 0: only the decay moves weights.
    optimizer.apply_gradients([(keras.ops.zeros_like(v), v) for v in variables])
    for kernel, old, multiplier in zip(kernels, before, (0.5, 1.0)):
        np.testing.assert_allclose(kernel.numpy(), old * (1 - 0.1 * multiplier * 0.5), rtol=1e-6)
    with pytest.raises(ValueError, match="has not been built"):
        with_lr_multipliers(optimizer, multipliers)


def test_gradual_unfreezing_thaws_from_the_top():
    model = classifier(num_layers=2)
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=loss())
    callback = GradualUnfreezing(model, blocks_per_epoch=1)
    blocks = model.encoder.encoder_blocks
    history = []

    class Record(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.before = [snapshot(b) for b in blocks]

        def on_epoch_end(self, epoch, logs=None):
            history.append([any(changed(s, b)) for s, b in zip(self.before, blocks)])

    model.fit(X, Y, epochs=3, verbose=0, callbacks=[callback, Record()])
    assert history == [[False, False], [False, True], [True, True]]
