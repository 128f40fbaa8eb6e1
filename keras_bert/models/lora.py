"""LoRA on a BertEncoder: low-rank adapters on the attention projections, the rest frozen.

`LoraModel` is a mixin of `BertEncoder` and `BertTask` (whose head stays
trainable). Exports run a merged copy (`merged_copy`), and every Keras save of
the model writes merged weights.
"""

import hashlib
import io
import json
import os
import warnings

import keras
import numpy as np

from keras_bert import storage
from keras_bert.files import write_bytes_atomic
from keras_bert.layers.lora import LoraDense, check_lora_settings
from keras_bert.layers.transformer_encoder_block import LORA_TARGETS
from keras_bert.models.model_dir import LORA_FILE, h5_shapes

#: The rate a task's default optimizer trains adapters at (5e-5 barely moves them: docs/lora.md).
LORA_LEARNING_RATE = 3e-3

_FORMAT = "keras_bert.lora"
_HEAD = "head"
_VERSION = 2  # 2: the base model's identity and the head's label names.


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

    def compile(self, *args, **kwargs):
        """`keras.Model.compile`; with adapters, the task's default optimizer at LoRA's rate."""
        super().compile(*args, **kwargs)
        _follow_default_rate(self)

    @property
    def lora_enabled(self):
        """True when the encoder carries LoRA adapters."""
        return lora_settings(self) is not None

    def enable_lora(self, rank, alpha=None, targets=("query", "value")):
        """Adds LoRA adapters to the encoder's attention projections and freezes
        every other encoder weight (a task's head stays trainable).

        Each targeted projection of every block gets A [hidden, rank] and
        B [rank, hidden] (zeros: outputs unchanged until trained); its output
        gains (alpha / rank) * x A B. A compiled model is recompiled with a
        fresh optimizer of the same configuration.

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
        # Unfrozen first: a frozen layer would hide its adapters.
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
        """Writes the adapters alone (and their rank, alpha, targets) to `path`, an h5
        file ("*.lora.h5" by keras-hub's habit); a task's file also holds its head,
        which trains with the adapters.
        """
        settings = lora_settings(self)
        if settings is None:
            raise ValueError("This model has no LoRA adapters to save: call "
                             "enable_lora(rank) first.")
        import h5py

        buffer = io.BytesIO()
        with h5py.File(buffer, "w") as f:
            f.attrs["format"] = _FORMAT
            f.attrs["version"] = _VERSION
            f.attrs["settings"] = json.dumps(settings)
            # What the adapters fit: the base encoder (its config and weights),
            # the same weights with the adapters merged in (a second
            # application is refused), the head's label names.
            f.attrs["base_config"] = json.dumps(_base_config(self))
            f.attrs["base_sha256"] = _weights_sha256(self)
            f.attrs["merged_sha256"] = _weights_sha256(self, merged=True)
            f.attrs["label_names"] = json.dumps(getattr(self, "label_names", None))
            for block in _encoder(self).encoder_blocks:
                for part, (a, b) in block.qkv_dense.lora_weights().items():
                    f[f"{block.name}/{part}/A"] = a
                    f[f"{block.name}/{part}/B"] = b
            for variable in _head_weights(self):  # Variable paths are unique.
                f[f"{_HEAD}/{variable.path}"] = keras.ops.convert_to_numpy(variable)
        write_bytes_atomic(os.fspath(path), buffer.getvalue())
        return path

    def load_lora_weights(self, path):
        """Reads adapters written by `save_lora_weights` into this model.

        A model without LoRA gets it enabled with the file's rank, alpha and
        targets; one with LoRA must have the same ones. A task takes its head
        from the file too, if it has one. A ValueError naming the file refuses,
        before anything changes, another encoder config or base weights, weights
        that already hold these adapters merged, a head of other label names,
        and NaN or inf values.
        """
        import h5py

        path = os.fspath(path)
        if not storage.exists(path):
            raise FileNotFoundError(f"No LoRA weights file at {path}.")
        data = storage.read_bytes(path)
        try:
            h5 = h5py.File(io.BytesIO(data), "r")
            names = h5_shapes(h5, _encoder(self).get_bert_config(), path)
        except OSError as error:
            raise ValueError(f"{path} is not an h5 file of LoRA weights ({error}).") from None
        with h5:
            if h5.attrs.get("format") != _FORMAT:
                raise ValueError(f"{path} is not a keras_bert LoRA weights file (written by "
                                 f"save_lora_weights).")
            _check_fits(self, h5, path)
            arrays = {name: h5[name][()] for name in names}
            saved = json.loads(h5.attrs["settings"])
        bad = [name for name, value in arrays.items() if not np.isfinite(value).all()]
        if bad:
            raise ValueError(f"{path}: {bad[0]} holds NaN or infinite values: the adapters "
                             f"are damaged (a diverged run?). Save them again from a good "
                             f"model, or train anew.")
        settings = lora_settings(self)
        if settings is None:
            self.enable_lora(saved["rank"], alpha=saved["alpha"], targets=tuple(saved["targets"]))
        else:
            for key in ("rank", "alpha", "targets"):
                if settings[key] != saved[key]:
                    raise ValueError(
                        f"{path} holds LoRA adapters with {key}={saved[key]!r}, but this "
                        f"model's have {key}={settings[key]!r}. Call "
                        f"enable_lora({key}={saved[key]!r}, ...) on a model without "
                        f"adapters, or load them onto one without LoRA (it is enabled "
                        f"with the file's settings).")
        for block in _encoder(self).encoder_blocks:
            parts = {key.split("/")[1] for key in arrays if key.startswith(block.name + "/")}
            if not parts:
                raise ValueError(f"{path} has no adapters for {block.name}.")
            weights = {part: (arrays[f"{block.name}/{part}/A"], arrays[f"{block.name}/{part}/B"])
                       for part in parts}
            block.qkv_dense.set_lora_weights(weights, where=f"{path}: {block.name}/")
        _load_head(self, arrays, path)


def _base_config(model):
    """The encoder's BertConfig fields that decide its function (not dropout)."""
    config = _encoder(model).get_bert_config().to_dict()
    return {k: v for k, v in config.items()
            if k not in ("dropout_rate", "attention_dropout_rate", "initializer_range")}


def _weights_sha256(model, merged=False):
    """sha256 of the encoder's weights in order (dtype, shape, bytes), adapters left
    out; `merged`: with the adapters' update folded into the kernels."""
    kernels = {id(layer.kernel): layer for layer in lora_layers(model)} if merged else {}
    adapters = _adapter_ids(model)
    digest = hashlib.sha256()
    for variable in _encoder(model).weights:
        if id(variable) in adapters:
            continue
        layer = kernels.get(id(variable))
        value = np.ascontiguousarray(
            layer.merged_kernel() if layer else keras.ops.convert_to_numpy(variable))
        digest.update(f"{value.dtype.str}|{value.shape}|".encode())
        digest.update(value.tobytes())
    return digest.hexdigest()


def _check_fits(model, h5, path):
    """Refuses adapters of another base encoder, ones already merged into this
    model's weights, and a head trained for other label names."""
    way_out = ("Load them onto the model they were trained from (its base model directory, "
               "not the merged one that save_pretrained wrote beside them).")
    theirs = json.loads(h5.attrs.get("base_config", "null")) or {
        k: int(h5.attrs[k]) for k in ("num_layers", "hidden_size")}  # version 1 files
    ours = _base_config(model)
    changed = [k for k in theirs if theirs[k] != ours.get(k)]
    if changed:
        raise ValueError(
            f"{path} holds adapters for an encoder with "
            f"{', '.join(f'{k}={theirs[k]!r}' for k in changed)}; this model's is "
            f"{', '.join(f'{k}={ours.get(k)!r}' for k in changed)}. {way_out}")
    if "base_sha256" not in h5.attrs:
        warnings.warn(f"{path} was written before adapter files recorded their base "
                      f"weights: whether it fits this model is not checked.", stacklevel=3)
        return
    digest = _weights_sha256(model)
    if digest != h5.attrs["base_sha256"]:
        merged = digest == h5.attrs["merged_sha256"]
        raise ValueError(
            f"{path}: this model's encoder weights already hold these adapters, merged (a "
            f"second application would apply the update twice). Use the model as it is. "
            if merged else
            f"{path} holds adapters trained on other encoder weights than this model's "
            f"(the sha256 of its base weights differs). {way_out}")
    names, label_names = json.loads(h5.attrs["label_names"]), getattr(model, "label_names", None)
    if _HEAD in h5 and names and label_names and list(label_names) != names:
        raise ValueError(
            f"{path} holds a head trained for label_names={names}; this model's are "
            f"{list(label_names)}: its outputs would take the wrong names. Load them onto a "
            f"model built with label_names={names}.")


def _head_weights(model):
    """The task's weights outside its encoder (none for an encoder)."""
    encoder = _encoder(model)
    if encoder is model:
        return []
    inside = {id(v) for v in encoder.weights}
    return [v for v in model.weights if id(v) not in inside]


def _load_head(model, arrays, path):
    """Assigns a task's head from the file's arrays; a file without one (an
    encoder's) leaves the head as it is."""
    head = _head_weights(model)
    saved = sorted(k[len(_HEAD) + 1:] for k in arrays if k.startswith(_HEAD + "/"))
    if not head or not saved:
        return
    values = {}
    for variable in head:
        value = arrays.get(f"{_HEAD}/{variable.path}")
        if value is None:
            raise ValueError(
                f"{path} has no head weight {variable.path!r} (it holds {saved}): it was "
                f"saved from another task.")
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(
                f"{path}: head weight {variable.path!r} has shape {tuple(value.shape)}; this "
                f"model's is {tuple(variable.shape)} (another num_classes?). Load the file "
                f"onto a model with the head it was trained with.")
        values[id(variable)] = value
    for variable in head:
        variable.assign(values[id(variable)])


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
    _follow_default_rate(model, back=True)


def _follow_default_rate(model, back=False):
    """`LORA_LEARNING_RATE` on a model with adapters compiled with its task's default
    optimizer (with `back`, the default's own rate again on one without adapters)."""
    optimizer = getattr(model, "optimizer", None)
    default = getattr(model, "default_optimizer", None)
    if optimizer is None or default is None:
        return
    try:
        default = default()
    except ValueError:  # Not a registered task: no default to compare with.
        return
    ours, theirs = ({k: v for k, v in o.get_config().items() if k != "name"}
                    for o in (optimizer, default))
    rate, full = ours.pop("learning_rate"), theirs.pop("learning_rate")
    if type(optimizer) is type(default) and ours == theirs and not isinstance(rate, dict):
        old, new = (full, LORA_LEARNING_RATE) if model.lora_enabled else (LORA_LEARNING_RATE, full)
        if (model.lora_enabled or back) and abs(float(rate) - old) <= 1e-6 * old:
            optimizer.learning_rate = new


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
