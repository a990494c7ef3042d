"""The 2009 study (Lutz, "Learning Python"'s file-I/O timings): its ops, its published ratios.

The study timed 14 ways of reading and writing a file under Python 2.6 and 3.0;
its published seconds are in ``scripts/data/lutz2009-published.csv``. This
module holds its op order, reads that file and words a comparison the way the
study did ("3.13 is 2.41 times slower than 2.7").
"""
from __future__ import annotations

import csv
import functools

from iomatrix import paths, stats
from iomatrix.measuring import selection

PUBLISHED = paths.DATA_DIR / "lutz2009-published.csv"

ORDER = ["read_byLines_textMode", "read_byLines_binaryMode", "read_byBlocks_textMode",
         "read_byBlocks_binaryMode", "read_allAtOnce_textMode", "read_allAtOnce_binaryMode",
         "read_byBlocks_binaryMode[large.bin]", "read_allAtOnce_binaryMode[large.bin]",
         "write_byLines_textMode", "write_byLines_binaryMode", "write_byBlocks_textMode",
         "write_byBlocks_binaryMode", "write_allAtOnce_textMode",
         "write_allAtOnce_binaryMode"]


def op_rank(op: str) -> int:
    return ORDER.index(op) if op in ORDER else len(ORDER)


def load_published() -> dict:
    """{op: (seconds under 2.6, seconds under 3.0)} from the study's published timings."""
    out: dict = {}
    with open(PUBLISHED, newline="") as f:
        for row in csv.DictReader(f):
            out.setdefault(row["operation"], {})[row["python"]] = float(row["seconds"])
    return {op: (v["2.6"], v["3.0"]) for op, v in out.items() if "2.6" in v and "3.0" in v}


def sentence(op: str, series: str, baseline: str, comparison: stats.Comparison) -> str:
    """``[op] 3.13 is 2.41 times slower than 2.7``, with the verdict when it is not a finding."""
    if comparison.ratio >= 1:
        text = f"{series} is {comparison.ratio:.2f} times slower than {baseline}"
    else:
        text = f"{series} is {1 / comparison.ratio:.2f} times faster than {baseline}"
    if comparison.significant is None:
        text += " (too few processes to test)"
    elif not comparison.significant:
        text += " (not significant)"
    return f"[{op}] {text}"


# On 2.x the builtin open() in text mode is the C stdio file object: it returns and takes
# bytes (str) and decodes or encodes nothing, where 3.x's text mode decodes into str and
# encodes on write. An op that opens its file that way (lutz2009's text modes, as the study
# did; manyfiles, as scripts do) times another operation on 2.7 than on 3.x; an op that uses
# io.open or codecs.open on 2.7 decodes, so its 2.7 -> 3.x step compares like with like. Each
# suite says which API each of its text ops uses on 2.7: its literal TEXT_API_27, by op name
# or by category (the name wins), read here with ast (measuring.selection.declared), and
# checked against what the ops call under 2.7 (tests/test_controls.py).
BUILTIN_OPEN = "open"
# Before the suites declared it: the categories whose ops used the builtin open on 2.7.
BUILTIN_TEXT_CATEGORIES = {"lutz2009": ("read-text", "write-text"), "manyfiles": ("manyfiles",)}


@functools.lru_cache(maxsize=None)
def declared_text_api(suite: str) -> dict | None:
    """The suite's TEXT_API_27 ({op or category: API on 2.7}); None for a suite that does not
    declare it (or is not in suites/: a run's suite that no longer exists)."""
    if suite not in selection.available_suites():
        return None
    found = selection.declared(suite, "TEXT_API_27")
    return dict(found) if found is not None else None


def text_api_27(suite: str, category: str, op: str | None = None) -> str | None:
    """The API the op opens its text file with on 2.7 ("open", "io.open", "codecs.open",
    "mmap"), from its suite's declaration; None for an op that reads or writes no text."""
    declared = declared_text_api(suite)
    if declared is None:
        return BUILTIN_OPEN if category in BUILTIN_TEXT_CATEGORIES.get(suite, ()) else None
    if op is not None and op in declared:
        return declared[op]
    return declared.get(category)


def undecoded_on_2x(suite: str, category: str, op: str | None = None) -> bool:
    """Whether the op, under a 2.x interpreter, neither decodes nor encodes (see above)."""
    return text_api_27(suite, category, op) == BUILTIN_OPEN


def bytes_on_2x_note(op: str, category: str) -> str:
    """How a page says it, for a reading or a writing op."""
    if category.startswith("write") or "_write" in op or op.startswith("write"):
        return "2.7 writes bytes here, 3.x encodes"
    return "2.7 reads bytes here, 3.x decodes"
