"""Embeddings written for other programs: JSON Lines or a .npy array (tools/predict.py).

- JSON Lines (any name but .npy, or stdout): one object per text, in input
  order, `{"text": str, "embedding": [D floats]}`; each float is the
  float32 value exactly (`json` writes the shortest repr of its float64).
- `.npy`: one float32 array [N, D] in input order (`numpy.load`), what a
  vector index (FAISS, ScaNN, a database) takes; the texts are the input's.

Standard library and numpy at import: tools/predict.py on an export loads
TensorFlow and tensorflow-text only. A local file is written through
`keras_bert.files.write_bytes_atomic` (a staging file, then a rename: a
reader never sees half of one); a store's path (gs://) is written by the
store.
"""

import json

import numpy as np

from keras_bert import storage

EMBEDDING = "embedding"  # The output of a text embedder's export (and its Python predict).


def json_lines(texts, embeddings):
    """Yields one JSON line (no newline) per text: {"text", "embedding"}."""
    for text, row in zip(texts, embeddings):
        yield json.dumps({"text": text, EMBEDDING: row.tolist()}, ensure_ascii=False)


def write_embeddings(texts, embeddings, path=None, stdout=None):
    """Writes `embeddings` (float [N, D], row i of texts[i]) as `.npy` or JSON Lines.

    Args:
        texts: list of str, N.
        embeddings: float array [N, D].
        path: str, "*.npy" (an array), another file name (JSON Lines) or
            None (JSON Lines on `stdout`).
        stdout: a text stream for path None (default sys.stdout).

    Returns:
        str, a one-line summary ("wrote 3 embeddings of 384 floats to x.npy"),
        or None when they went to stdout.
    """
    embeddings = np.asarray(embeddings, "float32")
    if embeddings.ndim != 2 or len(embeddings) != len(texts):
        raise ValueError(f"Expected one embedding row per text: [{len(texts)}, D]. Received: "
                         f"shape {list(embeddings.shape)}.")
    if path is None:
        import sys

        stream = stdout or sys.stdout
        for line in json_lines(texts, embeddings):
            stream.write(line + "\n")
        return None
    import io

    from keras_bert.files import write_bytes_atomic

    storage.check_filesystem(path, flag="--output")
    if storage.isdir(path):
        raise ValueError(f"--output {path} is a folder; name a file: x.npy (an array) or "
                         f"x.jsonl (JSON Lines).")
    if path.lower().endswith(".npy"):
        buffer = io.BytesIO()
        np.save(buffer, embeddings)
        data = buffer.getvalue()
    else:
        data = "".join(line + "\n" for line in json_lines(texts, embeddings)).encode("utf-8")
    write_bytes_atomic(path, data)
    return (f"wrote {len(embeddings)} embeddings of {embeddings.shape[1]} floats to {path}")
