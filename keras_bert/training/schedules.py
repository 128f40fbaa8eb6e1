"""Learning-rate schedules."""

import keras
from keras import ops

from keras_bert.config import check_count


@keras.saving.register_keras_serializable(package="keras_bert")
class LinearWarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup to `learning_rate`, then linear decay to 0.

    lr(step) = learning_rate * (step + 1) / warmup_steps      for step < warmup_steps
             = learning_rate * (decay_steps - step)
                             / (decay_steps - warmup_steps)    up to decay_steps
             = 0                                               after

    Continuous at the peak, as Hugging Face's `get_linear_schedule_with_warmup`;
    the warmup counts from step + 1 so that the first update moves the weights.

    Args:
        learning_rate: float, the peak rate.
        decay_steps: int, the step at which the rate reaches 0 (the number of
            training steps).
        warmup_steps: int, steps of linear warmup (0 for none).

    Example:
    >>> schedule = LinearWarmupLinearDecay(1e-4, decay_steps=1000, warmup_steps=100)
    >>> float(schedule(0)), float(schedule(49)), float(schedule(100)), float(schedule(550))
    (1e-06, 5e-05, 0.0001, 5e-05)
    """

    def __init__(self, learning_rate, decay_steps, warmup_steps=0):
        if not learning_rate > 0:
            raise ValueError(
                f"Expected learning_rate > 0. Received: learning_rate={learning_rate!r}"
            )
        check_count("decay_steps", decay_steps)
        if not isinstance(warmup_steps, int) or not 0 <= warmup_steps < decay_steps:
            raise ValueError(
                "Expected warmup_steps to be an int in [0, decay_steps). Received: "
                f"warmup_steps={warmup_steps!r}, decay_steps={decay_steps}"
            )
        self.learning_rate = float(learning_rate)
        self.decay_steps = decay_steps
        self.warmup_steps = warmup_steps

    def __call__(self, step):
        step = ops.cast(step, "float32")
        peak = ops.cast(self.learning_rate, "float32")
        warmup = ops.cast(max(self.warmup_steps, 1), "float32")
        decay = ops.cast(self.decay_steps - self.warmup_steps, "float32")
        warming = peak * (step + 1.0) / warmup
        decaying = peak * ops.maximum(
            (ops.cast(self.decay_steps, "float32") - step) / decay, 0.0
        )
        return ops.where(step < self.warmup_steps, warming, decaying)

    def get_config(self):
        return {
            "learning_rate": self.learning_rate,
            "decay_steps": self.decay_steps,
            "warmup_steps": self.warmup_steps,
        }
