"""Every private Keras / TensorFlow name that keras_bert relies on, and why.

Keras and TensorFlow may rename or drop private names in any release, and an
overridden private method that Keras stops calling fails silently (the
override just never runs). So each one is listed here, with where it is used
and why no public API serves, and tests/test_private_hooks.py checks every
entry against the installed versions: an upgrade that breaks one fails a test
that names it. setup.cfg pins keras to the minor range these were checked on
(keras 3.15, TensorFlow 2.21).

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

PRIVATE_HOOKS = (
    PrivateHook(
        owner=_OPTIMIZER,
        name="_clip_gradients",
        used_in="keras_bert/training/optimizers.py",
        why="Overridden to sum the gradient over replicas before clipping its "
        "global norm: Keras clips each replica's part inside apply() and "
        "all-reduces later, so clipnorm would act N times too loose on N "
        "replicas; with gradient accumulation the accumulated gradient exists "
        "only inside apply(). Keras has no public hook between the gradient and "
        "the clipping.",
        called_from="_backend_apply_gradients",
    ),
    PrivateHook(
        owner=_OPTIMIZER,
        name="_all_reduce_sum_gradients",
        used_in="keras_bert/training/optimizers.py",
        why="Overridden to skip Keras' own all-reduce when _clip_gradients has "
        "already summed the gradient (else it would be summed twice).",
        called_from="_backend_update_step",
    ),
    PrivateHook(
        owner=_OPTIMIZER,
        name="_apply_weight_decay",
        used_in="keras_bert/training/optimizers.py",
        why="Overridden to do nothing: Keras decays every variable with one "
        "optimizer-wide rate before the update, while AdamW/Lamb decay each "
        "variable in the public update_step with its own (multiplied, "
        "scheduled) rate, as torch.optim.AdamW does.",
        called_from="_backend_apply_gradients",
    ),
    PrivateHook(
        owner=_OPTIMIZER,
        name="_use_weight_decay",
        used_in="keras_bert/training/optimizers.py",
        why="Read to honour exclude_from_weight_decay exactly as Keras does.",
        called_from=None,
    ),
    PrivateHook(
        owner=_OPTIMIZER,
        name="_var_key",
        used_in="keras_bert/training/optimizers.py",
        why="Keys the per-variable learning-rate multipliers: update_step() "
        "receives the backend variable (the tf.Variable under a Keras "
        "Variable), which has no Keras path; _var_key maps both to the key "
        "Keras uses for slots.",
        called_from=None,
    ),
    PrivateHook(
        owner=_OPTIMIZER,
        name="_get_variable_index",
        used_in="keras_bert/training/optimizers.py",
        why="Finds a variable's Adam slots (m, v) for the fused "
        "ResourceApplyAdam update, as Keras' own Adam.update_step does.",
        called_from=None,
    ),
    PrivateHook(
        owner="keras.optimizers.Adam",
        name="_momentums",
        used_in="keras_bert/training/optimizers.py",
        why="Adam's first-moment slots (set in Adam.build), read by the fused "
        "update as Keras' Adam.update_step reads them.",
        called_from=None,
    ),
    PrivateHook(
        owner="keras.optimizers.Adam",
        name="_velocities",
        used_in="keras_bert/training/optimizers.py",
        why="Adam's second-moment slots (set in Adam.build), read by the fused "
        "update.",
        called_from=None,
    ),
    PrivateHook(
        owner="keras.optimizers.Adam",
        name="_velocity_hats",
        used_in="keras_bert/training/optimizers.py",
        why="AMSGrad's max second-moment slots (set in Adam.build).",
        called_from=None,
    ),
    PrivateHook(
        owner="keras.Model",
        name="_compute_loss",
        used_in="keras_bert/models/replica_jit.py",
        why="Called in the per-replica XLA step to compute the compiled loss "
        "exactly as Keras' own train_step does (loss weights, regularization "
        "losses, loss scaling of the compiled losses). The public compute_loss "
        "is what _compute_loss wraps for the one-replica path; calling "
        "_compute_loss keeps both paths on the same code.",
        called_from=None,
    ),
    PrivateHook(
        owner="keras.src.trainers.trainer.Trainer",
        name="_loss_tracker",
        used_in="keras_bert/models/replica_jit.py",
        why="The Mean metric behind the reported `loss` (set in Trainer.__init__). "
        "The per-replica XLA step updates it, with the loss times the replica "
        "count, as Keras' own train_step does; Keras offers no public way to "
        "feed the reported loss from a custom step.",
        called_from=None,
    ),
    PrivateHook(
        owner="keras.src.saving.saving_lib",
        name="save_weights_only",
        used_in="keras_bert/models/model_dir.py",
        why="save_pretrained writes a compiled model's weights without its "
        "optimizer's slots (objects_to_skip=[optimizer]): Model.save_weights "
        "always adds them (twice the model's size), and deleting them from the "
        "HDF5 file afterwards leaves the file as large. Keras has no public "
        "weights-only-without-optimizer save.",
        called_from=None,
    ),
    PrivateHook(
        owner="keras.src.saving.saving_lib",
        name="load_weights_only",
        used_in="keras_bert/models/model_dir.py",
        why="from_pretrained loads a model directory's weights into a task "
        "compiled at construction without touching its optimizer "
        "(objects_to_skip=[optimizer]): the file holds no optimizer state, and "
        "Model.load_weights refuses an optimizer whose variables it lacks.",
        called_from=None,
    ),
    PrivateHook(
        owner="sys",
        name="_base_executable",
        used_in="keras_bert/export/runtime_check.py",
        why="The interpreter a venv was made from, so the TF 2.20 runtime-check "
        "venv is built from a real interpreter rather than from our .venv's "
        "symlink. CPython sets it in every process; the venv module itself reads it.",
        called_from=None,
    ),
    PrivateHook(
        owner="tensorflow.python.framework.op_def_registry",
        name="get",
        used_in="keras_bert/export/op_set.py",
        why="The op-set guard asks, in a process that imported only tensorflow, "
        "whether each op of an export is registered by TensorFlow itself (so "
        "TF Serving has it) or by tensorflow-text. TensorFlow has no public API "
        "that answers whether an op name is registered in the runtime.",
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
    PrivateHook(
        owner="keras.layers.Layer",
        name="_tracker",
        used_in="keras_bert/layers/lora.py",
        why="LoraDense.enable_lora adds the adapter weights to a built layer: "
        "Keras locks a layer's tracker at build, and add_weight on a locked "
        "layer raises. Unlocking around add_weight is what Keras' own "
        "Dense.enable_lora does; no public API adds state after build.",
        called_from=None,
    ),
    PrivateHook(
        owner="keras.layers.Layer",
        name="_untrack_variable",
        used_in="keras_bert/layers/lora.py",
        why="LoraDense.merge_lora removes the adapters it folded into the "
        "kernel, so the layer's weights are the plain Dense's again (what "
        "set_weights, saving and optimizers see). Keras removes variables only "
        "through this method (its quantize() does the same); no public API.",
        called_from=None,
    ),
    PrivateHook(
        owner="keras.layers.Layer",
        name="_flatten_layers",
        used_in="keras_bert/export/serving_kernels.py",
        why="The export's serving-kernel rewrite finds every encoder block and "
        "exact-GELU Dense layer of a model at any depth (a block inside the "
        "functional encoder inside a task model, a Dense held as an attribute "
        "of a head). Keras has no public recursive walk: Model.layers lists only "
        "the top level of a functional model, and a layer's sub-layers held as "
        "attributes are listed nowhere public.",
        called_from=None,
    ),
)
