"""Activation functions by BertConfig.hidden_act name."""

import keras


@keras.saving.register_keras_serializable(package="keras_bert")
def gelu_approx(x):
    """GELU with the tanh approximation, as in Google's original BERT."""
    return keras.activations.gelu(x, approximate=True)


@keras.saving.register_keras_serializable(package="keras_bert")
def gelu(x):
    """Exact GELU, x * Phi(x) with erf, as in Hugging Face BERT ("gelu").

    Keras' own (erfc-based): the LiteRT converter turns it into its GELU
    builtin. A SavedModel export traces it in the form oneDNN fuses with the
    matmul before it (`keras_bert.export.serving_kernels.serving_gelu`).
    """
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
