"""BertServingModule: the tf.Module an export saves, and the signatures of every model.

It holds the Keras model's variables and the `tf.function`s from raw UTF-8
strings to answers, loadable with only `tensorflow` and `tensorflow_text`.
Every export has these signatures (each task's serving.py adds its own):

  embed(text)          -> pooled_output [B, H], mean_embedding [B, H] float32
  encode(token_ids, segment_ids, padding_mask)   int32 [B, S] each
                       -> sequence_output [B, S, H], pooled_output [B, H] float32
  preprocess(text)     -> token_ids, segment_ids, padding_mask int32 [B, S]

B is the batch (any size, 0 included). S is the longest packed text of the
batch ([CLS] text [SEP]), at most `max_seq_length`: longer texts are truncated;
with `sequence_length` set, every batch is padded to exactly that length.
"""

import inspect

import numpy as np
import keras
import tensorflow as tf

from keras_bert.export.serving_kernels import block_halves, serving_kernels
from keras_bert.models.task_inputs import integer_checks_in_graph
from keras_bert.text import BertPreprocessor, BertTokenizer

STRINGS = tf.TensorSpec([None], tf.string)
IDS = tf.TensorSpec([None, None], tf.int32)


def check_rank(tensor, rank):
    """`tensor`, after a run-time check of its rank: a SavedModel signature does not
    enforce its input shapes. EnsureShape's error names the input (a Rank op would
    not do: Grappler folds it to the traced rank).
    """
    return tf.ensure_shape(tensor, [None] * rank)


def check_same_batch(first, second):
    """(first, second), string batches of rank 1 checked at run time to be equally long."""
    names = [t.name.split(":")[0] for t in (first, second)]
    first, second = check_rank(first, 1), check_rank(second, 1)
    check = tf.debugging.assert_equal(
        tf.shape(first)[0], tf.shape(second)[0],
        message=f"inputs {names[0]} and {names[1]} must have the same batch size "
        f"(one {names[1]} per {names[0]})",
    )
    with tf.control_dependencies([check]):
        return tf.identity(first), tf.identity(second)


def overrides_call(preprocessor):
    """True when `preprocessor`'s class replaces `BertPreprocessor.call` (so text
    becomes ids by its own code, not by `tokenize` then `pack` alone)."""
    return type(preprocessor).call is not BertPreprocessor.call


class _Unsaved:
    """Python objects the module uses but `tf.saved_model.save` must not track: the
    Keras model reaches the SavedModel only through `model_variables` and the graphs.
    """

    def __init__(self, **objects):
        self.__dict__.update(objects)


class BertServingModule(tf.Module):
    """Raw-string serving signatures over a `BertEncoder` (and base of task modules),
    through the model's preprocessor (the one `fit` and `predict` use).

    Args:
        model: a `BertEncoder`, or a task model with an `.encoder`.
        preprocessor: a `keras_bert.text.BertPreprocessor` of the model's vocabulary.
        vocab_file: str, path of that vocab.txt, saved as the asset
            `assets/vocab.txt` for clients (the tables are in the graph); None
            for a module only called in this process.
        jit_compile: bool, XLA-compile the encoder and head (not the string
            ops); TF Serving needs `--xla_cpu_compilation_enabled` on CPU.
        name: str, name of the tf.Module.

    Example:
    >>> module = BertServingModule(encoder, preprocessor, "vocab.txt")
    >>> module.embed(tf.constant(["a b"]))["mean_embedding"].shape
    TensorShape([1, 128])
    """

    #: signature name -> method name; subclasses extend it.
    SIGNATURES = {"embed": "embed", "encode": "encode", "preprocess": "preprocess"}
    #: the signature TF Serving uses when a request names none.
    DEFAULT_SIGNATURE = "embed"
    #: constructor arguments a user may set per export (tools/export.py flags).
    TASK_OPTIONS = ()

    @classmethod
    def options_from_task_info(cls, task_info):
        """Constructor arguments read from task.json facts (a dict)."""
        return {}

    def __init__(self, model, preprocessor, vocab_file=None, jit_compile=False, name=None):
        super().__init__(name=name)
        encoder = getattr(model, "encoder", model)
        max_seq_length = preprocessor.max_seq_length
        # What packing can reach (a fixed sequence_length wins over max_seq_length).
        if preprocessor.truncation_length > encoder.max_position_embeddings:
            setting = "sequence_length" if preprocessor.sequence_length else "max_seq_length"
            raise ValueError(
                f"Expected the preprocessor's {setting} <= {encoder.max_position_embeddings} "
                f"(the model's max_position_embeddings). Received: {setting}="
                f"{preprocessor.truncation_length}. Set preprocessor.{setting} "
                "(--max-seq-length) lower.")
        tokenizer = preprocessor.tokenizer
        if tokenizer.vocab_size != encoder.vocab_size:
            raise ValueError(
                f"The tokenizer has {tokenizer.vocab_size} tokens but the model's "
                f"vocab_size is {encoder.vocab_size}. Export with the vocab.txt "
                f"the model was trained with."
            )
        # Plain values: what the export's info file and TF Serving's warmup describe.
        self.max_seq_length = max_seq_length
        self.sequence_length = preprocessor.sequence_length
        self.pad_to_multiple_of = preprocessor.pad_to_multiple_of
        self.truncation = preprocessor.truncation
        self.lowercase = tokenizer.lowercase
        self.jit_compile = bool(jit_compile)
        # Kernels chosen per call by size (`serving_kernels`); XLA picks its own.
        self.serving_kernels = not self.jit_compile
        self.dtype_policy = encoder.embeddings.dtype_policy.name  # The model's own stays float32.
        self._keras = _Unsaved(
            model=model,
            encoder=encoder,
            tokenizer=tokenizer,
            preprocessor=preprocessor,
        )
        # The tf.Variables under the Keras ones: tracking the Keras wrappers saves a
        # second copy, and TF Serving's session loader then finds the graph's own
        # variables uninitialized ("Could not find variable logits/kernel").
        for variable in model.variables:
            if not isinstance(variable.value, tf.Variable):
                raise TypeError(
                    f"Expected the model's variables to hold tf.Variables (Keras with "
                    f"the TensorFlow backend). Received: {type(variable.value).__name__}."
                )
        self.halve_blocks(False)  # `export_model` halves them for the graph it saves.
        if vocab_file is not None:
            self.vocab_file = tf.saved_model.Asset(vocab_file)
        # The resources the tokenizer's ops capture (SentencePiece's model, BPE's lookup
        # tables) are saved with the graph only when tracked here.
        self.tokenizer_resources = [
            value for value in vars(tokenizer).values()
            if isinstance(value, tf.__internal__.tracking.Trackable)
            and not isinstance(value, (keras.layers.Layer, tf.Variable))
        ] if not isinstance(tokenizer, BertTokenizer) else []
        # Tokenization, traced once and shared by every signature.
        self._keras.tokenize_fn = tf.function(preprocessor.tokenize, input_signature=[STRINGS],
                                              autograph=False)
        self._keras.offsets_fn = tf.function(
            lambda text: preprocessor.tokenize_with_offsets(text, unit="UTF8_CHAR"),
            input_signature=[STRINGS],
            autograph=False,
        )
        # The numeric parts: traced once for any [batch, seq].
        self._keras.encoder_fn = tf.function(
            self._run_encoder, input_signature=[IDS] * 3, jit_compile=self.jit_compile,
            autograph=False,
        )
        self._keras.model_fn = tf.function(
            self._run_model, input_signature=[IDS] * 3, jit_compile=self.jit_compile,
            autograph=False,
        )
        self._define_signatures()

    def halve_blocks(self, enabled):
        """Traces each encoder block's attention and feed-forward in two halves
        (`enabled`: `export_model`'s float SavedModel, `serving_kernels.BlockHalves`)
        or as the model's own Dense layers (the default: XLA, LiteRT and int8 choose
        their own kernels); sets the variables the module saves to match. Call before
        the first trace. The halves are copies of the weights when called: a module
        that must follow training (a model's own `serving_module()`) keeps whole
        blocks."""
        model = self._keras.model
        self._keras.halves = block_halves(model) if enabled else {}
        replaced = {v.ref() for h in self._keras.halves.values() for v in h.replaced}
        self.model_variables = [v.value for v in model.variables
                                if v.value.ref() not in replaced]
        self.half_variables = [v for h in self._keras.halves.values() for v in h.variables]

    def export_metadata(self):
        """Task facts a client needs beside the signatures' tensors (e.g. label names),
        for the export's keras_bert_export.json (a JSON-able dict; none here)."""
        return {}

    # === Signatures ===

    def _define_signatures(self):
        """Creates the tf.functions named in SIGNATURES (as attributes)."""
        self.embed = tf.function(self._embed, input_signature=[STRINGS], autograph=False)
        self.encode = tf.function(self._encode, input_signature=[IDS] * 3, autograph=False)
        self.preprocess = tf.function(self._preprocess, input_signature=[STRINGS], autograph=False)

    def signatures(self):
        """{signature name: tf.function}, `serving_default` included (for saving)."""
        result = {name: getattr(self, method) for name, method in self.SIGNATURES.items()}
        result["serving_default"] = result[self.DEFAULT_SIGNATURE]
        return result

    def _embed(self, text):
        """pooled_output and the mean of sequence_output over real tokens."""
        inputs = self.preprocess_texts((text,))
        outputs = self.run_encoder(inputs)
        # expand_dims, not [:, :, None]: LiteRT has no strided slice with new axes.
        mask = tf.expand_dims(tf.cast(inputs["padding_mask"], tf.float32), -1)  # (B, S, 1)
        # Every packed row has [CLS] and [SEP]: the count is >= 2, never 0.
        mean = tf.reduce_sum(outputs["sequence_output"] * mask, axis=1) / tf.reduce_sum(
            mask, axis=1
        )
        return {"pooled_output": outputs["pooled_output"], "mean_embedding": mean}

    def _encode(self, token_ids, segment_ids, padding_mask):
        """The encoder on ids packed elsewhere, with checks that name bad inputs."""
        encoder = self._keras.encoder
        token_ids, segment_ids, padding_mask = (
            check_rank(t, 2) for t in (token_ids, segment_ids, padding_mask))
        shape = tf.shape(token_ids)
        checks = [
            tf.debugging.assert_greater(
                shape[1], 0, message="encode: sequences must have at least one position "
                "([CLS]); token_ids has width 0",
            ),
            tf.debugging.assert_equal(
                tf.shape(segment_ids), shape,
                message="encode: segment_ids must have the shape of token_ids",
            ),
            tf.debugging.assert_equal(
                tf.shape(padding_mask), shape,
                message="encode: padding_mask must have the shape of token_ids",
            ),
            tf.debugging.assert_less_equal(
                shape[1], encoder.max_position_embeddings,
                message=f"encode: sequences are longer than the model's "
                f"max_position_embeddings={encoder.max_position_embeddings}",
            ),
        ]
        with tf.control_dependencies(checks):
            inputs = {
                "token_ids": tf.identity(token_ids),
                "segment_ids": tf.identity(segment_ids),
                "padding_mask": tf.identity(padding_mask),
            }
        # Each id in its range (`task_inputs.integer_limits`).
        return self.run_encoder(integer_checks_in_graph(inputs, encoder, "encode"))

    def _preprocess(self, text):
        return self.preprocess_texts((text,))

    # === Building blocks for the signatures (called at trace time) ===

    def tokenize(self, text):
        """int32 RaggedTensor [B, (tokens)] of WordPiece ids."""
        return self._keras.tokenize_fn(check_rank(text, 1))

    def tokenize_with_offsets(self, text):
        """(ids, starts, ends) int32 RaggedTensors; offsets in code points of `text`."""
        return self._keras.offsets_fn(check_rank(text, 1))

    def preprocess_texts(self, texts):
        """A tuple of 1 or 2 string batches [B] -> the encoder input dict [B, S], as
        `fit` and `predict` make it: `pack` of `tokenize` (one traced copy of the
        tokenizer for every signature), or the preprocessor's own `call` when a
        subclass overrides it."""
        if overrides_call(self._keras.preprocessor):
            return self._keras.preprocessor(tuple(check_rank(t, 1) for t in texts))
        return self.pack(tuple(self.tokenize(t) for t in texts))

    def pack(self, segments):
        """Packs 1 or 2 ragged segments into the encoder input dict, [B, S] each, by
        the preprocessor's `pack` (`BertPacker`'s rule for S)."""
        return self._keras.preprocessor.pack(tuple(segments))

    @property
    def truncation_length(self):
        """int, the longest packed sequence (`BertPreprocessor.truncation_length`)."""
        return self._keras.preprocessor.truncation_length

    def predict_strings(self, function, inputs, batch_size=64, what="predict"):
        """Runs `function` (a tf.function of this module) on `inputs`, a tuple of raw
        string batches in its input order, in this process in batches of similar
        length (`run_function`); returns a dict of numpy arrays. A task model's
        `predict` where it returns what the export returns; `what` names it in errors.
        """
        from keras_bert.export.predict import run_function

        names = list(inspect.signature(
            getattr(function, "python_function", function)).parameters)
        if len(inputs) != len(names):
            raise ValueError(
                f"{what} takes {len(names)} string input(s) ({', '.join(names)}). "
                f"Received: {len(inputs)}."
            )
        columns = {name: [v.encode("utf-8") if isinstance(v, str) else v for v in np.asarray(
            value.numpy() if hasattr(value, "numpy") else value, dtype=object).ravel()]
            for name, value in zip(names, inputs)}
        return run_function(function, {name: tf.string for name in names}, columns,
                            batch_size, what)

    def run_encoder(self, inputs):
        """sequence_output [B, S, H] and pooled_output [B, H], float32."""
        return self._keras.encoder_fn(
            inputs["token_ids"], inputs["segment_ids"], inputs["padding_mask"]
        )

    def run_model(self, inputs):
        """The task model's outputs (float32) on packed inputs."""
        return self._keras.model_fn(
            inputs["token_ids"], inputs["segment_ids"], inputs["padding_mask"]
        )

    def _run_encoder(self, token_ids, segment_ids, padding_mask):
        outputs = self._run(self._keras.encoder, token_ids, segment_ids, padding_mask)
        return {key: outputs[key] for key in ("sequence_output", "pooled_output")}

    def _run_model(self, token_ids, segment_ids, padding_mask):
        return self._run(self._keras.model, token_ids, segment_ids, padding_mask)

    def _run(self, layer, token_ids, segment_ids, padding_mask):
        """`layer` (the encoder or the task model) on packed inputs; float32 outputs."""
        with serving_kernels(layer, self.serving_kernels, self._keras.halves):
            outputs = layer(
                {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask},
                training=False,
            )
        return tf.nest.map_structure(lambda t: tf.cast(t, tf.float32), outputs)
