"""Every private Keras / TensorFlow name that keras_bert relies on, and why.

Keras and TensorFlow may rename or drop private names in any release, and an
overridden private method that Keras stops calling fails silently (the
override just never runs). So each one is listed here, with where it is used
and why no public API serves, and tests/test_private_hooks.py checks every
entry against the installed versions: an upgrade that breaks one fails a test
that names it. setup.cfg pins keras to the minor range these were checked on
(keras 3.15, TensorFlow 2.21).

Removed, with what replaced them:
- `Layer._convert_input_args = False` and
  `Layer._allow_non_tensor_positional_args = True` (text layers): the first
  only casts floating inputs, which these layers never take; Python strings
  are turned into tensors in a public `__call__` override instead.
- `TensorBoard._global_train_batch` (training/callbacks.py): our TensorBoard
  callback writes `tf.summary` scalars at the global step itself.
- tensorflow_text.tools.wordpiece_vocab.wordpiece_tokenizer_learner_lib
  (text/vocab.py): our own WordPiece learner.

Adding a private hook: add its entry here, with the method of its owner that
must still call it (for overrides), and run tests/test_private_hooks.py.
"""

import collections

PrivateHook = collections.namedtuple(
    "PrivateHook", ["owner", "name", "used_in", "why", "called_from"]
)
PrivateHook.__doc__ = """One private name keras_bert uses.

owner: dotted path of the class or module that holds it.
name: the private attribute.
used_in: keras_bert file(s) that use it.
why: what it is for, and why no public API does it.
called_from: for a method keras_bert overrides, the method of `owner` whose
    source must still call it (else None).
"""

_OPTIMIZER = "keras.optimizers.Optimizer"
_MAY_REMAIN = "May remain; see {} (being reworked on another branch). "

PRIVATE_HOOKS = (
    PrivateHook(
        owner=_OPTIMIZER,
        name="_clip_gradients",
        used_in="keras_bert/training/optimizers.py",
        why=_MAY_REMAIN.format("training/optimizers.py")
        + "Overridden to sum the gradient over replicas before clipping its "
        "global norm: Keras clips each replica's part inside apply() and "
        "all-reduces later, so clipnorm would act N times too loose on N "
        "replicas. Keras has no public hook between the gradient and the "
        "clipping.",
        called_from="_backend_apply_gradients",
    ),
    PrivateHook(
        owner=_OPTIMIZER,
        name="_all_reduce_sum_gradients",
        used_in="keras_bert/training/optimizers.py",
        why=_MAY_REMAIN.format("training/optimizers.py")
        + "Overridden to skip Keras' own all-reduce when _clip_gradients has "
        "already summed the gradient (else it would be summed twice).",
        called_from="_backend_update_step",
    ),
    PrivateHook(
        owner=_OPTIMIZER,
        name="_apply_weight_decay",
        used_in="keras_bert/training/finetuning_controls.py",
        why=_MAY_REMAIN.format("training/finetuning_controls.py")
        + "Overridden so that decoupled weight decay follows the per-variable "
        "learning-rate multipliers (layer-wise decay); Keras applies it with "
        "the global learning rate and has no public per-variable hook.",
        called_from="_backend_apply_gradients",
    ),
    PrivateHook(
        owner=_OPTIMIZER,
        name="_use_weight_decay",
        used_in="keras_bert/training/finetuning_controls.py",
        why=_MAY_REMAIN.format("training/finetuning_controls.py")
        + "Called by that _apply_weight_decay override, to honour "
        "exclude_from_weight_decay exactly as Keras does.",
        called_from=None,
    ),
    PrivateHook(
        owner=_OPTIMIZER,
        name="_var_key",
        used_in="keras_bert/training/finetuning_controls.py",
        why=_MAY_REMAIN.format("training/finetuning_controls.py")
        + "Keys the per-variable multipliers: update_step() receives the "
        "backend variable (the tf.Variable under a Keras Variable), which has "
        "no Keras path; _var_key maps both to the key Keras uses for slots.",
        called_from=None,
    ),
    PrivateHook(
        owner="tensorflow.core.protobuf.saved_model_pb2",
        name="SavedModel",
        used_in="keras_bert/export/export.py",
        why="The SavedModel protocol buffer, parsed from saved_model.pb to "
        "record the signatures as TF Serving reads them (input/output keys, "
        "dtypes, shapes) without loading the model. TensorFlow exports no "
        "tf.* alias for it; the proto is the file format and has been stable "
        "since TF 1.",
        called_from=None,
    ),
)
