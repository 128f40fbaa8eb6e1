"""Rows of a labeled text table (CSV, TSV, JSON Lines), for every task reader that reads one.

`table_rows` yields each row as a dict {column: value} with its "FILE:LINE";
the file's structure is checked here, once for all readers:

- CSV / TSV: a header names the columns (a column twice, or one the reader
  needs missing, is an error at FILE:1). A stray quote is reported where it
  opened and reading resumes at the next line (`delimited_rows`); a row with
  the wrong number of columns is reported and skipped ("malformed row").
- JSON Lines: one object per line; a line that is not a JSON object is
  reported and skipped ("malformed row"); a key twice is an error.

`row_text` checks a text cell the same way for every reader.
"""

import csv
import json

from keras_bert.data.text_data import read_lines


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs):
    """`json.loads` hook: a dict, or _DuplicateKey (json would keep the last value)."""
    values = {}
    for key, value in pairs:
        if key in values:
            raise _DuplicateKey(key)
        values[key] = value
    return values


def _unterminated(lines, delimiter):
    """True if the CSV record made of `lines` (str) ends inside a quoted field."""
    try:
        for _ in csv.reader(lines, delimiter=delimiter, strict=True):
            pass
    except csv.Error as e:
        return "unexpected end of data" in str(e)
    return False


def delimited_rows(path, delimiter, report, label_column=None):
    """Yields (first line number, list of fields), header included.

    A CSV record may span lines (a quoted text with line breaks). One whose
    quote never closes, whose `label_column` takes in a line break or that
    has the wrong number of columns holds a stray quote that would swallow
    the rows after it: it is reported at the line where the quote opened,
    skipped, and reading resumes at the next line.
    """
    lines = list(read_lines(path, report))
    # TSV (GLUE's format) has no quoting: a '"' is text. CSV quotes with '"'.
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    label_index = width = None
    first = 0  # Index in `lines` of the next record's first line.
    while first < len(lines):
        consumed = []

        def numbered(start=first):
            for i in range(start, len(lines)):
                consumed.append(i)
                yield lines[i][1]

        reader = csv.reader(numbered(), delimiter=delimiter, quoting=quoting, strict=False)
        resync = False
        while not resync:
            before = len(consumed)
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                start = lines[consumed[before]][0] if before < len(consumed) else lines[-1][0]
                report.skip(f"{path}:{start}", "malformed row", f"CSV error: {e}")
                first = consumed[-1] + 1 if consumed else len(lines)
                resync = True
                continue
            span = consumed[before:]
            start, end = lines[span[0]][0], lines[span[-1]][0]
            first = span[-1] + 1
            if label_index is None and row:
                names = [name.strip() for name in row]
                label_index = names.index(label_column) if label_column in names else -1
                width = len(names)
            if len(span) > 1:
                problem = None
                if _unterminated([lines[i][1] for i in span], delimiter):
                    problem = "its quote is never closed"
                elif len(row) != width:
                    problem = f"{len(row)} columns, the header has {width}"
                elif 0 <= label_index < len(row) and any(c in row[label_index] for c in "\r\n"):
                    problem = f"the quote takes line breaks into column {label_column!r}"
                if problem:
                    report.skip(
                        f"{path}:{start}", "malformed row",
                        f"a quote opened on this line would run over lines {start}-{end}: "
                        f"{problem}; reading on from line {start + 1}")
                    first = span[0] + 1
                    resync = True
                    continue
            yield start, row


def table_rows(path, file_format, columns, report, label_column=None,
               column_flags="--text-column and --label-column"):
    """Yields ("FILE:LINE", {column: value}) for each row of a CSV, TSV or JSON Lines file;
    bad rows are reported to `report` (see the module docstring), blank lines passed over.

    Args:
        path: str, the file (checked to be text by the caller).
        file_format: "csv", "tsv" or "jsonl".
        columns: list of str, the columns the reader needs (CSV / TSV: a
            header without one of them is an error naming `column_flags`).
        report: `keras_bert.data.report.DataReport`.
        label_column: str or None, the column a stray quote must not run
            into (CSV: a label that takes in a line break).
        column_flags: str, the flags that name the columns, for that error.
    """
    if file_format == "jsonl":
        for number, line in read_lines(path, report):
            where = f"{path}:{number}"
            if not line.strip():
                continue
            try:
                values = json.loads(line, object_pairs_hook=_unique_keys)
            except json.JSONDecodeError as e:
                report.skip(where, "malformed row", f"invalid JSON ({e.msg} at column {e.colno})")
                continue
            except _DuplicateKey as e:
                raise ValueError(
                    f"{where}: the object has key {e.args[0]!r} twice; which value is meant is "
                    f"ambiguous. Keep one of them."
                ) from None
            if not isinstance(values, dict):
                report.skip(where, "malformed row",
                            f"a JSON {type(values).__name__}, not an object")
                continue
            yield where, values
        return

    rows = delimited_rows(path, "," if file_format == "csv" else "\t", report, label_column)
    header = next(rows, None)
    if header is None:
        raise ValueError(f"{path} is empty: expected a header line naming the columns {columns}.")
    header = [name.strip() for name in header[1]]
    # dict(zip(header, row)) would keep the last of two same-named columns.
    repeated = [c for c in dict.fromkeys(header) if header.count(c) > 1 and c]
    if repeated:
        raise ValueError(
            f"{path}:1: the header names column {repeated[0]!r} {header.count(repeated[0])} "
            f"times ({header}); which one is meant is ambiguous. Rename the columns so each "
            f"name is used once."
        )
    missing = [c for c in columns if c not in header]
    if missing:
        raise ValueError(
            f"{path}:1: the header {header} has no column {missing[0]!r}. Name the columns with "
            f"{column_flags}."
        )
    empty = True
    for number, row in rows:
        where = f"{path}:{number}"
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # A blank line.
        empty = False
        if len(row) != len(header):
            report.skip(where, "malformed row", f"{len(row)} columns, the header has {len(header)}")
            continue
        yield where, dict(zip(header, row))
    if empty and not report.num_skipped:
        raise ValueError(f"{path} has a header and no rows: add the examples below the header "
                         f"line {header}.")


def row_text(values, column, where, report):
    """The text in `values[column]`, or None after reporting the row as a "malformed
    row" (no such column, not a string) or an "empty text"."""
    value = values.get(column)
    if value is None:
        report.skip(where, "malformed row", f"no {column!r}")
        return None
    if not isinstance(value, str):
        report.skip(where, "malformed row", f"{column!r} is {type(value).__name__}, not text")
        return None
    if not value.strip():
        report.skip(where, "empty text", f"column {column!r}")
        return None
    return value
