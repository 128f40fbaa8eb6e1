"""LoraDense: a fused projection whose named output parts each may carry a LoRA adapter."""

import keras
import numpy as np
from keras import ops

from keras_bert.config import check_count


@keras.saving.register_keras_serializable(package="keras_bert")
class LoraDense(keras.layers.Dense):
    """A Dense layer whose output is `len(parts)` equal, named parts, each of which
    may get its own low-rank adapter (LoRA: Hu et al., 2021).

    Without adapters it is `keras.layers.Dense`. `enable_lora(rank, targets=...)`
    adds, for each target part p, A_p of shape [input_dim, rank] (He-uniform)
    and B_p of shape [rank, units / len(parts)] (zeros, so the output is
    unchanged at first), and freezes the kernel:

        y = x W + b + concat_p(scale * (x A_p) B_p)   (zeros for parts without one)

    with scale = lora_alpha / rank. The update runs on the activations, not
    on W: the frozen kernel then gets no weight gradient, which is what makes
    a LoRA step cheaper than a full one.

    Saving follows Keras' Dense with LoRA: the layer's saved variables are the
    merged kernel W + scale * A B (per part) and the bias, so a saved file is
    the plain layer's; loading one resets every B to zeros (the loaded kernel
    already holds the update). The adapters alone are read and written with
    `lora_weights` / `set_lora_weights`.

    Args:
        units: int, output width; divisible by the number of parts.
        parts: tuple of str, the names of the output's equal parts in order,
            e.g. ("query", "key", "value") for a fused attention projection.
            Default: one part, "output".
        **kwargs: `keras.layers.Dense` arguments. LoRA needs no activation
            (the update is added to the linear output).

    Call arguments:
        inputs: float Tensor of shape [..., input_dim].

    Returns:
        Float Tensor of shape [..., units].

    Example:
    >>> layer = LoraDense(6, parts=("query", "key", "value"))
    >>> layer.build((None, 4))
    >>> layer.enable_lora(2, targets=("query", "value"))
    >>> [w.name for w in layer.trainable_weights]
    ['lora_a_query', 'lora_b_query', 'lora_a_value', 'lora_b_value']
    """

    def __init__(self, units, parts=None, **kwargs):
        super().__init__(units, **kwargs)
        parts = ("output",) if parts is None else tuple(parts)
        if not parts or len(set(parts)) != len(parts) or units % len(parts):
            raise ValueError(
                f"Expected distinct part names that divide units={units} equally. "
                f"Received: parts={parts!r}"
            )
        self.parts = parts
        self.adapter_rank = None
        self.adapter_alpha = None
        # {part: (A, B)} in `parts` order; empty without LoRA.
        self._adapters = {}

    @property
    def lora_targets(self):
        """The parts that carry an adapter, in order (empty without LoRA)."""
        return tuple(self._adapters)

    def enable_lora(self, rank, lora_alpha=None, targets=None, a_initializer="he_uniform",
                    b_initializer="zeros"):
        """Adds an adapter of rank `rank` to each part in `targets` and freezes the kernel.

        Args:
            rank: int >= 1.
            lora_alpha: float > 0, the update is scaled by lora_alpha / rank;
                default `rank` (scale 1, as Keras' Dense).
            targets: parts to adapt (default: all of them).
            a_initializer, b_initializer: initializers of A and B. B must
                start at zero for the output to stay unchanged.
        """
        if not self.built:
            raise ValueError(f"{self.name}: build the layer before enable_lora.")
        if self._adapters:
            raise ValueError(
                f"{self.name}: LoRA is already enabled (rank={self.adapter_rank}, "
                f"targets={self.lora_targets}); it can be enabled once per layer. "
                f"Call merge_lora() first to fold it in and start a new one.")
        check_lora_settings(rank, lora_alpha)
        targets = self.parts if targets is None else tuple(targets)
        unknown = [t for t in targets if t not in self.parts]
        if unknown or not targets:
            raise ValueError(
                f"{self.name}: expected LoRA targets among {self.parts}. "
                f"Received: targets={targets!r}")
        if self.activation is not keras.activations.linear:
            raise ValueError(
                f"{self.name}: LoRA adds its update to the linear output; this layer has "
                f"activation={keras.activations.serialize(self.activation)!r}.")
        if self.quantization_mode is not None:
            raise ValueError(f"{self.name}: LoRA on a quantized layer "
                             f"({self.quantization_mode!r}) is not supported.")
        width = self.units // len(self.parts)
        input_dim = self.kernel.shape[0]
        self._tracker.unlock()
        for part in self.parts:
            if part not in targets:
                continue
            # float32 whatever the policy (as Keras' Dense): a bfloat16 A or B
            # would round away the small early updates.
            a = self.add_weight(name=f"lora_a_{part}", shape=(input_dim, rank),
                                initializer=keras.initializers.get(a_initializer),
                                dtype="float32")
            b = self.add_weight(name=f"lora_b_{part}", shape=(rank, width),
                                initializer=keras.initializers.get(b_initializer),
                                dtype="float32")
            self._adapters[part] = (a, b)
        self._tracker.lock()
        self.kernel.trainable = False
        self.adapter_rank = rank
        self.adapter_alpha = float(rank if lora_alpha is None else lora_alpha)

    @property
    def lora_scale(self):
        return self.adapter_alpha / self.adapter_rank

    def call(self, inputs, training=None):
        outputs = super().call(inputs, training=training)
        if not self._adapters:
            return outputs
        pieces = {part: ops.matmul(ops.matmul(inputs, a), b) * self.lora_scale
                  for part, (a, b) in self._adapters.items()}  # [..., width] each
        zeros = ops.zeros_like(next(iter(pieces.values())))
        return outputs + ops.concatenate(
            [pieces.get(part, zeros) for part in self.parts], axis=-1)  # [..., units]

    def lora_delta(self):
        """The kernel update, float32 numpy [input_dim, units] (zeros where no adapter)."""
        width = self.units // len(self.parts)
        delta = np.zeros(self.kernel.shape, np.float32)
        for index, part in enumerate(self.parts):
            if part in self._adapters:
                a, b = (np.asarray(ops.convert_to_numpy(v), np.float32)
                        for v in self._adapters[part])
                delta[:, index * width:(index + 1) * width] = self.lora_scale * (a @ b)
        return delta

    def merged_kernel(self):
        """W + the adapters' update, numpy in the kernel's dtype."""
        kernel = ops.convert_to_numpy(self.kernel)
        if not self._adapters:
            return kernel
        return (kernel.astype(np.float32) + self.lora_delta()).astype(kernel.dtype)

    def merge_lora(self):
        """Folds the adapters into the kernel and removes them (the layer is a plain
        Dense again, its kernel trainable)."""
        if not self._adapters:
            return
        self.kernel.assign(self.merged_kernel())
        for a, b in self._adapters.values():
            self._untrack_variable(a)
            self._untrack_variable(b)
        self._adapters = {}
        self.adapter_rank = self.adapter_alpha = None
        self.kernel.trainable = True

    def lora_weights(self):
        """{part: (A, B)} numpy arrays of the adapters."""
        return {part: tuple(ops.convert_to_numpy(v) for v in pair)
                for part, pair in self._adapters.items()}

    def set_lora_weights(self, weights, where=""):
        """Assigns {part: (A, B)} arrays; the parts and shapes must be this layer's."""
        if set(weights) != set(self._adapters):
            raise ValueError(
                f"{where}{self.name}: the adapters are for parts {sorted(weights)}, but this "
                f"layer's LoRA targets are {sorted(self._adapters)}.")
        for part, arrays in weights.items():
            for name, variable, value in zip(("A", "B"), self._adapters[part], arrays):
                if tuple(value.shape) != tuple(variable.shape):
                    raise ValueError(
                        f"{where}{self.name}: adapter {name} of {part!r} has shape "
                        f"{tuple(value.shape)}; this layer's is {tuple(variable.shape)}.")
        for part, arrays in weights.items():
            for variable, value in zip(self._adapters[part], arrays):
                variable.assign(value)

    def save_own_variables(self, store):
        if not self._adapters:
            return super().save_own_variables(store)
        store["0"] = self.merged_kernel()
        if self.bias is not None:
            store["1"] = ops.convert_to_numpy(self.bias)

    def load_own_variables(self, store):
        if not self._adapters:
            return super().load_own_variables(store)
        expected = 2 if self.bias is not None else 1
        if len(store.keys()) != expected:
            raise ValueError(
                f"Layer {self.name!r} expected {expected} variables (kernel, bias), but "
                f"received {len(store.keys())}.")
        self.kernel.assign(store["0"])
        if self.bias is not None:
            self.bias.assign(store["1"])
        # The loaded kernel holds any earlier update: start the adapters afresh.
        for _, b in self._adapters.values():
            b.assign(np.zeros(b.shape, np.float32))

    def get_config(self):
        config = super().get_config()
        config.update(parts=list(self.parts))
        return config


def check_lora_settings(rank, alpha):
    """Raises ValueError for a rank that is not an int >= 1 or an alpha that is not > 0."""
    check_count("rank", rank)
    if alpha is not None and (isinstance(alpha, bool) or not isinstance(
            alpha, (int, float, np.integer, np.floating)) or not alpha > 0):
        raise ValueError(f"Expected LoRA alpha > 0 (or None: alpha = rank). "
                         f"Received: alpha={alpha!r}")
