"""The named steps of keras_bert's writers: where a test or a debugger can stop one.

Every writer calls `reached(name)` (or `reached(name, step)`) between the steps
of its commit. The function does nothing; it exists so that a test, or a
debugger's breakpoint, can stop a writer at an exact step from outside,
e.g. `monkeypatch.setattr(keras_bert.steps, "reached", stop)` (see
tests/writer_harness.py, which pauses a writer process there for a SIGKILL).
Writers call it as `steps.reached(...)`, so one patch reaches them all.

Steps:
- `keras_bert.files`: "staged" (the new version complete, the old one
  untouched), "old-moved" (only where a rename is not one step: the old
  version parked in the staging folder), "committed" (the new version in
  place, its staging not yet removed), "claimed" (an export's next version
  claimed); `keras_bert.export.layout`: "resolved" (that version chosen);
- `keras_bert.storage` (the object-store protocol): "remote:uploading" (one
  file staged), "staged", "remote:unmarked", "remote:copied", "committed";
- `keras_bert.data`: "data:staged", "data:committed", "data:swap",
  "shard:staged", "shard:moved";
- `keras_bert.training.trainer` (with the training step as `step`):
  "checkpoint-begin", "checkpoint-data-written", "checkpoint-committed".
"""


def reached(name, step=None):
    """Called by a writer at its step `name` (and training step `step`); does nothing."""
