"""Pretraining data written shard by shard (issue 38, item 6): the same records for any
split, each shard committed by its manifest, the set read whole or its gaps named."""

import json
import os
import random
import uuid

import pytest
import tensorflow as tf

from keras_bert import steps
from keras_bert.data import (
    PretrainingDataConfig,
    create_pretraining_data,
    create_pretraining_shard,
    parse_shard,
    read_metadata,
    shard_paths,
)
from keras_bert.files import OutputError
from keras_bert.text import save_vocabulary
from keras_bert.training.distribute import worker_shard
from tests.conftest import run_tool

WORDS = "the cat sat on a mat and dog ran to park it was sunny day big red".split()
# Windows of 3 documents: the 14 documents make 5 (3, 3, 3, 3, 2): 1, 2 or 3 shards all get some.
CONFIG = PretrainingDataConfig(max_seq_length=16, max_predictions_per_seq=3, dupe_factor=2,
                               document_pool_size=3, seed=1)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("shards")
    rng = random.Random(0)
    documents = ["\n".join(" ".join(rng.choices(WORDS, k=rng.randint(3, 7)))
                           for _ in range(rng.randint(3, 6))) for _ in range(14)]
    (root / "corpus.txt").write_text("\n\n".join(documents) + "\n", encoding="utf-8")
    save_vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS, root / "vocab.txt")
    whole = create_pretraining_data([str(root / "corpus.txt")], str(root / "whole"),
                                    str(root / "vocab.txt"), CONFIG)
    return {"root": root, "corpus": str(root / "corpus.txt"),
            "vocab": str(root / "vocab.txt"), "whole": whole}


def _records(path):
    return [r.numpy() for r in tf.data.TFRecordDataset(path)]


def _write_apart(corpus, out, num_shards, order=None, config=CONFIG, command=None):
    results = {}
    for k in order or range(num_shards):
        results[k] = create_pretraining_shard([corpus["corpus"]], str(out), corpus["vocab"],
                                              config, shard_index=k, num_shards=num_shards,
                                              command=command)
    return results


@pytest.mark.parametrize("num_shards", [1, 2, 3])
def test_shards_written_apart_hold_the_records_of_one_run(corpus, tmp_path, num_shards):
    out = tmp_path / "data"
    # Written in reverse order, as machines finish when they do.
    results = _write_apart(corpus, out, num_shards, order=reversed(range(num_shards)))
    assert [results[k]["missing"] for k in reversed(range(num_shards))] == [
        list(range(k)) for k in reversed(range(num_shards))]
    metadata = read_metadata(str(out))
    assert results[0]["metadata"] == metadata  # The last one wrote metadata.json.
    whole = corpus["whole"]
    for key in ("num_instances", "num_tokens", "num_masked", "num_documents",
                "next_sentence_labels", "vocab_hash"):
        assert metadata[key] == whole[key], key
    assert metadata["num_shards"] == num_shards
    one = _records(os.path.join(corpus["root"], "whole", "pretraining-00000-of-00001.tfrecord"))
    shards = [_records(os.path.join(out, f"pretraining-{k:05d}-of-{num_shards:05d}.tfrecord"))
              for k in range(num_shards)]
    assert all(shards) and sorted(sum(shards, [])) == sorted(one)
    # The documented order: window w is shard w % N's next run of records.
    windows = [w for k in range(num_shards) for w in results[k]["shard"]["windows"]]
    assert sorted(w for w, _ in windows) == list(range(5))
    rebuilt, taken = [], [0] * num_shards
    for w, count in sorted(windows):
        k = w % num_shards
        rebuilt += shards[k][taken[k]:taken[k] + count]
        taken[k] += count
    assert rebuilt == one
    # One process writing N shards writes the same files.
    pooled = create_pretraining_data([corpus["corpus"]], str(tmp_path / "pooled"),
                                     corpus["vocab"], CONFIG, num_shards=num_shards)
    assert [_records(p) for p in shard_paths(str(tmp_path / "pooled"))] == shards
    assert pooled["identity"] == metadata["identity"]


def test_another_seed_draws_other_records(corpus, tmp_path):
    other = create_pretraining_data([corpus["corpus"]], str(tmp_path / "seed2"), corpus["vocab"],
                                    PretrainingDataConfig(**{**CONFIG.__dict__, "seed": 2}))
    again = _records(os.path.join(tmp_path, "seed2", "pretraining-00000-of-00001.tfrecord"))
    one = _records(os.path.join(corpus["root"], "whole", "pretraining-00000-of-00001.tfrecord"))
    assert other["num_documents"] == corpus["whole"]["num_documents"]
    assert len(set(again) & set(one)) < 0.2 * len(one)


def test_a_missing_shard_is_named_with_the_command_that_writes_it(corpus, tmp_path,
                                                                   monkeypatch):
    out = tmp_path / "data"
    command = [corpus["corpus"], "--output", str(out), "--vocab-file", corpus["vocab"],
               "--shard", "0/3"]
    _write_apart(corpus, out, 3, order=[0, 2], command=command)
    # Shard 1 killed after its records moved in, before its manifest: not done.
    def killed(step, number=None):
        if step == "shard:moved":
            raise KeyboardInterrupt

    monkeypatch.setattr(steps, "reached", killed)
    with pytest.raises(KeyboardInterrupt):
        _write_apart(corpus, out, 3, order=[1])
    monkeypatch.undo()
    assert (out / "pretraining-00001-of-00003.tfrecord").exists()
    assert not (out / "metadata.json").exists()
    with pytest.raises(FileNotFoundError) as error:
        read_metadata(str(out))
    message = str(error.value)
    assert "1 of its 3 shards are missing" in message
    assert "pretraining-00001-of-00003.tfrecord" in message
    assert "00000-of" not in message and "00002-of" not in message
    assert message.endswith(" --shard 1/3")
    assert f"--output {out} " in message
    # The command it gives completes the set.
    results = _write_apart(corpus, out, 3, order=[1])
    assert not results[1]["skipped"] and results[1]["missing"] == []
    assert read_metadata(str(out))["num_instances"] == corpus["whole"]["num_instances"]


def test_a_done_shard_is_skipped_and_one_cut_short_is_written_again(corpus, tmp_path):
    out = tmp_path / "data"
    _write_apart(corpus, out, 2)
    shard = out / "pretraining-00001-of-00002.tfrecord"
    before = shard.read_bytes()
    stamp = os.stat(shard).st_mtime_ns
    again = _write_apart(corpus, out, 2, order=[1])[1]
    assert again["skipped"] and os.stat(shard).st_mtime_ns == stamp
    shard.write_bytes(before[:len(before) // 2])  # A copy cut short.
    with pytest.raises(FileNotFoundError, match="pretraining-00001-of-00002.tfrecord"):
        read_metadata(str(out))
    fixed = _write_apart(corpus, out, 2, order=[1])[1]
    assert not fixed["skipped"] and shard.read_bytes() == before
    assert read_metadata(str(out))["num_shards"] == 2
    assert not [n for n in os.listdir(out) if n.startswith(".tmp-")]


def test_shards_of_other_settings_are_refused(corpus, tmp_path):
    out = tmp_path / "data"
    _write_apart(corpus, out, 2, order=[0])
    other_seed = PretrainingDataConfig(**{**CONFIG.__dict__, "seed": 2})
    with pytest.raises(OutputError, match="pretraining-00000-of-00002.json is a shard of "
                                          "another data set"):
        _write_apart(corpus, out, 2, order=[1], config=other_seed)
    with pytest.raises(OutputError, match="not a shard of this data set"):
        _write_apart(corpus, out, 3, order=[1])
    with pytest.raises(OutputError, match="other settings"):
        _write_apart(corpus, corpus["root"] / "whole", 1, config=other_seed)
    # A file of the user's: beside the set's shards it stays; in a folder of its own
    # it is not taken for a set.
    (out / "README.md").write_text("how I made it")
    _write_apart(corpus, out, 2, order=[1])
    assert (out / "README.md").read_text() == "how I made it"
    assert read_metadata(str(out))["num_shards"] == 2
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("mine")
    with pytest.raises(OutputError, match="holds todo.txt, which is not a shard"):
        _write_apart(corpus, notes, 2, order=[0])
    assert os.listdir(notes) == ["todo.txt"]
    # The same settings over a whole set written at once: nothing to do.
    done = _write_apart(corpus, corpus["root"] / "whole", 1)[0]
    assert done["skipped"] and done["metadata"] == corpus["whole"]


def test_another_corpus_of_the_same_path_and_size_is_another_set(corpus, tmp_path):
    text = (tmp_path / "corpus.txt")
    first = open(corpus["corpus"], encoding="utf-8").read()
    text.write_text(first, encoding="utf-8")
    apart = {**corpus, "corpus": str(text)}
    out = tmp_path / "data"
    _write_apart(apart, out, 2, order=[0])
    # The same words in another order: the same size, other documents.
    second = "\n".join(" ".join(reversed(line.split(" "))) for line in first.split("\n"))
    assert second != first and len(second) == len(first)
    text.write_text(second, encoding="utf-8")
    with pytest.raises(OutputError, match="pretraining-00000-of-00002.json is a shard of "
                                          "another data set"):
        _write_apart(apart, out, 2, order=[1])
    assert sorted(os.listdir(out)) == ["pretraining-00000-of-00002.json",
                                       "pretraining-00000-of-00002.tfrecord", "vocab.txt"]


@pytest.mark.parametrize("text, match", [
    ("3/3", r"shard_index in \[0, 3\).*Received: shard 3/3"),
    ("-1/2", r"shard_index in \[0, 2\)"),
    ("0/0", "num_shards to be an int >= 1"),
    ("1", r"Expected --shard I/N .* Received: --shard '1'"),
    ("a/b", r"Received: --shard 'a/b'"),
])
def test_bad_shard_values_are_refused(text, match):
    with pytest.raises(ValueError, match=match):
        parse_shard(text)


def test_parse_shard_and_the_cluster_environment():
    assert parse_shard("2/5") == (2, 5)
    chief = {"cluster": {"chief": ["c:1"], "worker": ["w0:1", "w1:1"]},
             "task": {"type": "worker", "index": 1}}
    assert worker_shard({"TF_CONFIG": json.dumps(chief)}) == (2, 3)
    spec = {"cluster": {"workerpool0": ["c:1"], "workerpool1": ["w0:1"]},
            "task": {"type": "workerpool0", "index": 0}}
    assert worker_shard({"CLUSTER_SPEC": json.dumps(spec)}) == (0, 2)
    assert worker_shard({"JOB_COMPLETION_INDEX": "3", "KERAS_BERT_NUM_WORKERS": "4"}) == (3, 4)
    assert worker_shard({"KERAS_BERT_WORKER_INDEX": "1", "JOB_COMPLETION_INDEX": "0",
                         "KERAS_BERT_WORKER_HOSTS": "a,b"}) == (1, 2)
    with pytest.raises(ValueError, match=r"set KERAS_BERT_NUM_WORKERS .* --shard "
                                         r"\$\(JOB_COMPLETION_INDEX\)/N"):
        worker_shard({"JOB_COMPLETION_INDEX": "3"})
    with pytest.raises(ValueError, match="not below the number of workers"):
        worker_shard({"JOB_COMPLETION_INDEX": "4", "KERAS_BERT_NUM_WORKERS": "4"})
    with pytest.raises(ValueError, match="found no cluster.*Give --shard I/N"):
        worker_shard({})


def test_the_tool_writes_one_shard_and_says_what_is_left(corpus, tmp_path):
    out = tmp_path / "data"
    args = [corpus["corpus"], "--output", out, "--vocab-file", corpus["vocab"],
            "--max-seq-length", 16, "--max-predictions-per-seq", 3, "--dupe-factor", 2,
            "--document-pool-size", 3, "--seed", 1]
    status, stdout, stderr = run_tool("create_pretraining_data", *args, "--shard", "1/2")
    assert status == 0, stderr
    lines = stdout.strip().splitlines()
    summary = json.loads(lines[0])
    assert summary["shard"] == "1/2" and summary["missing_shards"] == [0]
    assert summary["num_instances"] == read_json(out / "pretraining-00001-of-00002.json")[
        "num_instances"] > 0
    assert "documents/s" in lines[1] and "examples/s" in lines[1]
    assert lines[2].startswith("1 of 2 shards written; still to write: 0/2")
    assert lines[2].endswith("--seed 1 --shard 0/2)")
    status, stdout, stderr = run_tool("create_pretraining_data", *args, "--shard", "0/2")
    assert status == 0, stderr
    assert stdout.strip().splitlines()[-1].startswith("all 2 shards written")
    assert read_metadata(str(out))["num_instances"] == corpus["whole"]["num_instances"]
    status, _, stderr = run_tool("create_pretraining_data", *args, "--shard", "2/2")
    assert status == 1 and "Received: shard 2/2" in stderr
    status, _, stderr = run_tool("create_pretraining_data", *args, "--shard", "0/2",
                                 "--num-workers", 2)
    assert status == 1 and "--num-workers" in stderr


def read_json(path):
    with open(path) as f:
        return json.load(f)


def test_shards_on_an_object_store(corpus):
    # ram:// is TF's in-memory file system, standing in for gs:// (no local staging).
    out = f"ram://shards-{uuid.uuid4().hex}/data"
    _write_apart(corpus, out, 2, order=[1, 0])
    assert sorted(tf.io.gfile.listdir(out)) == [
        "metadata.json", "pretraining-00000-of-00002.json", "pretraining-00000-of-00002.tfrecord",
        "pretraining-00001-of-00002.json", "pretraining-00001-of-00002.tfrecord", "vocab.txt"]
    assert read_metadata(out)["num_instances"] == corpus["whole"]["num_instances"]
    assert _write_apart(corpus, out, 2, order=[0])[0]["skipped"]


_SHARD = """
import json, sys
from keras_bert.data import PretrainingDataConfig, create_pretraining_shard
create_pretraining_shard([sys.argv[1]], sys.argv[2], sys.argv[3],
                         PretrainingDataConfig(**json.loads(sys.argv[4])),
                         shard_index=1, num_shards=2)
"""


@pytest.mark.slow  # A fresh process (TensorFlow's import) per step, SIGKILLed there.
@pytest.mark.parametrize("step", ["shard:staged", "shard:moved"])
def test_a_shard_killed_at_any_step_reads_as_missing_and_a_rerun_completes(corpus, tmp_path,
                                                                           step):
    from tests.writer_harness import kill_at

    out = tmp_path / "data"
    _write_apart(corpus, out, 2, order=[0])
    kill_at(step, _SHARD, corpus["corpus"], out, corpus["vocab"], json.dumps(CONFIG.__dict__),
            tmp_path=tmp_path)
    assert not (out / "pretraining-00001-of-00002.json").exists()
    assert (out / "pretraining-00001-of-00002.tfrecord").exists() == (step == "shard:moved")
    with pytest.raises(FileNotFoundError, match=r"pretraining-00001-of-00002\.tfrecord.*"
                                                r"\n.* --shard 1/2$"):
        read_metadata(str(out))
    result = _write_apart(corpus, out, 2, order=[1])[1]
    assert not result["skipped"] and result["missing"] == []
    assert read_metadata(str(out))["num_instances"] == corpus["whole"]["num_instances"]
    assert not [n for n in os.listdir(out) if n.startswith(".tmp-")]  # The dead writer's.
