"""Raw-string inputs trace the preprocessor once per model, not once per call."""

import numpy as np
import pytest

from keras_bert.tasks import BertClassifier
from keras_bert.text import BertPreprocessor, BertTokenizer

TEXTS = ["the movie is good", "a bad film", "i love it", "awful , awful film"]


class CountingPreprocessor(BertPreprocessor):
    """Counts the Python runs of `call`: one per trace (or eager call)."""

    runs = 0

    def call(self, inputs, inputs_b=None):
        CountingPreprocessor.runs += 1
        return super().call(inputs, inputs_b)


@pytest.mark.slow
def test_repeated_predict_and_fit_trace_the_preprocessor_once(encoder, vocab_file):
    preprocessor = CountingPreprocessor(BertTokenizer(vocab_file), sequence_length=None,
                                        max_seq_length=16)
    classifier = BertClassifier(encoder=encoder, num_classes=2, preprocessor=preprocessor)
    classifier.compile()
    CountingPreprocessor.runs = 0
    first = classifier.predict(TEXTS, verbose=0)
    for _ in range(2):
        np.testing.assert_array_equal(classifier.predict(TEXTS, verbose=0), first)
    classifier.evaluate(TEXTS, [0, 1, 0, 1], verbose=0)
    classifier.fit(TEXTS, [0, 1, 0, 1], batch_size=2, epochs=2, verbose=0)
    # The old dataset.map traced the tokenizer and packer on every call (~1 s).
    assert CountingPreprocessor.runs == 1
    # A new preprocessor is traced anew.
    classifier.preprocessor = CountingPreprocessor(
        BertTokenizer(vocab_file), sequence_length=None, max_seq_length=16)
    classifier.predict(TEXTS, verbose=0)
    assert CountingPreprocessor.runs == 2
