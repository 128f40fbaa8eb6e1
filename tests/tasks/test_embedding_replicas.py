"""MultipleNegativesRankingLoss under a strategy ranks the global batch, as one process does."""

import json
import os
import subprocess
import sys

import numpy as np

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "embedding_replicas_worker.py")


def test_replicas_gather_the_in_batch_negatives_of_the_global_batch():
    done = subprocess.run([sys.executable, WORKER], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    one, halves = result["one"], result["halves"]
    assert "error" not in result["mirrored"], result["mirrored"]["error"]
    # Two replicas of 4 pairs: the loss and gradient of one device's batch of 8.
    np.testing.assert_allclose(result["mirrored"]["loss"], one["loss"], rtol=1e-5)
    np.testing.assert_allclose(result["mirrored"]["gradient"], one["gradient"], atol=1e-5)
    # Not what each replica's own share gives (the data tells the two apart).
    assert abs(halves["loss"] - one["loss"]) > 1e-2
    # An XLA-compiled replica step cannot gather: it falls back to its share, and says so.
    assert "error" not in result["mirrored_xla"], result["mirrored_xla"]["error"]
    np.testing.assert_allclose(result["mirrored_xla"]["loss"], halves["loss"], rtol=1e-5)
    np.testing.assert_allclose(result["mirrored_xla"]["gradient"], halves["gradient"],
                               atol=1e-5)
    assert "each replica ranks only its own share" in done.stderr
