"""The BERT optimizer: AdamW (or LAMB) with warmup + linear decay, clipping.

The private Keras hooks used here, and why, are listed in
`keras_bert._private_hooks`.
"""

import math

import keras
import tensorflow as tf

from keras_bert.config import check_count
from keras_bert.training.schedules import LinearWarmupLinearDecay

OPTIMIZERS = ("adamw", "lamb")

# Regular expressions (re.search) for the variables BERT exempts from weight
# decay: LayerNorm's "gamma" and "beta", every "bias" ("output_bias" too). They
# match the tf.Variable's name ("encoder_block_0/attention_layer_norm/gamma:0")
# and the Keras name ("gamma") alike.
WEIGHT_DECAY_EXCLUDE = (
    r"(^|/)gamma(:\d+)?$",
    r"(^|/)beta(:\d+)?$",
    r"(^|/|_)bias(:\d+)?$",
)


class _LearningRateMultipliers:
    """Per-variable learning-rate multipliers and PyTorch's decoupled weight decay.

    `lr_multipliers` ({variable path: float}) scales each named variable's
    rate in its update and in its decay p <- p * (1 - lr * weight_decay),
    applied just before the update as torch does. `weight_decay_exclude`
    (regular expressions) is, unlike `exclude_from_weight_decay()`, config.
    """

    def __init__(self, *args, lr_multipliers=None, weight_decay_exclude=None, **kwargs):
        super().__init__(*args, **kwargs)
        multipliers = dict(lr_multipliers or {})
        for path, value in multipliers.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(
                    f"Expected lr_multipliers values to be floats > 0. Received: {path!r}: "
                    f"{value!r}"
                )
        self.lr_multipliers = multipliers
        self.weight_decay_exclude = tuple(weight_decay_exclude or ())
        if self.weight_decay_exclude:
            self.exclude_from_weight_decay(var_names=list(self.weight_decay_exclude))
        self._multipliers_by_key = {}

    def build(self, variables):
        super().build(variables)
        self._multipliers_by_key = {
            self._var_key(v): float(self.lr_multipliers[v.path])
            for v in variables if v.path in self.lr_multipliers
        }

    def _decay_and_rate(self, variable, learning_rate):
        """Applies this variable's weight decay; returns its learning rate."""
        multiplier = self._multipliers_by_key.get(self._var_key(variable), 1.0)
        learning_rate = keras.ops.cast(learning_rate, variable.dtype)
        if multiplier != 1.0:
            learning_rate = learning_rate * multiplier
        if self.weight_decay and self._use_weight_decay(variable):
            decay = keras.ops.cast(self.weight_decay, variable.dtype)
            self.assign(variable, variable * (1.0 - learning_rate * decay))
        return learning_rate

    def update_step(self, gradient, variable, learning_rate):
        learning_rate = self._decay_and_rate(variable, learning_rate)
        return super().update_step(gradient, variable, learning_rate)

    def _apply_weight_decay(self, variables):
        pass  # Done variable by variable in update_step, with its own rate.

    def get_config(self):
        config = super().get_config()
        config["lr_multipliers"] = dict(self.lr_multipliers)
        config["weight_decay_exclude"] = list(self.weight_decay_exclude)
        return config


class _BertOptimizerMixin(_LearningRateMultipliers):
    """Two fixes to Keras 3 optimizers (TensorFlow backend) for BERT.

    1. Dense gradients: Keras applies an embedding's `tf.IndexedSlices` slice
       by slice, so Adam's second moment would sum the squares of repeated
       indices' parts instead of squaring their sum.
    2. Clipping the gradient summed over replicas (Keras clips each replica's
       part before the all-reduce, so a norm of 1.0 would act like N).
    """

    def apply(self, grads, trainable_variables=None):
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                 for g in grads]
        return super().apply(grads, trainable_variables)

    def _clip_gradients(self, grads):
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            present = [g for g in grads if g is not None]
            reduced = iter(context.all_reduce(tf.distribute.ReduceOp.SUM, present))
            grads = [None if g is None else next(reduced) for g in grads]
        return super()._clip_gradients(grads)

    def _all_reduce_sum_gradients(self, grads_and_vars):
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            return list(grads_and_vars)  # Summed in _clip_gradients.
        return super()._all_reduce_sum_gradients(grads_and_vars)


@keras.saving.register_keras_serializable(package="keras_bert")
class PerUpdateSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Evaluates `schedule` at the update count under gradient accumulation:
    Keras counts micro-batches, so with k of them per update the rate would
    advance k times too fast."""

    def __init__(self, schedule, gradient_accumulation_steps):
        self.schedule = schedule
        self.gradient_accumulation_steps = gradient_accumulation_steps

    def __call__(self, step):
        return self.schedule(keras.ops.floor_divide(step, self.gradient_accumulation_steps))

    def get_config(self):
        return {"schedule": keras.saving.serialize_keras_object(self.schedule),
                "gradient_accumulation_steps": self.gradient_accumulation_steps}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["schedule"] = keras.saving.deserialize_keras_object(config["schedule"])
        return cls(**config)


@keras.saving.register_keras_serializable(package="keras_bert")
class AdamW(_BertOptimizerMixin, keras.optimizers.AdamW):
    """AdamW that steps like `torch.optim.AdamW`, with one fused kernel a variable.

    Each step of a variable p with gradient g, at step t with rate lr
    (scheduled, times its `lr_multipliers` entry) is PyTorch's:

        p <- p * (1 - lr * weight_decay)        (unless excluded)
        m <- beta_1 * m + (1 - beta_1) * g
        v <- beta_2 * v + (1 - beta_2) * g^2
        p <- p - lr * m_hat / (sqrt(v_hat) + epsilon)
             with m_hat = m / (1 - beta_1^t), v_hat = v / (1 - beta_2^t).

    (Keras' Adam adds epsilon to sqrt(v) instead.) The update runs in the
    fused `ApplyAdam` kernel, which adds its eps to sqrt(v): eps = epsilon *
    sqrt(1 - beta_2^t) makes it exactly the update above. AMSGrad (not
    fused) keeps the max of v, as torch does.

    Args:
        epsilon_form: "torch" (the default: epsilon added to sqrt(v_hat)) or
            "keras" (Keras' Adam: epsilon added to sqrt(v)).
        lr_multipliers, weight_decay_exclude: see `_LearningRateMultipliers`.
        **kwargs: `keras.optimizers.AdamW`'s arguments (`learning_rate`,
            `weight_decay`, `beta_1`, `beta_2`, `epsilon` (Keras' default
            1e-7; PyTorch's is 1e-8, `create_optimizer`'s 1e-6), ...).

    Example:
    >>> optimizer = AdamW(learning_rate=5e-5, weight_decay=0.01, epsilon=1e-8)
    """

    EPSILON_FORMS = ("torch", "keras")

    def __init__(self, *args, epsilon_form="torch", **kwargs):
        if epsilon_form not in self.EPSILON_FORMS:
            raise ValueError(
                f"Expected epsilon_form to be one of {self.EPSILON_FORMS}. Received: "
                f"epsilon_form={epsilon_form!r}"
            )
        super().__init__(*args, **kwargs)
        self.epsilon_form = epsilon_form

    def update_step(self, gradient, variable, learning_rate):
        learning_rate = self._decay_and_rate(variable, learning_rate)
        dtype = variable.dtype
        gradient = keras.ops.cast(tf.convert_to_tensor(gradient), dtype)
        step = keras.ops.cast(self.iterations + 1, dtype)
        beta_1 = keras.ops.cast(self.beta_1, dtype)
        beta_2 = keras.ops.cast(self.beta_2, dtype)
        beta_1_power = keras.ops.power(beta_1, step)
        beta_2_power = keras.ops.power(beta_2, step)
        epsilon = keras.ops.cast(self.epsilon, dtype)
        if self.epsilon_form == "torch":
            epsilon = epsilon * keras.ops.sqrt(1.0 - beta_2_power)
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        if not self.amsgrad:
            tf.raw_ops.ResourceApplyAdam(
                var=variable.handle, m=m.handle, v=v.handle,
                beta1_power=beta_1_power, beta2_power=beta_2_power, lr=learning_rate,
                beta1=beta_1, beta2=beta_2, epsilon=epsilon, grad=gradient,
            )
            return
        # Keras' AMSGrad update, with the epsilon of `epsilon_form`.
        alpha = learning_rate * keras.ops.sqrt(1.0 - beta_2_power) / (1.0 - beta_1_power)
        self.assign_add(m, (gradient - m) * (1.0 - beta_1))
        self.assign_add(v, (keras.ops.square(gradient) - v) * (1.0 - beta_2))
        v_hat = self._velocity_hats[index]
        self.assign(v_hat, keras.ops.maximum(v_hat, v))
        self.assign_sub(variable, m * alpha / (keras.ops.sqrt(v_hat) + epsilon))

    def get_config(self):
        config = super().get_config()
        config["epsilon_form"] = self.epsilon_form
        return config


@keras.saving.register_keras_serializable(package="keras_bert")
class Lamb(_BertOptimizerMixin, keras.optimizers.Lamb):
    """`keras.optimizers.Lamb` with dense gradients, clipped after the all-reduce.

    Keras' LAMB update is kept (it adds epsilon to sqrt(v_hat), as the paper
    does); weight decay is PyTorch's decoupled one, applied before the update,
    not inside the trust ratio as in the paper.
    """


# Above this peak learning rate AdamW and LAMB diverge on any BERT (their
# published rates are 1e-5..1e-2); a larger value is a typo (5e5 for 5e-5).
MAX_LEARNING_RATE = 1.0


def check_optimizer_settings(weight_decay, global_clipnorm, learning_rate=None):
    """Raises ValueError for a negative (or non-finite) weight decay or clipping
    norm, or a learning rate not in (0, 1] (Keras takes them all without a
    word). `global_clipnorm` 0 or None: no clipping; `learning_rate` None is
    not checked."""
    if learning_rate is not None and (
            isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float))
            or not math.isfinite(learning_rate)
            or not 0 < learning_rate <= MAX_LEARNING_RATE):
        raise ValueError(
            f"Expected learning_rate in (0, {MAX_LEARNING_RATE:g}] (BERT uses 1e-5..1e-3). "
            f"Received: learning_rate={learning_rate!r}. Set --learning-rate.")
    for name, value, allow_none in (("weight_decay", weight_decay, False),
                                    ("global_clipnorm", global_clipnorm, True)):
        if value is None and allow_none:
            continue
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value) or value < 0):
            shown = int(value) if isinstance(value, float) and value.is_integer() else value
            off = " (0 or None: no clipping)" if allow_none else ""
            raise ValueError(f"Expected {name} >= 0{off}. Received: {name}={shown!r}")


def create_optimizer(
    learning_rate,
    num_train_steps,
    warmup_steps=0,
    optimizer="adamw",
    weight_decay=0.01,
    global_clipnorm=1.0,
    gradient_accumulation_steps=1,
    loss_scale=False,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-6,
    lr_multipliers=None,
):
    """The optimizer of BERT pretraining (Devlin et al.; You et al. for LAMB).

    Decoupled weight decay except on `WEIGHT_DECAY_EXCLUDE`; the learning rate
    follows `LinearWarmupLinearDecay` over `num_train_steps` updates.

    Args:
        learning_rate: float, peak learning rate.
        num_train_steps: int, optimizer updates in the whole run (the rate
            reaches 0 there); None for a constant `learning_rate` (no
            warmup, no decay).
        warmup_steps: int, updates of linear warmup.
        optimizer: "adamw" (`AdamW`) or "lamb" (`Lamb`).
        weight_decay: float, decoupled weight decay rate.
        global_clipnorm: float or None, clip gradients to this global norm.
        gradient_accumulation_steps: int, micro-batches whose mean gradient
            makes one update (1 = none).
        loss_scale: bool, wrap in `keras.optimizers.LossScaleOptimizer`
            (needed for mixed_float16).
        beta_1, beta_2: Adam/LAMB moment decay rates (BERT's 0.9, 0.999).
        epsilon: float, added to sqrt(v_hat); 1e-6 is BERT's, 1e-8 PyTorch's.
        lr_multipliers: dict {variable path: float} or None, per-variable
            learning-rate factors (`layerwise_lr_multipliers`).

    Returns:
        `AdamW` or `Lamb`, in a LossScaleOptimizer with `loss_scale`.

    Example:
    >>> opt = create_optimizer(1e-4, num_train_steps=10000, warmup_steps=100)
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(
            f"Expected optimizer to be one of {OPTIMIZERS}. Received: optimizer={optimizer!r}"
        )
    check_optimizer_settings(weight_decay, global_clipnorm,
                             learning_rate if isinstance(learning_rate, (int, float)) else None)
    check_count("gradient_accumulation_steps", gradient_accumulation_steps)
    if num_train_steps is None:
        if warmup_steps:
            raise ValueError(
                "warmup_steps needs num_train_steps (the schedule's length). Received: "
                f"warmup_steps={warmup_steps!r}, num_train_steps=None"
            )
        schedule = float(learning_rate)
    else:
        schedule = LinearWarmupLinearDecay(learning_rate, num_train_steps, warmup_steps)
    if gradient_accumulation_steps > 1 and num_train_steps is not None:
        schedule = PerUpdateSchedule(schedule, gradient_accumulation_steps)
    cls = AdamW if optimizer == "adamw" else Lamb
    result = cls(
        learning_rate=schedule,
        weight_decay=weight_decay,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        global_clipnorm=global_clipnorm,
        gradient_accumulation_steps=(
            gradient_accumulation_steps if gradient_accumulation_steps > 1 else None
        ),
        lr_multipliers=lr_multipliers,
        weight_decay_exclude=WEIGHT_DECAY_EXCLUDE,
    )
    if loss_scale:
        result = keras.optimizers.LossScaleOptimizer(result)
    return result
