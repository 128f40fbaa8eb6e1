"""What the Ray test's workers and controller see, written to files (no TensorFlow at import).

Ray pickles these by reference: its worker and controller processes import
this module (PYTHONPATH is the repository root), so it imports nothing heavy.
"""

import json
import os

from ray.train import UserCallback


def probed_loop(config):
    """Notes Ray's environment in this worker, then runs keras_bert's loop."""
    probe = config.pop("probe_dir")
    seen = {"legacy_keras_at_start": os.environ.get("TF_USE_LEGACY_KERAS"),
            "tf_config": json.loads(os.environ.get("TF_CONFIG", "null"))}
    from keras_bert.training.ray_train import train_loop_per_worker

    seen["legacy_keras_after_import"] = os.environ.get("TF_USE_LEGACY_KERAS")
    index = seen["tf_config"]["task"]["index"]
    with open(os.path.join(probe, f"worker-{index}.json"), "w") as f:
        json.dump(seen, f)
    train_loop_per_worker(config)


class ReportLog(UserCallback):
    """Appends each report Ray's controller receives (every worker's metrics) to a file."""

    def __init__(self, path):
        self.path = path

    def after_report(self, run_context, metrics, checkpoint):
        with open(self.path, "a") as f:
            f.write(json.dumps({"metrics": metrics, "checkpoint": checkpoint is not None}) + "\n")
