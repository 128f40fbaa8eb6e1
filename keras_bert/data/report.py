"""DataReport: what a task reader skipped or repaired, and where ("FILE:LINE: reason"),
counted by reason; `summary()` gives the totals for the end of a run."""

import collections
import logging

logger = logging.getLogger("keras_bert.data")


class DataReport:
    """Counts and locates skipped and repaired rows of one input.

    Args:
        source: str, the input's name (a path, or "tfds:glue/sst2").
        max_logged: int, how many messages to log one by one; the rest are
            only counted (a corrupt file must not flood the log). 0 logs
            none: the caller reports the counts (`summary()`).

    Example:
    >>> report = DataReport("train.csv")
    >>> report.skip("train.csv:7", "empty text")
    >>> report.kept()
    >>> report.summary()
    'train.csv: kept 1 of 2 rows; skipped 1 (empty text: 1)'
    """

    def __init__(self, source, max_logged=20):
        self.source = source
        self.max_logged = max_logged
        self.num_kept = 0
        self.skipped = collections.Counter()  # reason -> count
        self.repaired = collections.Counter()
        self.messages = []  # Every "where: reason" string, in order.

    def _log(self, message):
        self.messages.append(message)
        if len(self.messages) <= self.max_logged:
            logger.warning(message)
        elif self.max_logged and len(self.messages) == self.max_logged + 1:
            logger.warning(
                "%s: more problems; only counting them from here on.", self.source
            )

    def kept(self, count=1):
        """Counts rows that made it into the examples."""
        self.num_kept += count

    def skip(self, where, reason, detail=""):
        """Reports a row left out. `reason` is the short key counted in the summary."""
        self.skipped[reason] += 1
        self._log(f"{where}: skipped: {reason}{': ' + detail if detail else ''}")

    def repair(self, where, reason, detail=""):
        """Reports a row kept after a fix (e.g. invalid UTF-8 replaced)."""
        self.repaired[reason] += 1
        self._log(f"{where}: {reason}{': ' + detail if detail else ''}")

    @property
    def num_skipped(self):
        return sum(self.skipped.values())

    def summary(self):
        """One line: rows kept, skipped (by reason) and repaired (by reason)."""
        total = self.num_kept + self.num_skipped
        text = f"{self.source}: kept {self.num_kept} of {total} rows"
        for label, counts in (("skipped", self.skipped), ("repaired", self.repaired)):
            if counts:
                parts = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
                text += f"; {label} {sum(counts.values())} ({parts})"
        return text
