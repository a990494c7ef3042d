"""Markdown for the reports: escaping, code spans, tables and the formats of numbers.

Every generated page (report, compare, history) formats a ratio, a time and a
table here, so a ratio reads the same on every page.
"""
from __future__ import annotations

import html
import math

from tabulate import tabulate

from iomatrix import stats

SLOWER, FASTER = "▲", "▼"
LIST_AT_MOST = 8          # names listed inline before "and N more"
MAX_COLUMNS = 6           # value columns per table: a ratio cell with its interval is ~24 chars


def md(text) -> str:
    """Escape a metadata string for a markdown table cell: no |, newline or HTML survives."""
    text = html.escape(str(text), quote=False)
    text = text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    for char in "`*_[]":
        text = text.replace(char, "\\" + char)
    return text


def code(text) -> str:
    """An op or label name as a code span; a | or newline still cannot break the table."""
    text = str(text).replace("`", "'").replace("\r", " ").replace("\n", " ").replace("|", "\\|")
    return f"`{text}`"


def anchor(text: str) -> str:
    """The id GitHub gives a heading: lower case, spaces to '-', most punctuation dropped."""
    kept = "".join(c for c in str(text).lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def fmt_number(value: float) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.2f}"


def fmt_interval(comparison: stats.Comparison | None) -> str:
    """``[1.25, 1.40]``, or ``[n/a]`` when the run has too few processes for one."""
    if comparison is None or comparison.low is None:
        return "[n/a]"
    return f"[{comparison.low:.2f}, {comparison.high:.2f}]"


def fmt_ratio(comparison: stats.Comparison | None, threshold: float | None = None,
              interval: bool = True) -> str:
    """``1.32 [1.25, 1.40] ▲``: the estimate, its interval, a marker when the interval
    excludes 1; bold when that change is also a regression beyond ``threshold``."""
    if comparison is None:
        return "—"
    cell = f"{comparison.ratio:.2f}"
    if interval:
        cell += " " + fmt_interval(comparison)
    if comparison.significant:
        cell += " " + (SLOWER if comparison.ratio > 1 else FASTER)
        if threshold is not None and comparison.regression(threshold):
            cell = f"**{cell}**"
    return cell


def fmt_time(seconds: float) -> str:
    if seconds is None or math.isnan(seconds):
        return "—"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def table(rows, headers, align=None) -> str:
    align = align or ["left"] + ["right"] * (len(headers) - 1)
    return tabulate(rows, headers=headers, tablefmt="pipe", disable_numparse=True, colalign=align)


def wide_table(rows: list, columns: list, first: str = "op", max_columns: int = MAX_COLUMNS) \
        -> list[str]:
    """``rows``: (title, key); ``columns``: (header, cell(key) -> str). Split into tables of
    at most ``max_columns`` value columns, each with the row titles, so none is too wide."""
    lines = []
    for start in range(0, len(columns), max_columns):
        part = columns[start:start + max_columns]
        body = [[title] + [cell(key) for _, cell in part] for title, key in rows]
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
    from iomatrix.analysis import CONTEXT_FIELDS
    out = []
    for field, title in CONTEXT_FIELDS:
        values = [c.get(field) for c in contexts]
        if None in values:
            continue
        distinct = list(dict.fromkeys(values))
        if len(distinct) > 1:
            out.append(f"{title} ({' → '.join(code(v) for v in distinct)})")
    return out
