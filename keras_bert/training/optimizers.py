"""The BERT optimizer: AdamW (or LAMB) with warmup + linear decay, clipping."""

import keras
import tensorflow as tf

from keras_bert.training.schedules import LinearWarmupLinearDecay

OPTIMIZERS = ("adamw", "lamb")

# Regular expressions matched (re.search) against variable names. BERT exempts
# LayerNorm scales/offsets and all biases from weight decay: LayerNormalization
# names them "gamma" and "beta", dense layers "bias", the masked-LM head
# "output_bias". Keras' TensorFlow backend matches the tf.Variable's name
# ("encoder_block_0/attention_layer_norm/gamma:0"), other code the Keras name
# ("gamma"): the patterns accept both.
WEIGHT_DECAY_EXCLUDE = (
    r"(^|/)gamma(:\d+)?$",
    r"(^|/)beta(:\d+)?$",
    r"(^|/|_)bias(:\d+)?$",
)


class _BertOptimizerMixin:
    """Two fixes to Keras 3 optimizers (TensorFlow backend) for BERT.

    1. Dense gradients. Embedding lookups give `tf.IndexedSlices` gradients
       with repeated indices (every token of a batch hits segment row 0).
       Keras applies them with scatter updates slice by slice, so Adam's
       second moment sums the squares of the parts instead of squaring their
       sum, and the step is wrong (2x too large in a 4-duplicate example).
       They are made dense first, as google-research/bert's optimizer does.
    2. Clipping the gradient summed over replicas, not each replica's part.
       Keras clips inside `apply` and all-reduces later, so with N replicas
       each replica's share (about 1/N of the gradient) is clipped on its
       own: "global norm 1.0" would act like N. Here the sum over replicas
       is taken first (the one all-reduce of the step; the later one is
       skipped), then clipped, exactly as on one device. With gradient
       accumulation this runs on update steps, on the accumulated gradient.
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
    """Evaluates `schedule` at the update count under gradient accumulation.

    Keras calls a schedule with its micro-batch counter (`_iterations`), so
    with `gradient_accumulation_steps=k` the rate would advance k times too
    fast. At the update after micro-batches u*k .. u*k + k - 1 this gives
    `schedule(u)`.
    """

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
    """`keras.optimizers.AdamW` with dense gradients, clipped after the all-reduce.

    The Adam update of each variable is TensorFlow's fused `ApplyAdam`
    kernel: one pass over the variable and its two moments, where Keras'
    update runs about ten element-wise ops, each a pass over memory. The
    arithmetic is Keras' (same bias correction, epsilon outside the square
    root); only the rounding differs. AMSGrad keeps Keras' update.
    """

    def update_step(self, gradient, variable, learning_rate):
        if self.amsgrad or isinstance(gradient, tf.IndexedSlices):
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        step = keras.ops.cast(self.iterations + 1, dtype)
        index = self._get_variable_index(variable)

        def constant(value):
            return keras.ops.cast(value, dtype)

        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=self._momentums[index].handle,
            v=self._velocities[index].handle,
            beta1_power=keras.ops.power(constant(self.beta_1), step),
            beta2_power=keras.ops.power(constant(self.beta_2), step),
            lr=constant(learning_rate),
            beta1=constant(self.beta_1),
            beta2=constant(self.beta_2),
            epsilon=constant(self.epsilon),
            grad=keras.ops.cast(gradient, dtype),
        )


@keras.saving.register_keras_serializable(package="keras_bert")
class Lamb(_BertOptimizerMixin, keras.optimizers.Lamb):
    """`keras.optimizers.Lamb` with dense gradients, clipped after the all-reduce."""


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
):
    """The optimizer of BERT pretraining (Devlin et al.; You et al. for LAMB).

    Decoupled weight decay (`weight_decay`, default 0.01) on every variable
    except LayerNorm weights and biases (`WEIGHT_DECAY_EXCLUDE`); gradients
    clipped to a global norm of `global_clipnorm`; the learning rate follows
    `LinearWarmupLinearDecay` over `num_train_steps` optimizer updates.

    Args:
        learning_rate: float, peak learning rate.
        num_train_steps: int, optimizer updates in the whole run (the rate
            reaches 0 there).
        warmup_steps: int, updates of linear warmup.
        optimizer: "adamw" (`AdamW`) or "lamb" (`Lamb`: Adam moments with
            a per-variable trust ratio; its weight decay is Keras' decoupled
            one, applied before the update, not inside the trust ratio as
            in the LAMB paper).
        weight_decay: float, decoupled weight decay rate.
        global_clipnorm: float or None, clip gradients to this global norm.
        gradient_accumulation_steps: int, micro-batches whose mean gradient
            makes one update (1 = none). Keras accumulates in optimizer
            variables; `PerUpdateSchedule` makes the schedule advance once
            per update.
        loss_scale: bool, wrap in `keras.optimizers.LossScaleOptimizer`
            (dynamic loss scaling, needed for mixed_float16).
        beta_1, beta_2, epsilon: Adam/LAMB constants (BERT: 0.9, 0.999, 1e-6).

    Returns:
        A `keras.optimizers.Optimizer`: `AdamW` or `Lamb`, Keras' with two
        fixes (see `_BertOptimizerMixin`), wrapped in a LossScaleOptimizer
        with `loss_scale`.

    Example:
    >>> opt = create_optimizer(1e-4, num_train_steps=10000, warmup_steps=100)
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(
            f"Expected optimizer to be one of {OPTIMIZERS}. Received: optimizer={optimizer!r}"
        )
    if not isinstance(gradient_accumulation_steps, int) or gradient_accumulation_steps < 1:
        raise ValueError(
            "Expected gradient_accumulation_steps to be an int >= 1. Received: "
            f"gradient_accumulation_steps={gradient_accumulation_steps!r}"
        )
    schedule = LinearWarmupLinearDecay(learning_rate, num_train_steps, warmup_steps)
    if gradient_accumulation_steps > 1:
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
    )
    result.exclude_from_weight_decay(var_names=list(WEIGHT_DECAY_EXCLUDE))
    if loss_scale:
        result = keras.optimizers.LossScaleOptimizer(result)
    return result
