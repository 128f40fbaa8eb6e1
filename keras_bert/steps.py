"""The named steps of keras_bert's writers: where a test or a debugger can stop one.

Every writer calls `steps.reached(name[, step])` between the steps of its
commit. It does nothing: a test or a debugger patches it to stop a writer at
an exact step (tests/writer_harness.py pauses a writer there for a SIGKILL).

Steps:
- `keras_bert.files`: "staged" (the new version complete), "old-moved" (the
  old version parked, where a rename is not one step), "committed" (the new
  version in place), "claimed" (an export's next version claimed);
  `keras_bert.export.layout`: "resolved" (that version chosen);
- `keras_bert.storage` (the object-store protocol): "remote:uploading" (one
  file staged), "staged", "remote:unmarked", "remote:copied", "committed";
- `keras_bert.data`: "data:staged", "data:committed", "data:swap",
  "shard:staged", "shard:moved";
- `keras_bert.training.trainer` (with the training step as `step`):
  "checkpoint-begin", "checkpoint-data-written", "checkpoint-committed".
"""


def reached(name, step=None):
    """Called by a writer at its step `name` (and training step `step`); does nothing."""
