"""Markdown for the reports: escaping, code spans, tables and the formats of numbers.

Every generated page (report, compare, history) formats a ratio, a time and a
table here, so a ratio reads the same on every page.
"""
from __future__ import annotations

import html
import math
import re

from tabulate import tabulate

from iomatrix import stats
# The two escaping functions (md for text, code for a name as code) live in the base stage, so
# analysing's counts tables use them too; every page imports them from here.
from iomatrix.markup import (  # noqa: F401
    NARROW_OP_LINE, OP_LINE, code, code_lines, md, url, visible)

SLOWER, FASTER = "▲", "▼"
LIST_AT_MOST = 8          # names listed inline before "and N more"
MAX_COLUMNS = 6           # value columns per table at most, even when narrow cells would fit more
NBSP = "\u00a0"           # a space a line never breaks at: "2.17 [2.13, 2.21] ▲" stays one piece

# GitHub's page: a content column of 1012 px (at 1280 px), table cells padded 6px 13px with a
# 1 px border. 8.5 px is a conservative width of one character of its 16 px font (digits and
# the 13.6 px code font are narrower), so a table estimated within the column fits in it.
CONTENT_WIDTH_PX = 1012
CHAR_PX = 8.5
CELL_PADDING_PX = 27


def anchor(text: str) -> str:
    """The id GitHub gives a heading: lower case, spaces to '-', most punctuation dropped."""
    kept = "".join(c for c in str(text).lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def nowrap(text: str) -> str:
    """``text`` with its spaces made no-break, so a ratio, a step or a value with its unit
    never wraps inside a table cell."""
    return str(text).replace(" ", NBSP)


def row_id(op: str) -> str:
    """The id of an op's row on a suite page (``op-read_bylines_textmode``): lower case, every
    character but letters, digits and ``_`` turned into ``-``. GitHub keeps such ids (it
    prefixes them with ``user-content-`` and resolves ``#op-...`` to them)."""
    kept = re.sub(r"[^a-z0-9_]+", "-", str(op).lower()).strip("-")
    return f"op-{kept}"


def row_anchor(op: str) -> str:
    """The anchor a row's first cell carries, so a link can land on that row."""
    return f'<a id="{row_id(op)}"></a>'


def visible_text(cell: str) -> str:
    """What a markdown cell shows: no HTML tags, link targets, code or emphasis marks."""
    text = re.sub(r"<[^>]*>", " ", str(cell))
    text = re.sub(r"\[((?:`[^`]*`|[^\]`])*)\]\([^)]*\)", r"\1", text)
    text = text.replace("**", "").replace("`", "")
    text = re.sub(r"\\([!-/:-@[-`{-~])", r"\1", text)       # md()'s backslash escapes
    return html.unescape(text)


def min_content_chars(cell: str) -> int:
    """The widest piece of a cell that cannot wrap: a browser never makes a column narrower."""
    text = visible_text(str(cell).replace("<br>", " "))
    return max((len(piece) for piece in text.split(" ")), default=0)


def table_width_px(headers, rows) -> float:
    """The narrowest width a table can take on GitHub's page, estimated (see CHAR_PX)."""
    widths = [min_content_chars(h) for h in headers]
    for row in rows:
        widths = [max(w, min_content_chars(c)) for w, c in zip(widths, row)]
    return sum(w * CHAR_PX + CELL_PADDING_PX for w in widths)


# Every number a page states goes through one of these: a value that is not a finite number
# (None, NaN, inf, a string), or a negative one where none can be (a time, a size, a count, a
# throughput, a ratio), shows as "—" rather than "inf", "nan" or "-1073741824.0". The schema
# refuses such values on read; this is the display side's own guard.
MISSING = "—"


def finite(value) -> bool:
    """A real, finite number (not a bool, None, NaN or inf)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


def fmt_value(value, spec: str = ".2f", signed: bool = False) -> str:
    """``value`` formatted by ``spec``; "—" when it is no finite number, or negative and not
    ``signed`` (a time, size, count or share cannot be)."""
    if not finite(value) or (value < 0 and not signed):
        return MISSING
    return format(value, spec)


def fmt_number(value: float) -> str:
    return fmt_value(value, ".2f", signed=True)


def fmt_throughput(nbytes, seconds, spec: str = ",.0f") -> str:
    """MB/s (10^6 bytes a second) of ``nbytes`` moved in ``seconds``; "—" unless both are
    finite and positive."""
    if not (finite(nbytes) and finite(seconds) and nbytes > 0 and seconds > 0):
        return MISSING
    return fmt_value(nbytes / seconds / 1e6, spec)


def fmt_interval(comparison: stats.Comparison | None) -> str:
    """``[1.25, 1.40]``, or ``[n/a]`` when the run has too few processes for one."""
    if comparison is None or not (finite(comparison.low) and finite(comparison.high)) \
            or comparison.low <= 0 or comparison.high <= 0:
        return "[n/a]"
    return f"[{comparison.low:.2f}, {comparison.high:.2f}]"


def fmt_ratio(comparison: stats.Comparison | None, threshold: float | None = None,
              interval: bool = True, interval_below: bool = False) -> str:
    """``1.32 [1.25, 1.40] ▲``: the estimate, its interval, a marker when the interval
    excludes 1; bold when that change is also a regression beyond ``threshold``. "—" for
    no comparison or a ratio that is no finite positive number. ``interval_below``: the
    interval on a line of its own, for a narrow column (``1.32 ▲<br>[1.25, 1.40]``)."""
    if comparison is None or not finite(comparison.ratio) or comparison.ratio <= 0:
        return MISSING
    cell = f"{comparison.ratio:.2f}"
    if interval and not interval_below:
        cell += " " + fmt_interval(comparison)
    if comparison.significant:
        cell += " " + (SLOWER if comparison.ratio > 1 else FASTER)
    if interval and interval_below:
        cell = nowrap(cell) + "<br>" + nowrap(fmt_interval(comparison))
    if comparison.significant and threshold is not None and comparison.regression(threshold):
        cell = f"**{cell}**"
    return cell


def fmt_time(seconds: float) -> str:
    if not finite(seconds) or seconds < 0:
        return MISSING
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def table(rows, headers, align=None) -> str:
    align = align or ["left"] + ["right"] * (len(headers) - 1)
    return tabulate(rows, headers=headers, tablefmt="pipe", disable_numparse=True, colalign=align)


def wide_table(rows: list, columns: list, first: str = "op", max_columns: int = MAX_COLUMNS,
               anchors: dict | None = None) -> list[str]:
    """``rows``: (title, key); ``columns``: (header, cell(key) -> str). Split into tables of
    at most ``max_columns`` value columns, each with the row titles and as many columns as
    fit in GitHub's column (CONTENT_WIDTH_PX). ``anchors``: {key: id} put in the row titles
    of the first table only (an id names one row)."""
    titles = [title for title, _ in rows]
    cells = [(header, [cell(key) for _, key in rows]) for header, cell in columns]
    parts, part = [], []
    for column in cells:
        widened = part + [column]
        width = table_width_px([first] + [h for h, _ in widened],
                               [[t] + [c[i] for _, c in widened] for i, t in enumerate(titles)])
        if part and (len(widened) > max_columns or width > CONTENT_WIDTH_PX):
            parts.append(part)
            widened = [column]
        part = widened
    if part:
        parts.append(part)
    lines = []
    for k, part in enumerate(parts):
        body = []
        for i, (title, key) in enumerate(rows):
            if k == 0 and anchors and key in anchors:
                title = f'<a id="{anchors[key]}"></a>{title}'
            body.append([title] + [values[i] for _, values in part])
        lines += [table(body, [first] + [header for header, _ in part]), ""]
    return lines


def names(items: list[str], style=code) -> str:
    """The first few names and how many more; 'nothing' for none."""
    if not items:
        return "nothing"
    shown = ", ".join(style(item) for item in items[:LIST_AT_MOST])
    return shown + (f" and {len(items) - LIST_AT_MOST} more" if len(items) > LIST_AT_MOST else "")


def context_differences(contexts: list[dict]) -> list[str]:
    """'host (`vm` → `ci`)' for each field known on every side with more than one value
    (``contexts`` from analysis.context)."""
    from iomatrix.analysing.analysis import CONTEXT_FIELDS
    out = []
    for field, title in CONTEXT_FIELDS:
        values = [c.get(field) for c in contexts]
        if None in values:
            continue
        distinct = list(dict.fromkeys(values))
        if len(distinct) > 1:
            out.append(f"{title} ({' → '.join(code(v) for v in distinct)})")
    return out


def table_cells(line: str) -> list[str]:
    """The cells of one pipe-table line (an escaped ``\\|`` stays inside its cell)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


ZERO = re.compile(r"^(?:0(?:\.0+)?|–|—)$")
# Columns that describe the row rather than hold its values: a table of zeros with them is
# still a table of zeros.
DESCRIBING_COLUMNS = {"bytes/call", "op", "series"}


def collapse_zero_tables(lines: list[str]) -> list[str]:
    """Each pipe table whose values are all 0 becomes one line that says so: a screen of
    zeros says less than "0 everywhere"."""
    out, k = [], 0
    while k < len(lines):
        if not lines[k].startswith("|"):
            out.append(lines[k])
            k += 1
            continue
        end = k
        while end < len(lines) and lines[end].startswith("|"):
            end += 1
        block = lines[k:end]
        headers = table_cells(block[0])
        values = [i for i, h in enumerate(headers) if i > 0 and h not in DESCRIBING_COLUMNS]
        body = [table_cells(line) for line in block[2:]]
        cells = [row[i] for row in body for i in values if i < len(row)]
        if body and cells and all(ZERO.match(c) for c in cells) \
                and any(c.startswith("0") for c in cells):
            out.append(f"{', '.join(headers[i] for i in values)}: 0 everywhere "
                       f"({len(body)} row{'s' * (len(body) > 1)}).")
        else:
            out += block
        k = end
    return out


def details(summary: str, body: list[str]) -> list[str]:
    """A collapsed section (GitHub shows its summary line only until it is opened)."""
    if not body:
        return []
    return ["<details>", f"<summary>{html.escape(summary)}</summary>", ""] + body + \
        ["</details>", ""]


def demoted(lines: list[str]) -> list[str]:
    """A section's headings one level down, for a section inside a collapsed one."""
    return ["#" + line if line.startswith("#") else line for line in lines]
