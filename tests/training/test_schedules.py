import keras
import pytest

from keras_bert.training import LinearWarmupLinearDecay, create_optimizer


def test_warmup_then_linear_decay_to_zero():
    schedule = LinearWarmupLinearDecay(1e-3, decay_steps=1000, warmup_steps=100)
    values = {step: float(schedule(step)) for step in (0, 49, 98, 99, 100, 550, 999, 1000, 5000)}
    assert values[0] == pytest.approx(1e-5)  # The first update moves the weights.
    assert values[49] == pytest.approx(5e-4)
    assert values[98] == pytest.approx(9.9e-4)
    assert values[99] == pytest.approx(1e-3)  # Peak on the last warmup step ...
    assert values[100] == pytest.approx(1e-3)  # ... and where the decay starts.
    assert values[550] == pytest.approx(5e-4)  # Halfway down (not Google's 4.5e-4).
    assert values[999] == pytest.approx(1e-3 / 900)
    assert values[1000] == 0.0
    assert values[5000] == 0.0


def test_warmup_rises_by_equal_steps_from_the_first_update():
    schedule = LinearWarmupLinearDecay(4.0, decay_steps=8, warmup_steps=4)
    assert [float(schedule(s)) for s in range(9)] == [1.0, 2.0, 3.0, 4.0, 4.0, 3.0, 2.0, 1.0, 0.0]


def test_no_warmup_starts_at_the_peak():
    schedule = LinearWarmupLinearDecay(2.0, decay_steps=4)
    assert [float(schedule(s)) for s in range(5)] == [2.0, 1.5, 1.0, 0.5, 0.0]


def test_serializes_alone_and_inside_the_optimizer():
    schedule = LinearWarmupLinearDecay(1e-3, decay_steps=1000, warmup_steps=100)
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert isinstance(clone, LinearWarmupLinearDecay)
    assert float(clone(300)) == pytest.approx(float(schedule(300)))
    optimizer = create_optimizer(1e-3, num_train_steps=1000, warmup_steps=100)
    restored = type(optimizer).from_config(optimizer.get_config())
    assert float(restored.learning_rate) == pytest.approx(1e-5)  # Step 0 of the warmup.
    assert isinstance(restored._learning_rate, LinearWarmupLinearDecay)


@pytest.mark.parametrize("kwargs", [dict(learning_rate=0.0, decay_steps=10),
                                    dict(learning_rate=1.0, decay_steps=10, warmup_steps=10),
                                    dict(learning_rate=1.0, decay_steps=0)])
def test_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError, match="Expected"):
        LinearWarmupLinearDecay(**kwargs)
