"""BertPacker: truncation rules, segment ids, padding."""

import itertools
import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.text import BertPacker

CLS, SEP, PAD = 101, 102, 0


def _paper_truncate(length_a, length_b, budget):
    """google-research/bert run_classifier._truncate_seq_pair, on lengths."""
    while length_a + length_b > budget:
        if length_a > length_b:
            length_a -= 1
        else:
            length_b -= 1
    return length_a, length_b


def _segment(lengths, start):
    return tf.ragged.constant(
        [list(range(start, start + n)) for n in lengths], dtype=tf.int32
    )


def _kept_lengths(out):
    """Kept lengths of A and B read back from a packed pair batch."""
    segment = out["segment_ids"].numpy()
    mask = out["padding_mask"].numpy()
    length_a = ((segment == 0) & (mask == 1)).sum(1) - 2  # [CLS], [SEP].
    length_b = (segment == 1).sum(1) - 1
    return list(zip(length_a.tolist(), length_b.tolist()))


def test_longest_first_and_round_robin_follow_the_papers_rule():
    pairs = list(itertools.product(range(12), range(12)))
    a = _segment([p[0] for p in pairs], 1000)
    b = _segment([p[1] for p in pairs], 2000)
    for sequence_length in (3, 4, 8, 11, 16):
        budget = sequence_length - 3
        want = [_paper_truncate(la, lb, budget) for la, lb in pairs]
        for truncation in ("longest_first", "round_robin"):
            packer = BertPacker(
                CLS, SEP, sequence_length=sequence_length,
                truncation=truncation,
            )
            assert _kept_lengths(packer((a, b))) == want, truncation


def test_longest_first_hand_example():
    packer = BertPacker(CLS, SEP, sequence_length=10)
    a = tf.ragged.constant([[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]])
    b = tf.ragged.constant([[11, 12, 13, 14]])
    out = packer((a, b))
    # Budget 7: A is trimmed to B's length (4, 4), then B on the tie.
    assert out["token_ids"].numpy().tolist() == [
        [CLS, 1, 2, 3, 4, SEP, 11, 12, 13, SEP]
    ]
    assert out["segment_ids"].numpy().tolist() == [
        [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]
    ]
    # A short segment keeps everything; the long one gets the rest.
    out = packer((tf.ragged.constant([[1, 2]]), tf.ragged.constant([[9] * 20])))
    assert out["token_ids"].numpy().tolist() == [
        [CLS, 1, 2, SEP, 9, 9, 9, 9, 9, SEP]
    ]


def test_round_robin_hands_out_tokens_in_turn():
    packer = BertPacker(CLS, SEP, sequence_length=8, truncation="round_robin")
    out = packer((tf.ragged.constant([[1, 2, 3, 4, 5, 6]]),
                  tf.ragged.constant([[7, 8, 9, 10]])))
    # Budget 5 handed out A, B, A, B, A.
    assert out["token_ids"].numpy().tolist() == [
        [CLS, 1, 2, 3, SEP, 7, 8, SEP]
    ]


def test_pairs_segment_ids_and_padding_mask():
    packer = BertPacker(CLS, SEP, pad_token_id=PAD, sequence_length=9)
    out = packer((tf.ragged.constant([[5, 6], [7]]),
                  tf.ragged.constant([[8], [9, 10, 11]])))
    assert out["token_ids"].numpy().tolist() == [
        [CLS, 5, 6, SEP, 8, SEP, PAD, PAD, PAD],
        [CLS, 7, SEP, 9, 10, 11, SEP, PAD, PAD],
    ]
    assert out["segment_ids"].numpy().tolist() == [
        [0, 0, 0, 0, 1, 1, 0, 0, 0],
        [0, 0, 0, 1, 1, 1, 1, 0, 0],
    ]
    assert out["padding_mask"].numpy().tolist() == [
        [1, 1, 1, 1, 1, 1, 0, 0, 0],
        [1, 1, 1, 1, 1, 1, 1, 0, 0],
    ]
    assert all(v.dtype == tf.int32 for v in out.values())


def test_single_segment_truncates_and_pads():
    packer = BertPacker(CLS, SEP, sequence_length=5)
    out = packer(tf.ragged.constant([[1, 2, 3, 4, 5], [6]]))
    assert out["token_ids"].numpy().tolist() == [
        [CLS, 1, 2, 3, SEP],
        [CLS, 6, SEP, PAD, PAD],
    ]
    assert out["segment_ids"].numpy().sum() == 0


def test_dynamic_padding_to_longest_in_batch():
    packer = BertPacker(CLS, SEP, sequence_length=None, max_seq_length=8)
    out = packer(tf.ragged.constant([[1, 2], [3, 4, 5, 6], [7]]))
    assert out["token_ids"].shape == (3, 6)  # Longest: 4 tokens + 2.
    assert out["padding_mask"].numpy().sum(1).tolist() == [4, 6, 3]
    # Capped at max_seq_length.
    out = packer(tf.ragged.constant([list(range(1, 20))]))
    assert out["token_ids"].numpy().tolist() == [
        [CLS, 1, 2, 3, 4, 5, 6, SEP]
    ]
    # In a tf.function the width is dynamic.
    fn = tf.function(packer)
    assert fn(tf.ragged.constant([[1], [2, 3]]))["token_ids"].shape == (2, 4)


def test_unbatched_example_in_dataset_map():
    packer = BertPacker(CLS, SEP, sequence_length=6)
    ds = tf.data.Dataset.from_tensor_slices(
        tf.ragged.constant([[1, 2], [3, 4, 5, 6, 7]])
    ).map(packer).batch(2)
    out = next(iter(ds))
    assert out["token_ids"].numpy().tolist() == [
        [CLS, 1, 2, SEP, PAD, PAD],
        [CLS, 3, 4, 5, 6, SEP],
    ]


def test_config_round_trip():
    packer = BertPacker(
        CLS, SEP, sequence_length=None, max_seq_length=64, truncation="round_robin"
    )
    clone = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(packer)
    )
    assert clone.get_config() == packer.get_config()
    x = tf.ragged.constant([[1, 2, 3]])
    np.testing.assert_array_equal(clone(x)["token_ids"], packer(x)["token_ids"])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"truncation": "waterfall"}, "truncation='waterfall'"),
        ({"sequence_length": 2}, "sequence_length=2"),
        ({"max_seq_length": 0}, "max_seq_length=0"),
    ],
)
def test_argument_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BertPacker(CLS, SEP, **kwargs)


def test_three_segments_rejected():
    x = tf.ragged.constant([[1]])
    with pytest.raises(ValueError, match="3 segments"):
        BertPacker(CLS, SEP)((x, x, x))


def test_empty_batch_with_dynamic_padding_keeps_cls_width():
    packer = BertPacker(cls_token_id=2, sep_token_id=3, sequence_length=None)
    empty = tf.ragged.constant([[1]], dtype=tf.int32)[:0]
    out = packer(empty)
    assert out["token_ids"].shape == (0, 2)
    pair = packer((empty, empty))
    assert pair["segment_ids"].shape == (0, 3)
    one = packer(tf.ragged.constant([[7, 8]], dtype=tf.int32))
    assert one["token_ids"].numpy().tolist() == [[2, 7, 8, 3]]


# RoBERTa / XLM-R ids: <s> 0, <pad> 1, </s> 2.
S, PAD_R, END = 0, 1, 2


def test_roberta_template_two_separators_one_segment():
    packer = BertPacker(S, END, pad_token_id=PAD_R, sequence_length=10, pair_separator=2)
    out = packer((tf.ragged.constant([[5, 6], [7]]), tf.ragged.constant([[8], [9, 10, 11]])))
    assert out["token_ids"].numpy().tolist() == [
        [S, 5, 6, END, END, 8, END, PAD_R, PAD_R, PAD_R],
        [S, 7, END, END, 9, 10, 11, END, PAD_R, PAD_R],
    ]
    assert out["segment_ids"].numpy().sum() == 0  # One token type.
    assert out["padding_mask"].numpy().sum(1).tolist() == [7, 8]
    # The budget counts the extra separator: 10 - 4 tokens for A and B.
    out = packer((tf.ragged.constant([[1] * 9]), tf.ragged.constant([[2] * 9])))
    assert out["token_ids"].numpy().tolist() == [[S, 1, 1, 1, END, END, 2, 2, 2, END]]
    # Single texts are packed as with one separator.
    single = packer(tf.ragged.constant([[5, 6]]))["token_ids"].numpy().tolist()
    assert single == [[S, 5, 6, END] + [PAD_R] * 6]
    assert packer.second_segment_offset(2) == 5 and packer.num_special_tokens(2) == 4


def test_roberta_template_matches_transformers(tmp_path):
    """Pairs packed id for id as transformers' RobertaTokenizerFast packs them (a byte-level
    vocabulary without merges: one id per character), truncated at even budgets (on an odd
    budget with both texts long, its Rust rule gives B the extra token, the paper A)."""
    transformers = pytest.importorskip("transformers")
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    tokens = ["<s>", "<pad>", "</s>", "<unk>"] + list(bytes_to_unicode().values()) + ["<mask>"]
    (tmp_path / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(tokens)}))
    (tmp_path / "merges.txt").write_text("#version: 0.2\n")
    reference = transformers.RobertaTokenizerFast(str(tmp_path / "vocab.json"),
                                                  str(tmp_path / "merges.txt"))
    rng = np.random.default_rng(0)
    a = ["".join(rng.choice(list("abc xyz"), n)) for n in rng.integers(1, 14, 24)]
    b = ["".join(rng.choice(list("def uvw"), n)) for n in rng.integers(1, 14, 24)]

    def ids(texts):
        return tf.ragged.constant(reference(texts, add_special_tokens=False)["input_ids"])

    for length in (6, 12, 30):
        packer = BertPacker(S, END, pad_token_id=PAD_R, sequence_length=length,
                            pair_separator=2)
        out = packer((ids(a), ids(b)))
        want = reference(a, b, truncation="longest_first", max_length=length,
                         padding="max_length", return_token_type_ids=True)
        assert out["token_ids"].numpy().tolist() == want["input_ids"], length
        assert out["segment_ids"].numpy().tolist() == want["token_type_ids"]
        assert out["padding_mask"].numpy().tolist() == want["attention_mask"]


def test_pair_separator_errors():
    with pytest.raises(ValueError, match="pair_separator=3"):
        BertPacker(S, END, pair_separator=3)
    with pytest.raises(ValueError, match="sequence_length=3"):
        BertPacker(S, END, sequence_length=3, pair_separator=2)


def _packed_by_hand(rows, packer):
    """Each example packed by the rule, in Python: (token ids, segment ids, mask) rows."""
    special = packer.num_special_tokens(len(rows[0]) if rows else 1)
    budget = packer.truncation_length - special
    packed = []
    for row in rows:
        if len(row) == 1:
            kept = [row[0][:budget]]
        elif packer.truncation == "longest_first":
            a, b = _paper_truncate(len(row[0]), len(row[1]), budget)
            kept = [row[0][:a], row[1][:b]]
        else:  # round robin: one token each in turn, A first
            a = b = 0
            while a + b < budget and (a < len(row[0]) or b < len(row[1])):
                if a < len(row[0]) and (a <= b or b >= len(row[1])):
                    a += 1
                elif b < len(row[1]):
                    b += 1
            kept = [row[0][:a], row[1][:b]]
        ids, segments = [CLS] + kept[0] + [SEP], [0] * (len(kept[0]) + 2)
        if len(kept) == 2:
            b_id = 1 if packer.pair_separator == 1 else 0
            ids += [SEP] * (packer.pair_separator - 1) + kept[1] + [SEP]
            segments = [0] * (len(kept[0]) + 1 + packer.pair_separator)
            segments += [b_id] * (len(kept[1]) + 1)
        packed.append((ids, segments))
    longest = max([len(ids) for ids, _ in packed], default=0)
    if packer.sequence_length:
        width = packer.sequence_length
    else:
        multiple = packer.pad_to_multiple_of
        width = max(min(-(-longest // multiple) * multiple, packer.max_seq_length), special)
    return [(ids + [packer.pad_token_id] * (width - len(ids)), segments + [0] * (width - len(ids)),
             [1] * len(ids) + [0] * (width - len(ids))) for ids, segments in packed]


@pytest.mark.parametrize("pair_separator", [1, 2])
@pytest.mark.parametrize("truncation", ["longest_first", "round_robin"])
def test_random_batches_pack_as_the_rule_says(pair_separator, truncation):
    rng = np.random.default_rng(pair_separator + len(truncation))
    for trial in range(12):
        pairs = trial % 2 == 1
        batch = int(rng.integers(0, 5))
        rows = [[rng.integers(1, 90, size=int(rng.integers(0, 12))).tolist()
                 for _ in range(2 if pairs else 1)] for _ in range(batch)]
        packer = BertPacker(
            CLS, SEP, pad_token_id=int(rng.choice([0, 1])), truncation=truncation,
            pair_separator=pair_separator,
            sequence_length=[None, 6, 9, 16][trial % 4 if trial % 3 else 0],
            max_seq_length=int(rng.integers(6, 20)), pad_to_multiple_of=int(rng.choice([1, 4])))
        columns = [tf.ragged.constant([row[k] for row in rows], dtype=tf.int32,
                                      ragged_rank=1) if rows else
                   tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int32), tf.zeros([0], tf.int64))
                   for k in range(2 if pairs else 1)]
        for run in (packer, tf.function(packer)) if trial < 4 else (packer,):
            out = run(tuple(columns))
            got = list(zip(*(out[k].numpy().tolist() for k in (
                "token_ids", "segment_ids", "padding_mask"))))
            expected = _packed_by_hand(rows, packer)
            assert got == [tuple(map(list, row)) for row in expected], (trial, rows)
            assert out["token_ids"].shape[0] == batch and out["token_ids"].dtype == tf.int32
