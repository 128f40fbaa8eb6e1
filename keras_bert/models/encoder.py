"""BertEncoder: the BERT backbone as a functional Keras model."""

import keras

from keras_bert import sources
from keras_bert.config import BertConfig, check_hyperparameters, embedding_width
from keras_bert.layers import BertEmbeddings, Pooler, TransformerEncoderBlock
from keras_bert.layers.activations import initializer
from keras_bert.models import model_dir as model_dir_lib
from keras_bert.models.keras_file import AtomicKerasSave
from keras_bert.models.lora import LoraModel, save_adapters_beside

_CONFIG_FIELDS = tuple(BertConfig().to_dict())
# What keras.Model's functional constructor uses; it silently drops the rest.
_MODEL_KWARGS = ("name", "trainable")


def encoder_of(model):
    """The `BertEncoder` of `model`: a task model's `.encoder`, or `model` itself."""
    return getattr(model, "encoder", model)


def check_kwargs(owner, kwargs, hint=""):
    """Raises ValueError naming keyword arguments `owner` does not take (as Keras layers
    do): a functional keras.Model ignores them, so `hiden_size=7` would build the default."""
    unknown = sorted(set(kwargs) - set(_MODEL_KWARGS))
    if unknown:
        raise ValueError(
            f"Unrecognized keyword arguments passed to {owner}: "
            f"{ {k: kwargs[k] for k in unknown} }.{hint}"
        )


@keras.saving.register_keras_serializable(package="keras_bert")
class BertEncoder(LoraModel, AtomicKerasSave, keras.Model):
    """The BERT encoder: embeddings, `num_layers` encoder blocks, pooler.

    The constructor arguments are the fields of `BertConfig`, and so are its
    variants: DistilBERT is `type_vocab_size=0, use_pooler=False`, an ELECTRA
    discriminator `use_pooler=False` with `embedding_size`, RoBERTa and XLM-R
    `type_vocab_size=1, layer_norm_epsilon=1e-5` (their position tables without
    the rows before position 0: `keras_bert.checkpoints.bert_family`).

    Inputs (a dict):
        token_ids: int32 Tensor of shape [batch_size, seq_length].
        segment_ids: int32 Tensor of shape [batch_size, seq_length].
        padding_mask: int32 or bool Tensor of shape [batch_size, seq_length],
            1 for real tokens.

    Outputs (a dict):
        sequence_output: float Tensor [batch_size, seq_length, hidden_size],
            the last layer.
        pooled_output: float Tensor [batch_size, hidden_size], tanh dense over [CLS]
            (with `use_pooler=False`, the [CLS] vector of sequence_output).
        encoder_outputs: list of `num_layers` float Tensors
            [batch_size, seq_length, hidden_size], one per block.
        attention_probs: (only with `output_attention_probs=True`) list of
            float32 Tensors [batch_size, num_heads, seq_length, seq_length].

    Args:
        vocab_size, hidden_size, num_layers, num_heads, intermediate_size,
        hidden_act, dropout_rate, attention_dropout_rate,
        max_position_embeddings, type_vocab_size, initializer_range,
        layer_norm_epsilon, embedding_size, use_pooler, pooler_act: see `BertConfig`.
        output_attention_probs: bool, also output attention probabilities.
        dtype: a Keras dtype policy such as "mixed_bfloat16", or None for the
            global policy.

    Example:
    >>> encoder = BertEncoder(**BertConfig.from_preset("tiny", vocab_size=100).to_dict())
    >>> ids = np.array([[2, 7, 9, 3, 0]])
    >>> out = encoder({"token_ids": ids, "segment_ids": 0 * ids,
    ...                "padding_mask": (ids > 0).astype("int32")})
    >>> out["sequence_output"].shape, out["pooled_output"].shape
    ((1, 5, 128), (1, 128))
    """

    def __init__(
        self,
        vocab_size=30522,
        hidden_size=768,
        num_layers=12,
        num_heads=12,
        intermediate_size=3072,
        hidden_act="gelu",
        dropout_rate=0.1,
        attention_dropout_rate=0.1,
        max_position_embeddings=512,
        type_vocab_size=2,
        initializer_range=0.02,
        layer_norm_epsilon=1e-12,
        embedding_size=None,
        use_pooler=True,
        pooler_act="tanh",
        output_attention_probs=False,
        dtype=None,
        **kwargs,
    ):
        check_kwargs(type(self).__name__, kwargs, hint=(
            " Pass a BertConfig as BertEncoder(**config.to_dict()) or "
            "BertEncoder.from_bert_config(config)."))
        arguments = locals()
        config = {name: arguments[name] for name in _CONFIG_FIELDS}  # The BertConfig fields.
        check_hyperparameters(**config)
        width = embedding_width(BertConfig(**config))

        # === Layers ===
        self.embeddings = BertEmbeddings(
            vocab_size=vocab_size,
            hidden_size=width,
            max_position_embeddings=max_position_embeddings,
            type_vocab_size=type_vocab_size,
            dropout_rate=dropout_rate,
            initializer_range=initializer_range,
            layer_norm_epsilon=layer_norm_epsilon,
            dtype=dtype,
            name="embeddings",
        )
        # ELECTRA's tables are narrower than the blocks (E < H).
        self.embeddings_project = None if width == hidden_size else keras.layers.Dense(
            hidden_size, kernel_initializer=initializer(initializer_range), dtype=dtype,
            name="embeddings_project")
        self.encoder_blocks = [
            TransformerEncoderBlock(
                num_heads=num_heads,
                intermediate_size=intermediate_size,
                hidden_act=hidden_act,
                dropout_rate=dropout_rate,
                attention_dropout_rate=attention_dropout_rate,
                initializer_range=initializer_range,
                layer_norm_epsilon=layer_norm_epsilon,
                dtype=dtype,
                name=f"encoder_block_{i}",
            )
            for i in range(num_layers)
        ]
        self.pooler = Pooler(initializer_range=initializer_range, activation=pooler_act,
                             dtype=dtype, name="pooler") if use_pooler else None

        # === Functional graph ===
        inputs = {
            "token_ids": keras.Input(shape=(None,), dtype="int32", name="token_ids"),
            "segment_ids": keras.Input(shape=(None,), dtype="int32", name="segment_ids"),
            "padding_mask": keras.Input(shape=(None,), dtype="int32", name="padding_mask"),
        }
        # Without segment embeddings the layer ignores segment_ids (still an input,
        # so every task, preprocessor and export feeds the encoder alike).
        x = self.embeddings(inputs["token_ids"], inputs["segment_ids"])
        if self.embeddings_project is not None:
            x = self.embeddings_project(x)  # (B, T, E) -> (B, T, H)
        encoder_outputs, attention_probs = [], []
        for block in self.encoder_blocks:
            if output_attention_probs:
                x, probs = block(
                    x, padding_mask=inputs["padding_mask"], return_attention_probs=True
                )
                attention_probs.append(probs)
            else:
                x = block(x, padding_mask=inputs["padding_mask"])
            encoder_outputs.append(x)
        outputs = {
            "sequence_output": x,
            "pooled_output": self.pooler(x) if self.pooler is not None else x[:, 0],
            "encoder_outputs": encoder_outputs,
        }
        if output_attention_probs:
            outputs["attention_probs"] = attention_probs
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)
        # A functional model keeps the float32 policy whatever `dtype` says;
        # the encoder reports its layers' (keras-hub's backbones do the same).
        if self.dtype_policy.name != self.embeddings.dtype_policy.name:
            self.dtype_policy = self.embeddings.dtype_policy

        # === Config ===
        for name, value in config.items():
            setattr(self, name, value)
        self.output_attention_probs = output_attention_probs

    def get_bert_config(self):
        """The `BertConfig` this encoder was built from."""
        return BertConfig(**{name: getattr(self, name) for name in _CONFIG_FIELDS})

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            **self.get_bert_config().to_dict(),
            "output_attention_probs": self.output_attention_probs,
            # The layers' policy: a functional model's own `dtype_policy` stays
            # float32 whatever `dtype` was given.
            "dtype": keras.dtype_policies.serialize(self.embeddings.dtype_policy),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)

    @classmethod
    def from_bert_config(cls, config, **kwargs):
        """Builds an encoder from a `BertConfig` (or a preset name)."""
        if isinstance(config, str):
            config = BertConfig.from_preset(config)
        return cls(**config.to_dict(), **kwargs)

    @property
    def preprocessor(self):
        """The encoder's `BertPreprocessor`, or None without a vocabulary.

        After `from_pretrained`, the one the directory describes, built on first
        use; settable. `save_pretrained` writes its settings, an export runs it.
        """
        preprocessor = self.__dict__.get("_preprocessor")
        if preprocessor is None and getattr(self, "vocab_file", None):
            preprocessor = model_dir_lib.build_preprocessor(
                self.vocab_file, self.max_position_embeddings, getattr(self, "task_info", None))
            object.__setattr__(self, "_preprocessor", preprocessor)
        return preprocessor

    def __setattr__(self, name, value):
        # The preprocessor is not tracked: it has no weights, and the encoder's
        # config (a .keras file) stays the architecture alone.
        if name == "preprocessor":
            return object.__setattr__(self, "_preprocessor", value)
        return super().__setattr__(name, value)

    def save_pretrained(self, model_dir, vocab_file=None):
        """Writes config.json, model.weights.h5 (and vocab.txt) to `model_dir`; the text
        settings of the encoder's preprocessor, when it has one, go to task.json."""
        preprocessor = self.__dict__.get("_preprocessor")
        info = None if preprocessor is None else preprocessor.saved_settings()
        model_dir_lib.save_model_dir(self, model_dir, vocab_file=vocab_file, task_info=info)
        save_adapters_beside(self, model_dir)

    @classmethod
    def from_pretrained(cls, model_dir, **kwargs):
        """Loads the encoder of any model directory (a task dir gives its encoder).

        Args:
            model_dir: str, a model directory, or any source
                `keras_bert.sources.resolve_source` takes (a Hugging Face folder
                or Hub id, a Google TF1 folder, "bert-base-uncased").
            **kwargs: encoder options that do not change weights, e.g.
                `dtype="mixed_bfloat16"` or `output_attention_probs=True`.

        Example:
        >>> encoder = BertEncoder.from_pretrained("google-bert/bert-base-uncased")
        """
        model_dir = sources.resolve_source(model_dir)
        model = model_dir_lib.load_model_dir(model_dir, cls, **kwargs)
        encoder = encoder_of(model)
        encoder.vocab_file = model.vocab_file
        encoder.task_info = {k: v for k, v in (model.task_info or {}).items()
                             if k in model_dir_lib.TEXT_SETTINGS}
        return encoder

    from_preset = from_pretrained
