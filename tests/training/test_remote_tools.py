"""tools/finetune.py and tools/export.py with ram:// paths (issue 38 item 4).

ram:// is this process' memory, so the tools run in this process (`run_tool`).
A remote --output is protected as a local one (no --overwrite: refused, nothing
replaced), and the export tool reads back what it wrote remotely.
"""

import secrets

from keras_bert import storage
from tests.conftest import run_tool
from tests.training.finetune_fixtures import make_model_dir, sentiment_rows



def _csv(path, rows):
    storage.write_bytes(path, ("text,label\n" + "".join(f"{t},{y}\n" for t, y in rows)).encode())
    return path


def test_finetune_and_export_tools_write_ram_and_refuse_to_replace_it(tmp_path):
    ram = f"ram://tools-{secrets.token_hex(4)}"
    model = make_model_dir(str(tmp_path / "model"))
    tuned = f"{ram}/models/sentiment"
    finetune = ["--task", "classification", "--model", model,
                "--train", _csv(f"{ram}/train.csv", sentiment_rows(32, 0)),
                "--eval", _csv(f"{ram}/dev.csv", sentiment_rows(16, 1)),
                "--output", tuned, "--epochs", "1", "--batch-size", "8",
                "--max-seq-length", "16", "--jit-compile", "off"]
    status, out, err = run_tool("finetune", *finetune)
    assert status == 0, err
    assert f"wrote {tuned}" in out
    manifest = storage.committed_manifest(tuned)
    assert manifest and "model.weights.h5" in manifest["files"]

    # Again without --overwrite: refused before any work, the committed model untouched.
    status, out, err = run_tool("finetune", *finetune)
    assert status == 1 and "exists; pass --overwrite" in err
    assert storage.committed_manifest(tuned) == manifest

    status, out, err = run_tool("export", "--model", tuned, "--output", f"{ram}/exports/sentiment",
                                "--no-tune")
    assert status == 0, err
    assert storage.committed_manifest(f"{ram}/exports/sentiment/1")
    assert f"{ram}/exports/sentiment/1" in out
