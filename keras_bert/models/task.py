"""BertTask: the base of every model that puts a head on a `BertEncoder`."""

import os
import warnings

import keras

from keras_bert import sources
from keras_bert.models import model_dir as model_dir_lib
from keras_bert.models.keras_file import AtomicKerasSave
from keras_bert.models.lora import LoraModel, save_adapters_beside
from keras_bert.models.pipeline import TextPipeline
from keras_bert.models.replica_jit import ReplicaJitCompile
from keras_bert.models.task_compile import DefaultCompile


class BertTask(LoraModel, DefaultCompile, TextPipeline, AtomicKerasSave, ReplicaJitCompile,
               keras.Model):
    """A functional model made of `encoder` plus a task head, optionally with
    a `BertPreprocessor`: the model's one text path.

    Subclasses build their graph in `__init__`, keep the encoder as
    `self.encoder`, pass `preprocessor` and other Keras arguments through
    `**kwargs`, and list their own constructor arguments in `task_config()`.

    The preprocessor turns raw strings into the integer input dict for every
    Keras entry point (`TextPipeline.preprocess_samples`), for `save_pretrained`
    and for every export; changing its settings, or attaching another one,
    changes all of them alike. Without one the model takes the integer dict
    (token_ids, segment_ids, padding_mask), out-of-range ids refused.

    Compiled at construction with the task's defaults (`DefaultCompile`), as
    keras-hub's tasks are; `compile=False` leaves it uncompiled. `save` writes
    atomically (`AtomicKerasSave`); `compile(jit_compile=True)` under a
    multi-device strategy compiles each replica's step (`ReplicaJitCompile`);
    `enable_lora(rank)` adapts the attention projections (`LoraModel`).
    """

    #: The task's name in task.json and the registry; each task model class sets its own.
    task_name = None
    #: The `BertServingModule` subclass of this task's exports and of `predict`
    #: on strings; the task model's own folder sets it (None: the base module).
    serving_module_class = None
    #: False for heads that read sequence_output only (taggers, span QA).
    uses_pooler = True

    def __new__(cls, *args, **kwargs):
        # Before the subclass' own signature says "missing argument 'encoder'".
        if "backbone" in kwargs:
            raise ValueError(f"{cls.__name__} takes encoder=, keras_bert's name for keras-hub's "
                             f"backbone=: {cls.__name__}(encoder=..., ...).")
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, *args, preprocessor=None, compile=True, **kwargs):
        from keras_bert.models.encoder import check_kwargs

        check_kwargs(type(self).__name__, {k: v for k, v in kwargs.items()
                                           if k not in ("inputs", "outputs")})
        super().__init__(*args, **kwargs)
        # A functional model keeps float32: report the policy it runs (as BertEncoder does).
        encoder = getattr(self, "encoder", None)
        if encoder is not None and self.dtype_policy.name != encoder.dtype_policy.name:
            self.dtype_policy = encoder.dtype_policy
        self.preprocessor = preprocessor
        # A .keras load then applies the saved compile config (`compile_from_config`).
        if compile and self._has_default_recipe():
            self.compile()

    @property
    def backbone(self):
        """The encoder, under the name keras-hub users know (`task.backbone`)."""
        return self.encoder

    def summary(self, *args, **kwargs):
        """Keras' summary, then a line on the preprocessor (the model's text path)."""
        print_fn = kwargs.get("print_fn") or print
        super().summary(*args, **kwargs)
        preprocessor = self.preprocessor
        if preprocessor is None:
            print_fn("Preprocessor: none (the model takes the integer input dict)")
        else:
            settings = ", ".join(f"{k}={v!r}" for k, v in preprocessor.saved_settings().items())
            print_fn(f"Preprocessor: {type(preprocessor).__name__} "
                     f"({preprocessor.tokenizer.vocab_size} tokens; {settings})")

    def serving_module(self):
        """The serving module of this model (`serving_module_class`: what an export
        saves, without XLA), built once per preprocessor setting and kept on the model.
        The `predict` of heads that decode text runs its functions (one implementation
        with the export); it reads the model's variables, so training shows.
        """
        preprocessor = self._require_preprocessor()
        key = (preprocessor.settings_key, repr(getattr(self, "windows", None)))
        cached = self.__dict__.get("_serving_module_cache")
        if cached is None or cached[0] != key:
            module_cls = self.serving_module_class
            options = module_cls.options_from_task_info(getattr(self, "task_info", None) or {})
            cached = (key, module_cls(model=self, preprocessor=preprocessor, **options))
            # object.__setattr__: Keras must not track the tf.Module as a layer.
            object.__setattr__(self, "_serving_module_cache", cached)
        return cached[1]

    @property
    def trainable_weights(self):
        """The model's trainable weights, less the pooler's when the head does not
        read it (no gradient: Keras would warn "Gradients do not exist"); they are
        still saved and loaded."""
        return self._without_unused_pooler(super().trainable_weights)

    @property
    def trainable_variables(self):
        return self._without_unused_pooler(super().trainable_variables)

    def _without_unused_pooler(self, weights):
        if self.uses_pooler or self.encoder.pooler is None:
            return weights
        pooler = {id(w) for w in self.encoder.pooler.weights}
        return [w for w in weights if id(w) not in pooler]

    def task_config(self):
        """The constructor arguments other than `encoder` (JSON-able)."""
        return {}

    def get_config(self):
        config = {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            **self.task_config(),
        }
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("encoder", "preprocessor"):
            if isinstance(config.get(key), dict):
                config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)

    # === Model directories ===

    def save_pretrained(self, model_dir, vocab_file=None, task_info=None):
        """Writes the model directory: config.json, task.json, weights, vocab.txt.

        Args:
            model_dir: str, directory to (re)write atomically.
            vocab_file: str, vocab.txt to copy in; defaults to the one the
                model was loaded with, else the preprocessor's vocabulary.
            task_info: dict of extra facts for task.json, e.g.
                {"eval_metrics": ...}, over the preprocessor's text settings.
        """
        info = {}
        if self.preprocessor is not None:
            info = self.preprocessor.saved_settings()
        info.update(task_info or {})
        model_dir_lib.save_model_dir(self, model_dir, vocab_file=vocab_file, task_info=info)
        save_adapters_beside(self, model_dir)

    @classmethod
    def from_pretrained(cls, model_dir, dtype=None, max_seq_length=None, lowercase=None,
                        new_head=False, preprocessor=None, rename_labels=False, **task_kwargs):
        """Loads a model directory as this task, compiled, with a preprocessor
        when it has a vocab.txt (then `fit`/`evaluate`/`predict` take strings).

        A directory saved from this same task keeps its trained head, with
        `task_kwargs` that change no weight applied (values compared as JSON).
        One that changes a weight's shape (another `num_classes`) or the
        `label_names` raises ValueError unless `new_head` (or `rename_labels`)
        says so. Any other directory (an encoder, a pretrainer, another task)
        gives its encoder weights and a fresh head built from `task_kwargs`.

        Args:
            model_dir: str, the model directory, or any source
                `keras_bert.sources.resolve_source` takes ("bert-base-uncased").
            dtype: None or a Keras dtype policy name ("mixed_bfloat16").
            max_seq_length: int, the longest packed text of the attached
                preprocessor; default task.json's, else the model's
                max_position_embeddings (at most 512).
            lowercase: bool; default task.json's, else guessed from vocab.txt
                (with a warning).
            new_head: False (default): keep a saved head of this task; True: a
                fresh head from `task_kwargs` alone; "auto": keep the saved head
                when its shapes allow, else a fresh one, with a warning.
            preprocessor: a `BertPreprocessor` to carry instead of the one the
                directory describes (its own `max_seq_length` and `lowercase`).
            rename_labels: True: the trained head's outputs, in order, take
                the given `label_names` (a rename, not a new head).
            **task_kwargs: the head's arguments (num_classes, label_names, ...).

        Example:
        >>> clf = BertClassifier.from_pretrained("models/minilm", num_classes=3)
        >>> clf.predict(["what a day"]).shape
        (1, 3)
        """
        from keras_bert.models.encoder import BertEncoder, encoder_of

        model_dir = sources.resolve_source(model_dir)
        if new_head not in (False, True, "auto"):
            raise ValueError(
                f"Expected new_head to be False, True or 'auto'. Received: new_head={new_head!r}"
            )
        encoder_kwargs = {} if dtype is None else {"dtype": dtype}
        model = model_dir_lib.load_model_dir(model_dir, BertEncoder, **encoder_kwargs)
        info = model.task_info or {}
        loaded, vocab_file = model, model.vocab_file
        if isinstance(model, cls) and new_head is not True:
            model = _apply_task_kwargs(model, cls, task_kwargs, model_dir, new_head == "auto",
                                       rename_labels)
        else:
            try:
                model = cls(encoder=encoder_of(model), **task_kwargs)
            except TypeError as error:
                # E.g. a classifier's directory loaded as a tagger without num_classes.
                saved = type(loaded).__name__ if loaded is not encoder_of(loaded) else None
                holds = (f"{model_dir} holds a {saved}: load it with "
                         f"{saved}.from_pretrained, or" if saved else f"{model_dir} holds an "
                         f"encoder;")
                raise ValueError(
                    f"{holds} give {cls.__name__}'s head arguments to put a new head on its "
                    f"encoder ({error}).") from None
        if model is not loaded:
            # A rebuilt model: task.json's facts about the text and data stay,
            # its task and task_config are the new model's own.
            model.task_info = {k: v for k, v in info.items()
                               if k not in ("task", "task_config")} or None
        model.vocab_file = vocab_file
        if preprocessor is not None:
            model.preprocessor = preprocessor
        elif vocab_file is not None:
            model.preprocessor = model_dir_lib.build_preprocessor(
                vocab_file, model.encoder.max_position_embeddings, info,
                max_seq_length=max_seq_length, lowercase=lowercase,
                where=os.path.join(model_dir, model_dir_lib.TASK_FILE))
        return model

    @classmethod
    def from_preset(cls, model_dir, **kwargs):
        """`from_pretrained`, under the name keras-hub users know."""
        return cls.from_pretrained(model_dir, **kwargs)


def _same_value(a, b):
    """Equal as JSON would store them: a tuple equals the list of its items."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    return a == b


def _apply_task_kwargs(model, cls, task_kwargs, model_dir, replace_if_needed, rename_labels):
    """`model` (loaded whole from `model_dir`) with `task_kwargs` applied, its
    trained head kept; see `BertTask.from_pretrained`."""
    saved = model.task_config()
    unknown = sorted(set(task_kwargs) - set(saved))
    changed = {k: v for k, v in task_kwargs.items() if k in saved and not _same_value(saved[k], v)}
    if not changed and not unknown:
        return model
    old_shapes = [tuple(w.shape) for w in model.weights]
    try:
        rebuilt = cls(encoder=model.encoder, **{**saved, **task_kwargs})
    except ValueError as error:
        # E.g. num_classes=5 against the 3 saved label_names: the arguments
        # alone describe the new head.
        try:
            fresh = cls(encoder=model.encoder, **task_kwargs)
        except (TypeError, ValueError):
            raise error from None
        if [tuple(w.shape) for w in fresh.weights] == old_shapes:
            raise error
        rebuilt = None
    # Other label names on a trained head would name its outputs wrongly.
    relabel = bool(saved.get("label_names")) and "label_names" in changed and not rename_labels
    reshape = rebuilt is None or [tuple(w.shape) for w in rebuilt.weights] != old_shapes
    if not reshape and not relabel:
        # Same variables, same order: only names and non-weight settings changed.
        rebuilt.set_weights(model.get_weights())
        return rebuilt
    what = ", ".join(f"{k}={v!r} (saved: {saved.get(k)!r})" for k, v in changed.items())
    why = "changes its shape" if reshape else "names its outputs otherwise"
    rename = "" if reshape else ", rename_labels=True to give its outputs (in order) new names"
    if not replace_if_needed:
        raise ValueError(
            f"{model_dir} holds a trained {cls.__name__} head, and {what} {why}. Pass "
            f"new_head=True to start from a new, randomly initialized head{rename}, or "
            f"leave the argument out to keep the trained one.")
    warnings.warn(
        f"{model_dir}: the trained {cls.__name__} head is discarded for a new, randomly "
        f"initialized one, because {what} {why}.", stacklevel=3)
    return cls(encoder=model.encoder, **task_kwargs) if reshape else rebuilt  # Fresh heads.

