"""Activation functions by BertConfig.hidden_act name."""

import math

import keras
from keras import ops

# 1 / sqrt(2), the constant the remapper's exact-GELU pattern checks for.
_SQRT_HALF = 1.0 / math.sqrt(2.0)


@keras.saving.register_keras_serializable(package="keras_bert")
def gelu_approx(x):
    """GELU with the tanh approximation, as in Google's original BERT."""
    return keras.activations.gelu(x, approximate=True)


@keras.saving.register_keras_serializable(package="keras_bert")
def gelu(x):
    """Exact GELU, x * Phi(x) with erf, as in Hugging Face BERT ("gelu").

    Written as ((erf(x / sqrt(2)) + 1) * 0.5) * x, op for op the exact-GELU
    pattern that TensorFlow's oneDNN Grappler remapper fuses with a preceding
    MatMul + BiasAdd (one kernel instead of six ops); Keras' own exact GELU
    uses erfc, which nothing fuses and which is slower than erf on CPU.
    """
    return ops.multiply(
        ops.multiply(ops.add(ops.erf(ops.multiply(x, _SQRT_HALF)), 1.0), 0.5), x
    )


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
