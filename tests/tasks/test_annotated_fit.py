"""The tagger and span QA fit and evaluate on annotated raw text (CoNLL words and tags, SQuAD spans)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.tasks import BertSpanLabeler, BertTokenClassifier
from keras_bert.tasks.span_qa import reader as squad
from keras_bert.tasks.token_classification import reader as conll
from tests.training.finetune_fixtures import make_model_dir

TAGS = ["O", "B-PER", "I-PER", "B-LOC"]
WORDS = [["John", "Smith", "lives", "in", "Paris", "."],
         ["the", "cafe", "in", "Berlin"],
         ["Denver", "won"]]
WORD_TAGS = [["B-PER", "I-PER", "O", "O", "B-LOC", "O"],
             ["O", "O", "O", "B-LOC"],
             ["B-PER", "O"]]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_model_dir(str(tmp_path_factory.mktemp("annotated") / "tiny"))


def per_piece_loss():
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def tagger_of(model_dir, **kwargs):
    keras.utils.set_random_seed(0)
    tagger = BertTokenClassifier.from_pretrained(
        model_dir, num_classes=len(TAGS), label_names=TAGS, **kwargs)
    tagger.compile(optimizer=keras.optimizers.Adam(1e-2), loss=per_piece_loss(),
                   weighted_metrics=["accuracy"])
    return tagger


@pytest.mark.slow
def test_tagger_dataset_puts_tags_on_first_pieces_as_the_conll_reader(model_dir):
    tagger = tagger_of(model_dir)
    # "Seattle" is 7 pieces in the tiny vocabulary (s ##e ##a ...), "cafe" one.
    words = [["Seattle", "won"], ["the", "cafe"]]
    dataset = tagger._text_dataset(words, [["B-PER", "O"], [0, 3]], batch_size=2)
    features, labels, weights = next(iter(dataset))
    tokenizer = tagger.preprocessor.tokenizer
    denver = len(tokenizer(tf.constant(["seattle"]))[0])
    won = len(tokenizer(tf.constant(["won"]))[0])
    assert denver > 1
    width = 2 + denver + won
    assert features["token_ids"].shape == (2, width)
    first = [0.0] * width
    first[1] = first[1 + denver] = 1.0
    assert weights[0].numpy().tolist() == first
    expected = [0] * width
    expected[1] = TAGS.index("B-PER")
    assert labels[0].numpy().tolist() == expected
    # Padding of the shorter sentence weighs nothing.
    assert weights[1].numpy().tolist() == [0, 1, 1] + [0] * (width - 3)
    assert labels[1].numpy().tolist()[:3] == [0, 0, 3]
    # The reader labels the same pieces (it marks the others -1).
    sentences = conll.ConllSentences(words, [["B-PER", "O"], ["O", "B-LOC"]], ["a", "b"])
    _, ids = conll.encode_tags(sentences, TAGS)
    reader_features, reader_labels, _ = next(iter(conll.first_piece_examples(
        sentences.words, ids, tagger.preprocessor)))
    assert reader_features["token_ids"].numpy().tolist() == \
        features["token_ids"][0].numpy().tolist()
    assert (reader_labels.numpy() >= 0).tolist() == [w > 0 for w in first]


@pytest.mark.slow
def test_tagger_fits_words_and_tags_and_evaluates_them(model_dir):
    tagger = tagger_of(model_dir)
    before = tagger.evaluate(WORDS, WORD_TAGS, verbose=0)
    # The sentences 5 times an epoch, 6 epochs (each epoch starts a new tf.data
    # iterator, which instantiates the tokenizer graph again: ~0.5 s).
    history = tagger.fit(WORDS * 5, WORD_TAGS * 5, batch_size=2, epochs=6, verbose=0).history
    assert history["loss"][-1] < 0.3 * history["loss"][0]
    loss, accuracy = tagger.evaluate(WORDS, WORD_TAGS, verbose=0)
    assert loss < before[0] and accuracy == pytest.approx(1.0)
    # Int ids are the same labels; tuples of words as well.
    ids = [[TAGS.index(t) for t in row] for row in WORD_TAGS]
    assert tagger.evaluate([tuple(w) for w in WORDS], ids, verbose=0)[0] == \
        pytest.approx(loss, rel=1e-5)
    # The fitted tagger tags the words' text with their tags.
    out = tagger.predict(["John Smith lives in Paris ."])
    assert [label.decode() for label, real in zip(out["label"][0], out["mask"][0])
            if real] == WORD_TAGS[0]


def test_tagger_word_list_errors_name_the_value(model_dir):
    tagger = tagger_of(model_dir)
    with pytest.raises(ValueError, match=r"Unknown tag 'B-ORG' in sentence 1; .*'B-LOC'"):
        tagger.fit(WORDS, [WORD_TAGS[0], ["O", "O", "O", "B-ORG"], WORD_TAGS[2]], verbose=0)
    with pytest.raises(ValueError, match=r"Sentence 2 has 2 words but 1 tags"):
        tagger.fit(WORDS, WORD_TAGS[:2] + [["O"]], verbose=0)
    with pytest.raises(ValueError, match=r"3 sentences of words\. Received: 2 tag lists"):
        tagger.fit(WORDS, WORD_TAGS[:2], verbose=0)
    with pytest.raises(ValueError, match=r"Tag id 4 in sentence 0 is out of range"):
        tagger.fit([["John"]], [[4]], verbose=0)


QUESTIONS = ["who lives in paris ?", "where does john smith live ?", "who won the super bowl ?"]
CONTEXTS = ["john smith lives in paris .", "john smith lives in paris , france .",
            "denver broncos won the super bowl ."]
ANSWERS = [{"text": ["john smith"], "answer_start": [0]},
           {"text": ["paris"], "answer_start": [20]},
           {"text": ["denver broncos", "denver"], "answer_start": [0, 0]}]


def qa_of(model_dir, **kwargs):
    keras.utils.set_random_seed(0)
    qa = BertSpanLabeler.from_pretrained(model_dir, **kwargs)
    ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    qa.compile(optimizer=keras.optimizers.Adam(1e-2),
               loss={"start_logits": ce, "end_logits": ce})
    return qa


def test_span_labeler_positions_come_from_the_reader(model_dir):
    qa = qa_of(model_dir)
    dataset = qa._text_dataset((QUESTIONS, CONTEXTS), ANSWERS, batch_size=8)
    features, targets = next(iter(dataset))
    tokens = qa.preprocessor.tokenizer
    # [CLS] question [SEP] context: "paris" is context token 4 of example 1.
    question_1 = len(tokens(tf.constant([QUESTIONS[1]]))[0])
    assert targets["start_logits"].numpy().tolist()[1] == question_1 + 2 + 4
    assert targets["end_logits"].numpy().tolist()[1] == question_1 + 2 + 4
    # "john smith" spans two tokens; the first matching answer is used.
    question_0 = len(tokens(tf.constant([QUESTIONS[0]]))[0])
    assert targets["start_logits"][0] == question_0 + 2
    assert targets["end_logits"][0] == question_0 + 3
    question_2 = len(tokens(tf.constant([QUESTIONS[2]]))[0])
    assert int(targets["start_logits"][2]) == question_2 + 2
    assert int(targets["end_logits"][2]) == question_2 + 3  # "denver broncos"
    row = features["token_ids"][1].numpy()
    assert row[int(targets["start_logits"][1])] == int(tokens(tf.constant(["paris"]))[0][0])


@pytest.mark.slow
def test_span_labeler_fits_squad_answers_with_windows(model_dir):
    # Short windows: each context is read in several, as the reader cuts them.
    qa = qa_of(model_dir, max_seq_length=16)
    data = squad.SquadData([squad.SquadQuestion(str(i), q, c, [], [], False, "")
                            for i, (q, c) in enumerate(zip(QUESTIONS, CONTEXTS))], False, None)
    windows = squad.squad_features(data, qa.preprocessor, 128, 12)
    dataset = qa._text_dataset((QUESTIONS, CONTEXTS), ANSWERS, batch_size=64)
    features, targets = next(iter(dataset))
    assert features["token_ids"].shape[0] == len(windows) > len(QUESTIONS)
    # Windows without the answer point at [CLS].
    assert 0 in targets["start_logits"].numpy().tolist()
    # 5 copies an epoch, 8 epochs: as few tf.data iterators as possible (see above).
    history = qa.fit((QUESTIONS * 5, CONTEXTS * 5), ANSWERS * 5, batch_size=4, epochs=8,
                     verbose=0).history
    assert history["loss"][-1] < 0.3 * history["loss"][0]
    assert qa.evaluate((QUESTIONS, CONTEXTS), ANSWERS, verbose=0)[0] < history["loss"][0]
    # Hugging Face's column form and single values are the same answers.
    columns = {"text": [a["text"] for a in ANSWERS],
               "answer_start": [a["answer_start"] for a in ANSWERS]}
    singles = [{"text": a["text"][0], "answer_start": a["answer_start"][0]} for a in ANSWERS]
    # Flat columns, one answer (str, int) per question; as arrays too.
    flat = {"text": [a["text"][0] for a in ANSWERS],
            "answer_start": [a["answer_start"][0] for a in ANSWERS]}
    flat_arrays = {k: np.array(v) for k, v in flat.items()}
    first = qa.evaluate((QUESTIONS, CONTEXTS), ANSWERS, verbose=0)[0]
    for answers in (columns, singles, flat, flat_arrays):
        assert qa.evaluate((QUESTIONS, CONTEXTS), answers, verbose=0)[0] == \
            pytest.approx(first, rel=1e-5)
    out = qa.predict((QUESTIONS[1:2], CONTEXTS[1:2]))
    assert out["answer"][0].decode() == "paris"


def test_span_labeler_refuses_an_offset_that_misses_its_text(model_dir):
    qa = qa_of(model_dir)
    answers = ANSWERS[:1] + [{"text": ["paris"], "answer_start": [3]}] + ANSWERS[2:]
    with pytest.raises(ValueError, match=r"answers\[1\].*'paris' at answer_start=3"):
        qa.fit((QUESTIONS, CONTEXTS), answers, verbose=0)
    with pytest.raises(ValueError, match=r"one answer entry per question \(3\)\. Received: 2"):
        qa.fit((QUESTIONS, CONTEXTS), ANSWERS[:2], verbose=0)
    with pytest.raises(ValueError, match=r"one entry per question in each column.*"
                                         r"Received: text='john'"):
        qa.fit((QUESTIONS[:1], CONTEXTS[:1]), {"text": "john", "answer_start": 0}, verbose=0)
    with pytest.raises(ValueError, match=r"answers\[1\] answer_start must be an int.*"
                                         r"answer_start='4'"):
        qa.fit((QUESTIONS[:2], CONTEXTS[:2]),
               {"text": ["john", "paris"], "answer_start": [0, "4"]}, verbose=0)
    # A question without answers (SQuAD v2.0) trains toward [CLS].
    features, targets = next(iter(qa._text_dataset(
        (QUESTIONS[:1], CONTEXTS[:1]), [{"text": [], "answer_start": []}])))
    assert targets["start_logits"].numpy().tolist() == [0]
