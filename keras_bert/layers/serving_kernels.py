"""serving_kernels(): graphs traced inside it pick CPU kernels by input size at run time."""

import contextlib
import threading

_state = threading.local()


@contextlib.contextmanager
def serving_kernels(enabled=True):
    """Layers traced for inference inside this context choose kernels per call.

    Some of TensorFlow's CPU kernels win only at some sizes: oneDNN's batch
    matmul and softmax (what `tf.matmul` and `tf.nn.softmax` become on x86)
    are 2.5x faster than Eigen's on a request of 64 texts, and 1.3x slower on
    one short text, where their fixed cost dominates. A SavedModel export
    (`keras_bert.export`, not XLA, not LiteRT) traces the model inside this
    context so that its graph branches on the attention size (`tf.cond`);
    training and every other trace keep one kernel and no branch.

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
