"""BertTokenClassifier: a label per token (NER, POS tagging)."""

import keras
import numpy as np
import tensorflow as tf

from keras_bert.models.dense_head import DenseHeadTask
from keras_bert.tasks.token_classification.entities import to_entity_lists
from keras_bert.models.windowed import WindowedTask
from keras_bert.tasks.token_classification.metrics import IGNORE_LABEL, LabeledTokenAccuracy
from keras_bert.tasks.token_classification.serving import TokenClassifierServingModule


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenClassifier(WindowedTask, DenseHeadTask):
    """Sequence output -> dropout -> dense: one label distribution per token.

    Output: float32 logits [batch_size, seq_length, num_classes].

    Compiled by default (`BertTask`): per-token sparse categorical
    cross-entropy on the logits that skips pieces labeled -1 (not first
    pieces, [CLS], [SEP], padding), and the accuracy over labeled pieces.

    Args:
        encoder: a `BertEncoder`.
        num_classes: int, number of tags.
        dropout_rate: float or None; None uses the encoder's dropout_rate.
        label_names: optional list of `num_classes` tag strings (e.g. "B-PER").
        windows: None (texts are truncated at max_seq_length), or a dict
            {"stride": 128, "max_windows": 8}: `predict` on strings and
            exports read a long text as overlapping windows, and each token
            takes its label from the window where it has the most context;
            the result then also has `num_windows` [batch]. Saved in
            task.json; `set_windows` changes it.

    With a preprocessor (`from_pretrained` attaches one), `predict(texts)`
    on strings returns the export's `tag` dict, from the same code (see
    `TokenClassifierServingModule`; pairs are refused). On the integer input
    dict it returns the logits.

    Example:
    >>> tagger = BertTokenClassifier(encoder, num_classes=9)
    >>> tagger(inputs).shape  # (batch, seq, 9)
    >>> tagger = BertTokenClassifier.from_pretrained("models/minilm-ner")
    >>> tagger.predict(["John lives in Paris."])["label"][0]
    >>> tagger.predict(["John lives in Paris."], aggregation_strategy="first")[0]
    [{'label': 'PER', 'text': 'John', 'start': 0, 'end': 4, 'score': 0.99}, ...]

    `fit` and `evaluate` also take words and tags as CoNLL gives them: a
    list of word lists and a list of tag lists (tag names from
    `label_names`, or int ids), labeled as the CoNLL reader labels them
    (`reader.first_piece_examples`: the tag on each word's first piece).

    >>> tagger.fit([["John", "lives", "in", "Paris"]], [["B-PER", "O", "O", "B-LOC"]])
    """

    task_name = "token_classification"
    serving_module_class = TokenClassifierServingModule
    text_columns = (1,)

    combines_windows = False  # A label per token: no window logits to combine.

    def __init__(self, encoder, num_classes, dropout_rate=None, label_names=None, windows=None,
                 **kwargs):
        self._init_windows(windows)
        super().__init__(encoder, num_classes, dropout_rate, label_names,
                         feature="sequence_output", **kwargs)

    def task_config(self):
        return {**super().task_config(), **self.windows_config()}

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=IGNORE_LABEL)

    def default_metrics(self):
        return [LabeledTokenAccuracy()]

    def _text_dataset(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        """Word lists with tag lists -> batched (inputs, labels, sample_weight); else as BertTask."""
        if not _is_word_lists(x):
            return super()._text_dataset(x, y, sample_weight, batch_size, shuffle)
        from keras_bert.tasks.token_classification.reader import first_piece_examples

        preprocessor = self._require_preprocessor()
        if y is None:
            raise ValueError(
                "Word lists go to fit / evaluate with their tags, one list per sentence: "
                "fit(words, tags). predict takes texts: predict([\"John lives in Paris.\"]).")
        if sample_weight is not None:
            raise ValueError(
                "sample_weight is not taken with word lists: the weights are 1 on each "
                "word's first piece and 0 elsewhere. Pass the integer input dict to weigh "
                "tokens yourself.")
        tag_ids = self._tag_ids(x, y)
        examples = first_piece_examples(x, tag_ids, preprocessor)

        def weigh(features, labels, word_index):  # Label -1: no tag at this piece.
            return features, tf.maximum(labels, 0), tf.cast(labels >= 0, tf.float32)

        # A known length: Keras then counts steps and never warns "ran out of data".
        dataset = examples.map(weigh).apply(tf.data.experimental.assert_cardinality(len(x)))
        if shuffle:
            dataset = dataset.shuffle(max(len(x), 1), reshuffle_each_iteration=True)
        padding = ({"token_ids": 0, "segment_ids": 0, "padding_mask": 0}, 0, 0.0)
        return dataset.padded_batch(batch_size or 32, padding_values=padding).prefetch(
            tf.data.AUTOTUNE)

    def _tag_ids(self, words, tags):
        """Tag names (through label_names) or int ids -> one int32 array per sentence."""
        if isinstance(tags, np.ndarray) and tags.dtype != object:
            tags = list(tags)
        if (isinstance(tags, (str, bytes)) or not hasattr(tags, "__len__")
                or len(tags) != len(words)):
            count = len(tags) if hasattr(tags, "__len__") else type(tags).__name__
            raise ValueError(
                f"Expected one tag list per sentence: {len(words)} sentences of words. "
                f"Received: {count} tag lists.")
        index = {name: i for i, name in enumerate(self.label_names or [])}
        ids = []
        for row, (sentence, sentence_tags) in enumerate(zip(words, tags)):
            if isinstance(sentence_tags, (str, bytes)) or not hasattr(sentence_tags, "__len__"):
                raise ValueError(
                    f"Expected tags[{row}] to be a list of tags, one per word. Received: "
                    f"{sentence_tags!r}")
            if len(sentence_tags) != len(sentence):
                raise ValueError(
                    f"Sentence {row} has {len(sentence)} words but {len(sentence_tags)} tags: "
                    f"words[{row}]={list(sentence)!r}, tags[{row}]={list(sentence_tags)!r}.")
            ids.append(np.asarray([self._tag_id(tag, index, row) for tag in sentence_tags],
                                  dtype="int32"))
        return ids

    def _tag_id(self, tag, index, row):
        if isinstance(tag, bytes):
            tag = tag.decode("utf-8")
        if isinstance(tag, str):
            if tag in index:
                return index[tag]
            if not index:
                raise ValueError(
                    f"Tag {tag!r} (sentence {row}) is a name, but this tagger has no "
                    f"label_names. Pass int ids, or build it with label_names=[...], e.g. "
                    f"from_pretrained(MODEL_DIR, num_classes=..., label_names=[...]).")
            raise ValueError(
                f"Unknown tag {tag!r} in sentence {row}; the tagger's label_names are "
                f"{self.label_names}.")
        if isinstance(tag, (bool, np.bool_)) or not isinstance(tag, (int, np.integer)):
            raise ValueError(
                f"Expected tags to be names from label_names or int ids. Received: {tag!r} "
                f"in sentence {row}.")
        if not 0 <= int(tag) < self.num_classes:
            raise ValueError(
                f"Tag id {int(tag)} in sentence {row} is out of range: this tagger has "
                f"num_classes={self.num_classes} (ids 0 to {self.num_classes - 1}).")
        return int(tag)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None,
                aggregation_strategy=None):
        """As `keras.Model.predict`; on texts, the `tag` dict, or entities.

        Args:
            aggregation_strategy: None (the `tag` dict of per-piece arrays),
                or "none", "simple", "first", "max" (transformers'
                strategies; see `entities.py`): then a list, one per text,
                of entity dicts {"label", "text", "start", "end", "score"},
                computed as the export's `entities` signature does; `text`
                is the original string's `[start:end]`.
        """
        # Lists, arrays and string datasets all return the decoded dict.
        texts = self._predict_texts(x)
        if texts is None:
            if aggregation_strategy is not None:
                raise ValueError(
                    "aggregation_strategy groups the entities of texts; predict received "
                    "encoded inputs. Pass strings: predict([\"John lives in Paris.\"], "
                    "aggregation_strategy=\"first\").")
            return super().predict(x, batch_size=batch_size, verbose=verbose, steps=steps,
                                   callbacks=callbacks)
        if aggregation_strategy is None:
            return self.predict_strings(texts, batch_size=batch_size)
        function = self.serving_module().entities_function(aggregation_strategy)
        return to_entity_lists(self.predict_strings(texts, function, batch_size))


def _is_word_lists(x):
    """True for a batch of sentences given as words: a list/tuple of lists/tuples of str."""
    if not isinstance(x, (list, tuple)) or not x:
        return False
    return all(isinstance(sentence, (list, tuple))
               and all(isinstance(word, (str, bytes)) for word in sentence) for sentence in x
               ) and any(len(sentence) for sentence in x)
