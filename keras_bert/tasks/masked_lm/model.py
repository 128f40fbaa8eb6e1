"""BertMaskedLM: the encoder + the masked-LM head, trained and queried on raw text."""

import warnings

import keras
import tensorflow as tf

from keras_bert import sources
from keras_bert.layers import MaskedLMHead, NextSentenceHead
from keras_bert.models import model_dir as model_dir_lib
from keras_bert.models import task_inputs
from keras_bert.models.task import BertTask
from keras_bert.tasks.masked_lm.preprocessor import MASK_SETTINGS_JSON, BertMaskedLMPreprocessor
from keras_bert.tasks.masked_lm.serving import MaskedLMServingModule

#: The task.json name of `BertPretrainer` directories, whose MLM head this task reads.
PRETRAINING_TASK = "pretraining"
#: The encoder hyperparameters that `MaskedLMHead` takes, under the same names.
_HEAD_SETTINGS = ("vocab_size", "hidden_act", "initializer_range", "layer_norm_epsilon")


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMaskedLM(BertTask):
    """Masked-language modelling on raw text: continued (domain-adaptive) pretraining.

    The encoder's sequence output at the masked positions -> `MaskedLMHead`,
    whose output projection is the encoder's token embedding matrix (one
    variable, tied as in `BertPretrainer`). MLM only by default; with
    `next_sentence=True` also BERT's next-sentence head on the pooled
    output, trained on pairs (see below).

    `fit(texts)` and `evaluate(texts)` take texts and no labels: the
    `BertMaskedLMPreprocessor` packs each batch and masks it anew on every
    pass. `predict(texts)` with "[MASK]" written in the texts returns the
    export's `fill_mask` answer (`MaskedLMServingModule`).

    With `next_sentence=True`, `fit((texts_a, texts_b))` takes sentence
    pairs: in each batch half of the second texts, drawn at random, are
    replaced by the second text of another row (label 1, NotNext; else 0,
    IsNext), and the loss is MLM + NSP cross-entropy. `predict` still
    takes single texts with "[MASK]" in them.

    Inputs (the integer dict): token_ids, segment_ids, padding_mask int32
    [B, S] and masked_positions int32 [B, P]. Output: float32 logits
    [B, P, vocab_size]; with `next_sentence`, a dict of `mlm_logits` (those)
    and `nsp_logits` float32 [B, 2].

    Compiled by default: keras_bert's fine-tuning AdamW, sparse
    cross-entropy on the logits averaged over the real predictions (the
    sample weights), and `masked_lm_accuracy` weighted the same way.

    Args:
        encoder: a `BertEncoder`.
        next_sentence: bool, add the next-sentence head (default False: MLM only).
        preprocessor: a `BertMaskedLMPreprocessor`, or a `BertPreprocessor`
            (its tokenizer and settings, with the default mask settings), or None.
        **kwargs: `BertTask` arguments (`compile=False`, `name`).

    Example:
    >>> model = BertMaskedLM.from_pretrained("models/pretrained")
    >>> model.fit(["domain text ...", "more domain text ..."], epochs=3)
    >>> model.predict(["the patient was given [MASK] for the pain"])["tokens"][0, 0]
    """

    predicts_like_export = True  # predict(texts) returns fill_mask's answer dict.
    task_name = "masked_lm"
    serving_module_class = MaskedLMServingModule

    def __init__(self, encoder, next_sentence=False, preprocessor=None, **kwargs):
        if not isinstance(next_sentence, bool):
            raise ValueError(f"Expected next_sentence to be True or False. Received: "
                             f"next_sentence={next_sentence!r}")
        self.next_sentence = next_sentence
        # === Layers ===
        self.encoder = encoder
        # The pretrainer's head, from the encoder's own hyperparameters (BertPretrainer
        # directories load into it).
        self.mlm_head = MaskedLMHead(
            **{name: getattr(encoder, name) for name in _HEAD_SETTINGS},
            embeddings=encoder.embeddings, dtype=encoder.dtype_policy, name="mlm_head")

        # === Functional graph ===
        inputs = dict(encoder.input)
        inputs["masked_positions"] = keras.Input(
            shape=(None,), dtype="int32", name="masked_positions")
        encoded = encoder({k: inputs[k] for k in encoder.input})
        logits = self.mlm_head(encoded["sequence_output"], inputs["masked_positions"])
        if next_sentence:
            self.nsp_head = NextSentenceHead(initializer_range=encoder.initializer_range,
                                             dtype=encoder.dtype_policy, name="nsp_head")
            logits = {"mlm_logits": logits, "nsp_logits": self.nsp_head(encoded["pooled_output"])}
        if preprocessor is not None:
            preprocessor = BertMaskedLMPreprocessor.from_preprocessor(preprocessor)
        super().__init__(inputs=inputs, outputs=logits, preprocessor=preprocessor, **kwargs)

    @property
    def text_columns(self):
        # Pairs train NSP; predict takes single texts either way.
        return (1, 2) if self.next_sentence else (1,)

    @property
    def uses_pooler(self):
        return self.next_sentence  # The MLM head reads sequence_output only.

    def task_config(self):
        return {"next_sentence": self.next_sentence}

    # === Compile defaults ===

    def _has_default_recipe(self):
        return True  # Not fine-tuned through the registry, but compiled by default.

    def default_optimizer(self):
        from keras_bert.training.finetune import FinetuneTask

        return FinetuneTask.default_optimizer()

    def default_loss(self):
        # The mean over real predictions: padding slots have weight 0, and a batch
        # with none (mask_selection_rate=0) has loss 0 (divide_no_nan), not NaN.
        mlm = keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight")
        if not self.next_sentence:
            return mlm
        return {"mlm_logits": mlm,
                "nsp_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}

    def default_metrics(self):
        mlm = [keras.metrics.SparseCategoricalAccuracy(name="masked_lm_accuracy")]
        if not self.next_sentence:
            return mlm
        return {"mlm_logits": mlm,
                "nsp_logits": [keras.metrics.SparseCategoricalAccuracy(name="nsp_accuracy")]}

    # === Text in: masked samples for fit/evaluate, [MASK] in text for the rest ===

    def _masked_lm_preprocessor(self):
        preprocessor = self._require_preprocessor()
        if not isinstance(preprocessor, BertMaskedLMPreprocessor):
            raise ValueError(
                f"BertMaskedLM masks texts with a BertMaskedLMPreprocessor; its preprocessor "
                f"is a {type(preprocessor).__name__}. Set model.preprocessor = "
                f"BertMaskedLMPreprocessor.from_preprocessor(model.preprocessor).")
        return preprocessor

    def _require_labels(self, x, y, method):
        """The labels are made by masking: labels given with texts are refused."""
        if y is not None and not isinstance(x, dict) and task_inputs.holds_strings(x):
            raise ValueError(
                f"{self._what(method)} makes its labels by masking the texts (the original "
                f"ids at the masked positions); call it with texts alone. Received y.")

    def preprocess_samples(self, x, y=None, sample_weight=None):
        """Texts [B] -> (inputs with masked_positions [B, P], masked_ids [B, P],
        masked_weights [B, P]): new masks on every call (see the preprocessor)."""
        if y is not None or sample_weight is not None:
            raise ValueError(
                "BertMaskedLM makes its labels and weights by masking the texts; give a "
                "dataset of texts alone (not (texts, labels)).")
        texts = tuple(x) if isinstance(x, (tuple, list)) else (x,)
        preprocessor = self._masked_lm_preprocessor()
        if not self.next_sentence:
            return preprocessor.mask(self._traced_preprocessor()(texts))
        if len(texts) != 2:
            raise ValueError(
                "BertMaskedLM(next_sentence=True) trains on sentence pairs: pass "
                "(texts_a, texts_b), two batches of strings. Received one batch of texts; "
                "build the model with next_sentence=False to train MLM alone.")
        second, labels = preprocessor.next_sentence_pairs(*texts)
        x, masked_ids, weights = preprocessor.mask(self._traced_preprocessor()((texts[0], second)))
        y = {"mlm_logits": masked_ids, "nsp_logits": labels}
        return x, y, {"mlm_logits": weights, "nsp_logits": tf.ones_like(labels, tf.float32)}

    def _preprocessed_in_memory(self, texts):
        """In-memory texts packed once, up front (the tokenizer's graph stays out of
        the per-epoch pipeline); `_text_dataset` masks each batch. With NSP,
        None: the pairs are drawn per batch, before packing."""
        if self.next_sentence:
            return None
        return {k: v.numpy() for k, v in self._traced_preprocessor()(texts).items()}

    def _text_dataset(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        dataset = super()._text_dataset(x, y, sample_weight, batch_size, shuffle)
        if dataset is None or isinstance(x, tf.data.Dataset) or self.next_sentence:
            return dataset  # Its batches went through `preprocess_samples` whole.
        # Packed batches -> masked samples, drawn anew on every pass (dynamic masking).
        mask = self._masked_lm_preprocessor().mask
        return dataset.map(mask, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    def __call__(self, *args, **kwargs):
        if args and not isinstance(args[0], dict) and task_inputs.holds_strings(args[0]):
            # model(texts): the logits at each "[MASK]" written in them, as predict.
            texts = self._texts(args[0], "__call__")
            inputs = self._masked_lm_preprocessor().fill_mask_inputs(
                self._traced_preprocessor()(texts))
            args = (inputs,) + args[1:]
        return keras.Model.__call__(self, *args, **kwargs)

    def _on_batch_inputs(self, x, y, sample_weight, method):
        texts = None if isinstance(x, dict) else self._texts(x, method)
        if texts is None:
            return self._integer_inputs(x, y, sample_weight, method)
        self._require_labels(x, y, method)
        return self.preprocess_samples(texts, None, sample_weight)

    # === Model directories ===

    def save_pretrained(self, model_dir, vocab_file=None, task_info=None):
        """`BertTask.save_pretrained`, with the preprocessor's mask settings in task.json
        (`from_pretrained` reads them back)."""
        preprocessor = self.preprocessor
        saved = (preprocessor.mask_settings()
                 if isinstance(preprocessor, BertMaskedLMPreprocessor) else {})
        super().save_pretrained(model_dir, vocab_file, {**saved, **(task_info or {})})

    @classmethod
    def from_pretrained(cls, model_dir, dtype=None, max_seq_length=None, lowercase=None,
                        new_head=False, **kwargs):
        """Loads a model directory as a masked LM (see `BertTask.from_pretrained`).

        A `BertMaskedLM` directory keeps its head. A `BertPretrainer`
        directory gives its encoder and its trained MLM head (and its NSP
        head with `next_sentence=True`). Any other source (an encoder, another task, a Hugging
        Face checkpoint without MLM weights) gives its encoder and a newly
        initialized MLM head, with a warning that says so.

        Args:
            model_dir, dtype, max_seq_length, lowercase, new_head: see
                `BertTask.from_pretrained`.
            **kwargs: `next_sentence`, and the mask settings of the attached `BertMaskedLMPreprocessor`
                (`mask_selection_rate`, `mask_selection_length`, ...); default
                the ones task.json holds, else the class defaults.
        """
        task_kwargs = {k: kwargs.pop(k) for k in ("next_sentence",) if k in kwargs}
        unknown = sorted(set(kwargs) - set(MASK_SETTINGS_JSON))
        if unknown:
            raise ValueError(
                f"BertMaskedLM.from_pretrained takes next_sentence and the mask settings "
                f"{sorted(MASK_SETTINGS_JSON)} besides its own arguments. Received: "
                f"{unknown}.")
        source = sources.resolve_source(model_dir)
        task = (model_dir_lib.read_task_info(source) or {}).get("task")
        pretrainer_dir = task == PRETRAINING_TASK and new_head is not True
        model = super().from_pretrained(source, dtype=dtype, max_seq_length=max_seq_length,
                                        lowercase=lowercase, new_head=pretrainer_dir or new_head,
                                        **task_kwargs)
        if pretrainer_dir:
            from keras_bert.models.encoder import BertEncoder

            # The pretrainer's head: its variables (the tied embeddings are the encoder's).
            pretrainer = model_dir_lib.load_model_dir(
                source, BertEncoder, **({} if dtype is None else {"dtype": dtype}))
            model.mlm_head.set_weights(pretrainer.mlm_head.get_weights())
            if model.next_sentence:
                model.nsp_head.set_weights(pretrainer.nsp_head.get_weights())
        elif task != cls.task_name or new_head is True:
            warnings.warn(
                f"{model_dir} has no masked-LM head (it holds "
                f"{'a ' + task if task else 'an encoder'} model): the MLM head is newly "
                f"initialized. Load a BertPretrainer or BertMaskedLM directory to keep "
                f"a trained one.", stacklevel=2)
        if model.preprocessor is not None:
            saved = {k: v for k, v in (model.task_info or {}).items() if k in MASK_SETTINGS_JSON}
            model.preprocessor = BertMaskedLMPreprocessor.from_preprocessor(
                model.preprocessor, **{**saved, **kwargs})
        elif kwargs:
            raise ValueError(
                f"{model_dir} has no vocab.txt, so the model has no preprocessor to take the "
                f"mask settings {sorted(kwargs)}.")
        return model
