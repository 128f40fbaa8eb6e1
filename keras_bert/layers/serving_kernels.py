"""serving_kernels(): graphs traced inside it take CPU-serving forms (SavedModel exports)."""

import contextlib
import threading

_state = threading.local()


@contextlib.contextmanager
def serving_kernels(enabled=True):
    """Layers traced for inference inside this context take CPU-serving forms.

    Some of TensorFlow's CPU kernels win only at some sizes: oneDNN's batch
    matmul and softmax (what `tf.matmul` and `tf.nn.softmax` become on x86)
    are 2.5x faster than Eigen's on a request of 64 texts, and 1.3x slower on
    one short text, where their fixed cost dominates. Inside this context the
    encoder block branches on the attention size (`tf.cond`), and the exact
    GELU is written as the pattern oneDNN fuses with its matmul. A SavedModel
    export (`keras_bert.export`, not XLA, not LiteRT) traces the model inside
    it; training and every other trace keep one kernel and no branch.

    Args:
        enabled: bool, whether layers traced inside may branch.

    Example:
    >>> with serving_kernels():
    ...     serving_kernels_enabled()
    True
    """
    previous = serving_kernels_enabled()
    _state.enabled = bool(enabled)
    try:
        yield
    finally:
        _state.enabled = previous


def serving_kernels_enabled():
    """Whether the current trace is inside `serving_kernels()` (see there)."""
    return getattr(_state, "enabled", False)
