"""The 2009 study (Lutz, "Learning Python"'s file-I/O timings): its ops, its published ratios.

The study timed 14 ways of reading and writing a file under Python 2.6 and 3.0;
its published seconds are in ``scripts/data/lutz2009-published.csv``. This
module holds its op order, reads that file and words a comparison the way the
study did ("3.13 is 2.41 times slower than 2.7").
"""
from __future__ import annotations

import csv

from iomatrix import paths, stats

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
# encodes on write. The suites that time the builtin open() in text mode (lutz2009, as the
# study did; manyfiles, as scripts do) therefore time another operation on 2.7 than on 3.x;
# the suites that need an encoding use io.open on 2.7 (iobench, mmapio's text reads,
# textio), which decodes, so their 2.7 -> 3.x steps compare like with like.
BUILTIN_TEXT_CATEGORIES = {"lutz2009": ("read-text", "write-text"), "manyfiles": ("manyfiles",)}


def undecoded_on_2x(suite: str, category: str) -> bool:
    """Whether the op, under a 2.x interpreter, neither decodes nor encodes (see above)."""
    return category in BUILTIN_TEXT_CATEGORIES.get(suite, ())


def bytes_on_2x_note(op: str, category: str) -> str:
    """How a page says it, for a reading or a writing op."""
    if category.startswith("write") or "_write" in op or op.startswith("write"):
        return "2.7 writes bytes here, 3.x encodes"
    return "2.7 reads bytes here, 3.x decodes"
