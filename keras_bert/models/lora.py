"""LoRA on a BertEncoder: low-rank adapters on the attention projections, the rest frozen.

`LoraModel` is a mixin of `BertEncoder` and `BertTask` (a task acts on its
encoder; its head stays trainable):

- `enable_lora(rank, alpha=None, targets=("query", "value"))` adds an
  adapter to each targeted projection of every encoder block
  (`keras_bert.layers.LoraDense`: the fused q/k/v projection gets one
  adapter per part) and freezes every other encoder weight;
- `save_lora_weights(path)` / `load_lora_weights(path)` write and read the
  adapters alone (a small h5 file, `LORA_FILE` inside a model directory);
- `merge_lora()` folds them into the kernels; exports do the same on a copy
  (`merged_copy`), and every Keras save of the model writes merged weights.
"""

import io
import json
import os
import warnings

import keras
import tensorflow as tf

from keras_bert.files import write_bytes_atomic
from keras_bert.layers.lora import LoraDense, check_lora_settings
from keras_bert.layers.transformer_encoder_block import LORA_TARGETS
from keras_bert.models.model_dir import LORA_FILE, h5_shapes

_FORMAT = "keras_bert.lora"
_HEAD = "head"
_VERSION = 1


def _encoder(model):
    return getattr(model, "encoder", model)


def lora_layers(model):
    """The `LoraDense` layers of `model`'s encoder blocks, bottom first."""
    return [block.qkv_dense for block in _encoder(model).encoder_blocks
            if isinstance(block.qkv_dense, LoraDense)]


def lora_settings(model):
    """{"rank", "alpha", "targets"} of `model`'s adapters, or None without LoRA."""
    layers = [layer for layer in lora_layers(model) if layer.lora_targets]
    if not layers:
        return None
    first = layers[0]
    return {"rank": first.adapter_rank, "alpha": first.adapter_alpha,
            "targets": list(first.lora_targets)}


def _adapter_ids(model):
    return {id(v) for layer in lora_layers(model) for pair in layer._adapters.values()
            for v in pair}


class LoraModel:
    """Mixin of `BertEncoder` and `BertTask`: LoRA fine-tuning of the encoder."""

    @property
    def lora_enabled(self):
        """True when the encoder carries LoRA adapters."""
        return lora_settings(self) is not None

    def enable_lora(self, rank, alpha=None, targets=("query", "value")):
        """Adds LoRA adapters to the encoder's attention projections and freezes
        every other encoder weight (a task's head stays trainable).

        Each targeted projection of every block gets A [hidden, rank] and
        B [rank, hidden] (B zeros: the outputs are unchanged until training
        moves it); its output gains (alpha / rank) * x A B. Call it before
        training; a compiled model is recompiled with a fresh optimizer of
        the same configuration (its slots were for the old trainable set).

        Args:
            rank: int >= 1, the adapters' rank.
            alpha: float > 0, scales the update by alpha / rank; default
                `rank` (scale 1, as Keras' `enable_lora`).
            targets: projections to adapt, among "query", "key", "value".

        Example:
        >>> classifier.enable_lora(rank=8)
        >>> classifier.fit(texts, labels)
        >>> classifier.save_lora_weights("sentiment.lora.h5")
        """
        check_lora_settings(rank, alpha)
        targets = (targets,) if isinstance(targets, str) else tuple(targets)
        unknown = [t for t in targets if t not in LORA_TARGETS]
        if unknown or not targets or len(set(targets)) != len(targets):
            raise ValueError(
                f"Expected LoRA targets: distinct names among {LORA_TARGETS}. "
                f"Received: targets={targets!r}")
        settings = lora_settings(self)
        if settings is not None:
            raise ValueError(
                f"LoRA is already enabled (rank={settings['rank']}, "
                f"targets={settings['targets']}). Call merge_lora() to fold those adapters "
                f"in before enabling new ones.")
        encoder = _encoder(self)
        # Every encoder layer trainable (undoing earlier freezing: a frozen
        # layer would hide its adapters), then every weight but the adapters
        # frozen, variable by variable.
        _unfreeze(encoder)
        for block in encoder.encoder_blocks:
            block.enable_lora(rank, alpha=alpha, targets=targets)
        adapters = _adapter_ids(self)
        for variable in encoder.weights:
            if id(variable) not in adapters:
                variable.trainable = False
        _reset_training(self)

    def merge_lora(self):
        """Folds the adapters into the kernels (W + (alpha / rank) A B) and
        removes them: the model is a plain one again, every encoder weight
        trainable. Predictions are unchanged (up to float rounding)."""
        if not self.lora_enabled:
            raise ValueError("This model has no LoRA adapters: call enable_lora(rank) first.")
        for layer in lora_layers(self):
            layer.merge_lora()
        _unfreeze(_encoder(self))
        _reset_training(self)

    def save_lora_weights(self, path):
        """Writes the adapters alone (and their rank, alpha, targets) to `path`, an h5 file.

        A task's file also holds its head (the weights outside the encoder),
        which trains with the adapters. keras-hub names such files
        "*.lora.h5"; any name is taken. The file is small: 2 * rank *
        hidden_size floats per target and block, plus the head.
        """
        settings = lora_settings(self)
        if settings is None:
            raise ValueError("This model has no LoRA adapters to save: call "
                             "enable_lora(rank) first.")
        import h5py

        encoder = _encoder(self)
        buffer = io.BytesIO()
        with h5py.File(buffer, "w") as f:
            f.attrs["format"] = _FORMAT
            f.attrs["version"] = _VERSION
            f.attrs["settings"] = json.dumps(settings)
            f.attrs["num_layers"] = len(encoder.encoder_blocks)
            f.attrs["hidden_size"] = encoder.hidden_size
            for block in encoder.encoder_blocks:
                for part, (a, b) in block.qkv_dense.lora_weights().items():
                    f[f"{block.name}/{part}/A"] = a
                    f[f"{block.name}/{part}/B"] = b
            # A task's head trains with the adapters: without it they would
            # be of no use on a fresh model. (Its variable paths are unique.)
            for variable in _head_weights(self):
                f[f"{_HEAD}/{variable.path}"] = keras.ops.convert_to_numpy(variable)
        write_bytes_atomic(os.fspath(path), buffer.getvalue())
        return path

    def load_lora_weights(self, path):
        """Reads adapters written by `save_lora_weights` into this model.

        A model without LoRA gets it enabled with the file's rank, alpha and
        targets; one with LoRA must have the same ones. A task takes its head
        from the file too (when the file has one: an encoder's has none). The encoder must have
        the file's number of blocks and width: any difference raises a
        ValueError that names it. Load them onto the model they were trained
        from (not onto the merged model directory `save_pretrained` wrote
        beside them, which already holds them).
        """
        import h5py

        path = os.fspath(path)
        if not tf.io.gfile.exists(path):
            raise FileNotFoundError(f"No LoRA weights file at {path}.")
        with tf.io.gfile.GFile(path, "rb") as f:
            data = f.read()
        try:
            h5 = h5py.File(io.BytesIO(data), "r")
            h5_shapes(h5, _encoder(self).get_bert_config(), path)
        except OSError as error:
            raise ValueError(f"{path} is not an h5 file of LoRA weights ({error}).") from None
        with h5:
            if h5.attrs.get("format") != _FORMAT:
                raise ValueError(f"{path} is not a keras_bert LoRA weights file (written by "
                                 f"save_lora_weights).")
            saved = json.loads(h5.attrs["settings"])
            encoder = _encoder(self)
            for name, ours in (("num_layers", len(encoder.encoder_blocks)),
                               ("hidden_size", encoder.hidden_size)):
                theirs = int(h5.attrs[name])
                if theirs != ours:
                    raise ValueError(
                        f"{path} holds adapters for an encoder with {name}={theirs}; this "
                        f"model's is {name}={ours}. Load them onto the model they were "
                        f"trained from.")
            settings = lora_settings(self)
            if settings is None:
                self.enable_lora(saved["rank"], alpha=saved["alpha"],
                                 targets=tuple(saved["targets"]))
            else:
                for key in ("rank", "alpha", "targets"):
                    if settings[key] != saved[key]:
                        raise ValueError(
                            f"{path} holds LoRA adapters with {key}={saved[key]!r}, but this "
                            f"model's have {key}={settings[key]!r}. Call "
                            f"enable_lora({key}={saved[key]!r}, ...) on a model without "
                            f"adapters, or load them onto one without LoRA (it is enabled "
                            f"with the file's settings).")
            for block in encoder.encoder_blocks:
                if block.name not in h5:
                    raise ValueError(f"{path} has no adapters for {block.name}.")
                weights = {part: (h5[f"{block.name}/{part}/A"][()],
                                  h5[f"{block.name}/{part}/B"][()])
                           for part in h5[block.name]}
                block.qkv_dense.set_lora_weights(weights, where=f"{path}: {block.name}/")
            _load_head(self, h5, path)


def _head_weights(model):
    """The task's weights outside its encoder (none for an encoder)."""
    encoder = _encoder(model)
    if encoder is model:
        return []
    inside = {id(v) for v in encoder.weights}
    return [v for v in model.weights if id(v) not in inside]


def _load_head(model, h5, path):
    """Assigns a task's head from the file; a file without one (an encoder's)
    leaves the head as it is."""
    head = _head_weights(model)
    if not head or _HEAD not in h5:
        return
    values = {}
    for variable in head:
        key = f"{_HEAD}/{variable.path}"
        if key not in h5:
            raise ValueError(
                f"{path} has no head weight {variable.path!r} (it holds "
                f"{sorted(_h5_names(h5[_HEAD]))}): it was saved from another task.")
        value = h5[key][()]
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(
                f"{path}: head weight {variable.path!r} has shape {tuple(value.shape)}; this "
                f"model's is {tuple(variable.shape)} (another num_classes?). Load the file "
                f"onto a model with the head it was trained with.")
        values[id(variable)] = value
    for variable in head:
        variable.assign(values[id(variable)])


def _h5_names(group):
    names = []
    group.visit(lambda name: names.append(name) if hasattr(group[name], "shape") else None)
    return names


def save_adapters_beside(model, model_dir):
    """`save_pretrained`'s last step: a LoRA model's adapters go to
    MODEL_DIR/`LORA_FILE` (model.weights.h5 already holds them merged)."""
    if lora_settings(model) is not None:
        model.save_lora_weights(os.path.join(os.fspath(model_dir), LORA_FILE))


def _unfreeze(encoder):
    encoder.trainable = True  # every sub-layer's flag, recursively
    for variable in encoder.weights:  # and each variable frozen on its own
        variable.trainable = True


def _reset_training(model):
    """Drops what was traced or built for the old trainable set: Keras' step
    functions, the serving-module cache, a built optimizer (recompiled fresh)."""
    for name in ("train_function", "test_function", "predict_function"):
        if hasattr(model, name):
            setattr(model, name, None)
    if "_serving_module_cache" in vars(model):
        object.__setattr__(model, "_serving_module_cache", None)
    optimizer = getattr(model, "optimizer", None)
    args = getattr(model, "_task_compile_args", None)
    if getattr(model, "compiled", False) and optimizer is not None and optimizer.built:
        if args is None:  # compiled by keras.Model.compile: its arguments are not kept
            warnings.warn(
                "The model was trained before enable_lora/merge_lora: its optimizer holds "
                "slots for the old trainable weights. Call compile() again before fit.",
                stacklevel=3)
            return
        fresh = type(optimizer).from_config(optimizer.get_config())
        model.compile(**{**args, "optimizer": fresh})


def merged_copy(model):
    """A copy of `model` without adapters whose kernels hold their update (what
    an export runs), or `model` itself when it has no LoRA."""
    if lora_settings(model) is None:
        return model
    copy = type(model).from_config(model.get_config())
    adapters = _adapter_ids(model)
    merged = {id(layer.kernel): layer.merged_kernel() for layer in lora_layers(model)}
    values = [merged[id(v)] if id(v) in merged else keras.ops.convert_to_numpy(v)
              for v in model.weights if id(v) not in adapters]
    copy.set_weights(values)
    for name in ("vocab_file", "task_info"):
        if hasattr(model, name):
            setattr(copy, name, getattr(model, name))
    if getattr(model, "preprocessor", None) is not None:
        copy.preprocessor = model.preprocessor
    return copy
