"""tools/finetune.py --task text_embedding and tools/predict.py on embedders, end to end on a
tiny model (in this process): pair files with hard negatives and duplicate positives, scored
pairs, the per-epoch metrics and best model, bad files, embeddings out as .npy / JSON Lines."""

import csv
import json
import os

import numpy as np
import pytest

from tests.conftest import run_tool

# Slow tier: fine-tuning runs and an export.
pytestmark = pytest.mark.slow

WORDS = "paris france capital city river seine john smith lives works acme corp".split()


def pair_rows(count, seed=0):
    import random

    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        words = rng.sample(WORDS, 3)
        rows.append({"anchor": " ".join(words), "positive": " ".join(reversed(words)),
                     "negative": " ".join(rng.sample(WORDS, 3))})
    return rows


def write_csv(path, rows, fields=("anchor", "positive", "negative")):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(rows)
    return str(path)


@pytest.fixture(scope="module")
def tuned(tiny_model_dir, tmp_path_factory):
    """One run on pairs with a hard-negative column: (status, stdout, stderr, output dir)."""
    root = tmp_path_factory.mktemp("embedding_tool")
    rows = pair_rows(24)
    rows[5]["positive"] = rows[4]["positive"]  # A duplicate positive.
    train = write_csv(root / "train.csv", rows + [{"anchor": "", "positive": "x",
                                                   "negative": "y"}])
    held_out = write_csv(root / "eval.csv", pair_rows(12, seed=1))
    output = str(root / "embedder")
    status, out, err = run_tool(
        "finetune", "--task", "text_embedding", "--model", tiny_model_dir, "--train", train,
        "--eval", held_out, "--negative-columns", "negative", "--output", output,
        "--epochs", "2", "--batch-size", "8", "--early-stopping-patience", "0",
        "--no-tensorboard", "--progress", "lines")
    return status, out, err, output, root


def test_pairs_train_and_report_metrics_every_epoch(tuned):
    from keras_bert.tasks import BertTextEmbedder

    status, out, err, output, _ = tuned
    assert status == 0, err
    assert "train.csv: kept 24 of 25 rows; skipped 1 (empty text: 1)" in out
    assert "1 pairs repeat the positive text of another pair" in out
    lines = [line for line in out.splitlines() if " eval: " in line]
    assert [line.split(" eval:")[0] for line in lines] == ["epoch 1", "epoch 2"]
    for line in lines:
        assert "recall@1 " in line and "recall@10 " in line and "mrr " in line
    with open(os.path.join(output, "task.json")) as f:
        info = json.load(f)
    assert info["task"] == "text_embedding" and info["early_stopping_metric"] == "mrr"
    assert info["scored"] is False and 0 < info["eval_metrics"]["mrr"] <= 1
    best = max(lines, key=lambda line: float(line.split("mrr ")[1].split()[0]))
    assert f"epoch {info['epoch']} eval" in best  # The best epoch is the one saved.
    model = BertTextEmbedder.from_pretrained(output)
    assert model.predict(["paris france"]).shape == (1, 16)


def test_predict_writes_npy_and_json_lines_from_a_model_dir_and_an_export(tuned):
    from keras_bert.export import export_model
    from keras_bert.tasks import BertTextEmbedder

    _, _, _, output, root = tuned
    texts = ["paris france capital", "john smith works at acme", ""]
    (root / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    expected = BertTextEmbedder.from_pretrained(output).predict(texts)
    status, out, err = run_tool("predict", "--model", output, "--input", root / "texts.txt",
                                "--output", root / "x.npy")
    assert status == 0, err
    assert f"wrote 3 embeddings of 16 floats to {root / 'x.npy'}" in err
    np.testing.assert_allclose(np.load(root / "x.npy"), expected, atol=1e-6)
    export = export_model(output, str(root / "exports" / "embedder"), warmup=False)
    status, out, err = run_tool("predict", "--model", export, *texts[:2])
    assert status == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [row["text"] for row in rows] == texts[:2]
    np.testing.assert_allclose([row["embedding"] for row in rows], expected[:2], atol=1e-5)


def test_scored_pairs_train_on_spearman(tiny_model_dir, tmp_path):
    rows = pair_rows(30, seed=2)
    with open(tmp_path / "sts.jsonl", "w", encoding="utf-8") as f:
        for i, row in enumerate(rows):
            second = row["positive"] if i % 2 else row["negative"]
            f.write(json.dumps({"text_a": row["anchor"], "text_b": second,
                                "score": 4.5 if i % 2 else 0.5}) + "\n")
    output = str(tmp_path / "sts")
    status, out, err = run_tool(
        "finetune", "--task", "text_embedding", "--model", tiny_model_dir, "--train",
        tmp_path / "sts.jsonl", "--eval-fraction", "0.3", "--anchor-column", "text_a",
        "--positive-column", "text_b", "--score-column", "score", "--score-scale", "5",
        "--output", output, "--epochs", "1", "--batch-size", "8", "--no-tensorboard")
    assert status == 0, err
    assert "epoch 1 eval: spearman " in out
    with open(os.path.join(output, "task.json")) as f:
        info = json.load(f)
    assert info["scored"] is True and set(info["eval_metrics"]) == {"spearman"}


@pytest.mark.parametrize("header, flags, message", [
    ("text", (), "one column ('text')"),
    ("anchor,answer", (), "no column 'positive'"),
    ("anchor,positive", ("--score-column", "score"), "no column 'score'"),
])
def test_bad_pair_files_stop_with_the_file_and_the_way_out(tiny_model_dir, tmp_path, header,
                                                           flags, message):
    path = tmp_path / "pairs.csv"
    path.write_text(header + "\n" + ",".join(["a"] * len(header.split(","))) + "\n")
    status, _, err = run_tool(
        "finetune", "--task", "text_embedding", "--model", tiny_model_dir, "--train", path,
        "--eval", path, "--output", tmp_path / "out", *flags)
    assert status == 1
    assert message in err and f"{path}:1" in err and "--anchor-column" in err
