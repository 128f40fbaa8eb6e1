"""TokenClassifierServingModule: raw text -> a label per WordPiece token, with offsets."""

import tensorflow as tf

from keras_bert.export.serving_module import STRINGS, BertServingModule
from keras_bert.models.dense_head import check_labels, default_label_names
from keras_bert.tasks.token_classification import entities as entities_lib
from keras_bert.text.tokenizer import BertTokenizer
from keras_bert.text.windows import text_windows


class TokenClassifierServingModule(BertServingModule):
    """Serving signatures of a `BertTokenClassifier` (NER, POS tagging).

    serving_default / tag, on `text` string [B], gives dense [B, T] tensors,
    T = the most WordPiece tokens of a text in the batch (after truncation to
    `max_seq_length` - 2; [CLS] and [SEP] are not listed):
        tokens       string   WordPiece token ("" on padding)
        label        string   predicted label name ("" on padding)
        label_id     int32    predicted label id (-1 on padding)
        probability  float32  softmax probability of that label (0 on padding)
        start, end   int32    character offsets (Unicode code points) of the
                              token in `text`: text[start:end] in Python
                              (-1 on padding); a ## piece covers its part of
                              the word, an [UNK] word the whole word
        word_start   int32    1 on the first piece of a word, 0 on ## pieces
                              (SentencePiece, BPE: on pieces with no space before)
                              and padding (labels usually go on first pieces)
        mask         int32    1 on real tokens, 0 on padding

    entities, on `text` string [B], groups those pieces into entities with
    `aggregation_strategy` (entities.py; transformers' none / simple /
    first / max), dense [B, E], E = the most entities of a text in the batch:
        label        string   entity type, without B-/I- ("" on padding)
        text         string   the entity's slice of the original `text`
        start, end   int32    its character offsets in `text` (-1 on padding)
        score        float32  mean score of its pieces / words (0 on padding)
        num_entities int32 [B]
    A model with `windows` reads each text as overlapping windows
    (`keras_bert.text.windows.text_windows`), all in one batch; each token's
    label and probability come from the window where it has the most
    context. T is then the most tokens the windows read of a text, and tag
    also returns
        num_windows  int32 [B]  windows read of each text

    Args:
        model: a `BertTokenClassifier`.
        label_names: list of K str, or None for the model's `label_names`
            (or "0".."K-1" if it has none).
        aggregation_strategy: str, the `entities` signature's strategy
            ("first" by default: the tagger learns each word's tag on its
            first piece).
        **kwargs: `BertServingModule` arguments.
    """

    SIGNATURES = {**BertServingModule.SIGNATURES, "tag": "tag", "entities": "entities"}
    DEFAULT_SIGNATURE = "tag"
    TASK_OPTIONS = ("aggregation_strategy",)

    def __init__(self, model, preprocessor, label_names=None,
                 aggregation_strategy="first", **kwargs):
        self.aggregation_strategy = entities_lib.check_strategy(aggregation_strategy)
        num_classes = model.num_classes
        label_names = check_labels(
            num_classes, default_label_names(num_classes, label_names or model.label_names))
        self.label_names = tf.constant([str(name) for name in label_names], tf.string)
        # Plain attributes (a dict would be tracked into the SavedModel).
        windows = getattr(model, "windows", None)
        self.window_stride = windows and windows["stride"]
        self.max_windows = windows and windows["max_windows"]
        super().__init__(model, preprocessor, **kwargs)

    def export_metadata(self):
        # The strategy of the entities signature.
        return {"aggregation_strategy": self.aggregation_strategy}

    def _define_signatures(self):
        super()._define_signatures()
        if self.window_stride is None:
            self.tag = tf.function(self._tag, input_signature=[STRINGS], autograph=False)
        else:
            self.tag = tf.function(self._tag_windows, input_signature=[STRINGS], autograph=False)

            def preprocess(text):
                windows = self._text_windows(self.tokenize(text))
                keys = ("token_ids", "segment_ids", "padding_mask", "example")
                return {k: windows[k] for k in keys}

            self.preprocess = tf.function(preprocess, input_signature=[STRINGS], autograph=False)
        # autograph=False: plain ops, no Python control flow to convert
        # (autograph made each trace take seconds).
        self.entities = tf.function(self.entities_function(self.aggregation_strategy),
                                    input_signature=[STRINGS], autograph=False)

    def _text_windows(self, ids):
        return text_windows(ids, self.pack, self.truncation_length,
                            self.window_stride, self.max_windows)

    def entities_function(self, strategy):
        """text [B] -> the entities of `strategy`: the `tag` graph, then `group_entities`.

        The `entities` signature traces it; `BertTokenClassifier.predict`
        runs it as it is (the grouping eagerly: no trace per strategy).
        """
        entities_lib.check_strategy(strategy)
        names = [name.decode("utf-8") for name in self.label_names.numpy()]

        def entities(text):
            return entities_lib.group_entities(text, self.tag(text), names, strategy)

        return entities

    def _tag(self, text):
        ids, starts, ends = self.tokenize_with_offsets(text)  # (B, (n)) each
        # The packer keeps the first `budget` tokens of each text.
        budget = self.truncation_length - 2
        ids, starts, ends = (x[:, :budget] for x in (ids, starts, ends))
        logits = self.run_model(self.pack((ids,)))  # (B, S, K)
        mask = tf.ones_like(ids).to_tensor(0)  # (B, T)
        width = tf.shape(mask)[1]
        # Token i of a text sits at position i + 1, after [CLS].
        probabilities = tf.nn.softmax(logits[:, 1 : 1 + width], axis=-1)  # (B, T, K)
        return self._tag_outputs(ids, starts, ends, mask, probabilities)

    def _tag_windows(self, text):
        ids, starts, ends = self.tokenize_with_offsets(text)  # (B, (n)) each
        windows = self._text_windows(ids)
        logits = self.run_model(
            {k: windows[k] for k in ("token_ids", "segment_ids", "padding_mask")})  # (F, S, K)
        # Each token's logits from the one window where it has max context.
        where = tf.where(windows["max_context"])  # (N, 2): (window, position)
        token = tf.gather_nd(windows["token"], where)  # (N,)
        num_tokens = tf.size(ids.flat_values)
        token_logits = tf.scatter_nd(
            token[:, None], tf.gather_nd(logits, where),
            tf.stack([num_tokens, tf.shape(logits)[2]]))  # (n_total, K)
        # Tokens after a text's last window are not read: they are not listed.
        read = tf.math.unsorted_segment_max(
            windows["window_start"] + windows["window_length"], windows["example"],
            tf.shape(text)[0])  # (B,)
        row_starts = tf.cast(ids.row_starts(), tf.int32)
        kept = tf.ragged.range(row_starts, row_starts + read)  # (B, (t)) flat token indexes
        ids, starts, ends = (tf.gather(x.flat_values, kept) for x in (ids, starts, ends))
        mask = tf.ones_like(ids).to_tensor(0)  # (B, T)
        probabilities = tf.nn.softmax(tf.gather(token_logits, kept).to_tensor(0.0), axis=-1)
        return {**self._tag_outputs(ids, starts, ends, mask, probabilities),
                "num_windows": windows["num_windows"]}

    def _tag_outputs(self, ids, starts, ends, mask, probabilities):
        """The tag outputs of the listed tokens' ids, offsets [B, (T)] and probabilities [B, T, K]."""
        label_id = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
        real = tf.cast(mask, tf.bool)
        tokens = self._keras.tokenizer.ids_to_tokens(ids).to_tensor("")
        if isinstance(self._keras.tokenizer, BertTokenizer):
            is_piece = tf.strings.regex_full_match(tokens, "##.+")
        else:
            # SentencePiece and BPE pieces carry no "##": a piece that starts where the
            # previous one ends (no space between) continues its word.
            start, end = starts.to_tensor(-1), ends.to_tensor(-1)  # (B, T)
            is_piece = tf.equal(start, tf.pad(end[:, :-1], [[0, 0], [1, 0]], constant_values=-1))
        return {
            "tokens": tokens,
            "label": tf.where(real, tf.gather(self.label_names, label_id), ""),
            "label_id": tf.where(real, label_id, -1),
            "probability": tf.where(real, tf.reduce_max(probabilities, axis=-1), 0.0),
            "start": starts.to_tensor(-1),
            "end": ends.to_tensor(-1),
            "word_start": tf.cast(real & ~is_piece, tf.int32),
            "mask": mask,
        }
