"""Activation functions by BertConfig.hidden_act name."""

import math

import keras
from keras import ops

from keras_bert.layers.serving_kernels import serving_kernels_enabled

# 1 / sqrt(2), the constant the remapper's exact-GELU pattern checks for.
_SQRT_HALF = 1.0 / math.sqrt(2.0)


@keras.saving.register_keras_serializable(package="keras_bert")
def gelu_approx(x):
    """GELU with the tanh approximation, as in Google's original BERT."""
    return keras.activations.gelu(x, approximate=True)


@keras.saving.register_keras_serializable(package="keras_bert")
def gelu(x):
    """Exact GELU, x * Phi(x) with erf, as in Hugging Face BERT ("gelu").

    In a SavedModel export's graph (`serving_kernels`) it is written as
    ((erf(x / sqrt(2)) + 1) * 0.5) * x, op for op the exact-GELU pattern that
    TensorFlow's oneDNN Grappler remapper fuses with the MatMul + BiasAdd
    before it (one kernel instead of seven ops). Elsewhere it is Keras' own
    (erfc-based; the LiteRT converter turns it into its GELU builtin, and
    LiteRT has no Erf builtin).
    """
    if serving_kernels_enabled():
        return ops.multiply(
            ops.multiply(ops.add(ops.erf(ops.multiply(x, _SQRT_HALF)), 1.0), 0.5), x
        )
    return keras.activations.gelu(x, approximate=False)


_ACTIVATIONS = {"gelu": gelu, "gelu_approx": gelu_approx, "relu": keras.activations.relu}


def get_activation(name):
    """Returns the activation function for a `hidden_act` name."""
    if name not in _ACTIVATIONS:
        raise ValueError(
            f"Unknown hidden_act: {name!r}. Expected one of {sorted(_ACTIVATIONS)}."
        )
    return _ACTIVATIONS[name]


def initializer(initializer_range):
    """The truncated-normal initializer BERT uses for every weight matrix."""
    return keras.initializers.TruncatedNormal(stddev=initializer_range)
