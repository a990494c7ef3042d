"""One validation layer for every command line, and one way to fail on bad input.

Every tool (``report``, ``compare``, ``history``, the matrix sessions; ``provision`` uses
argparse's own parser with the same exit statuses) parses with argparse and these types, so a
bad value gets the same kind of message everywhere, and the same exit status:

    0  done (compare/the gate: no regression)
    1  the gate found a regression (compare, release, crosscheck only)
    2  bad input: an option, a run id, a file that is not a usable result, an
       output path that cannot be written (one line naming it)
    3  internal error: a bug of iomatrix (the traceback, and "please report"); the
       matrix and bench sessions also end with 3 when an interpreter failed or the
       run could not go on (their report names it): neither a regression nor bad input;
       the machine's failure (a full disk: ``MachineFailure``) is 3 with one line

Bad input found later (a manifest that is not an object, a result file of the
wrong shape) raises ``BadInput`` naming the file and the field; ``main_guard``
turns it into exit 2 with that message. Any other exception is exit 3, never
Python's own exit 1: a CI gate must not read a crash as a regression.
"""
from __future__ import annotations

import argparse
import errno
import math
import os
import re
import stat
import sys
import traceback
from pathlib import Path

EXIT_OK, EXIT_REGRESSION, EXIT_BAD_INPUT, EXIT_INTERNAL_ERROR = 0, 1, 2, 3

# -- names ------------------------------------------------------------------------------
# Every name that reaches a file name or a page is checked by one of these rules, here for
# the command line and in iomatrix.storing.schema for every document read (the schema calls
# name_problem): a name is never a path, never markup, never a file name the run directory
# already uses. The rules (docs/methodology.md, "Names"):
#
#   run id   [A-Za-z0-9][A-Za-z0-9._-]*, at most 80 characters
#   label    [A-Za-z0-9][A-Za-z0-9._-]*, at most 64 characters, not a reserved name
#   series   LABEL, then "+pyio" and "@ALLOCATOR" when it has them (ALLOCATOR a label),
#            and "~KNOB=VALUE" for an ablation's series (measuring.knobs: KNOB lower-case
#            letters and "_", VALUE digits), at most 80 characters
#   suite    [A-Za-z0-9_][A-Za-z0-9_.-]*, at most 80 characters, not a reserved name
#   op       [A-Za-z0-9_][A-Za-z0-9_.+[\]-]*, at most 80 characters (lutz2009's ops carry
#            their file: read_byBlocks_binaryMode[large.bin])
#
# No "+" or "@" in a label: they separate a label from its io stack and its allocator
# condition in series names (3.13+pyio, 3.13@default). No "/", "\\", space, quote, backtick,
# "<", "|" or control character anywhere; a name never starts with "." (no "..", no hidden
# file) or "-" (no option).
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SUITE_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
OP_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+\[\]-]*")
SERIES_PATTERN = re.compile(r"(?P<label>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\+pyio)?"
                            r"(?:@(?P<allocator>[A-Za-z0-9][A-Za-z0-9._-]*))?"
                            r"(?:~[a-z][a-z_]{0,30}=[0-9]{1,12})?")
# A series file is "<label>+pyio.counters.json" and its half-written name adds
# ".<name>.partial-<pid>": 80 characters leave room for both below NAME_MAX (255).
MAX_NAME_LENGTH = 80
MAX_LABEL_LENGTH = 64
# The names a run directory or a report uses for itself (iomatrix.storing.store's layout,
# suites/_results.py): a label, series or suite of that name would make its file clash
# with the run's own, or its page with the report's. "native" is the C reference's series.
# (A suite named like one of the report's own pages, counts or machine, is no clash: that
# page is then named run-counts, iomatrix.reporting.pages.extra_page_name.)
RESERVED_NAMES = frozenset({"manifest", "native", "phase", "parts"})
# ... and the endings of the run's own files (<series>.counters.json, .parts/, phase/).
RESERVED_ENDINGS = (".counters", ".parts", "phase", ".json", ".partial")
# The one series that is no label's: the C reference's, native.json (iomatrix.measuring.native).
NATIVE_SERIES = "native"
NAME_KINDS = {"run id": (NAME_PATTERN, MAX_NAME_LENGTH, False),
              "label": (NAME_PATTERN, MAX_LABEL_LENGTH, True),
              "series": (SERIES_PATTERN, MAX_NAME_LENGTH, True),
              "suite": (SUITE_PATTERN, MAX_NAME_LENGTH, True),
              "op": (OP_PATTERN, MAX_NAME_LENGTH, False)}
NAME_RULES = {"run id": "letters, digits, '.', '_' and '-', starting with a letter or digit",
              "label": "letters, digits, '.', '_' and '-', starting with a letter or digit",
              "series": "a label, then +pyio, @ALLOCATOR and ~KNOB=VALUE when the series has "
                        "them (3.13, 3.13+pyio, 3.13@default, 3.14~buffering=4096)",
              "suite": "letters, digits, '.', '_' and '-', starting with a letter, digit or '_'",
              "op": "letters, digits, '.', '_', '-', '+', '[' and ']', starting with a letter, "
                    "digit or '_'"}
MAX_THRESHOLD = 10.0


class BadInput(ValueError):
    """Bad input from the command line or from disk: exit status 2 with this message."""


class MachineFailure(RuntimeError):
    """The machine failed the tool (a full disk, an I/O error): exit status 3 with this
    one-line message, which says what was written and kept (no traceback: it is no bug)."""


def reserved(name: str) -> bool:
    """Whether ``name`` (any case) is one a run directory or a report uses for itself."""
    lowered = name.lower()
    return lowered in RESERVED_NAMES or lowered.endswith(RESERVED_ENDINGS)


def name_problem(value, kind: str) -> str | None:
    """What is wrong with ``value`` as a name of ``kind`` (a key of NAME_KINDS), or None.

    ``fullmatch``, so a trailing line break is refused; the length first, so a long value
    costs nothing more."""
    pattern, longest, check_reserved = NAME_KINDS[kind]
    if not isinstance(value, str):
        return f"a {kind} is a string, not {type(value).__name__}"
    if len(value) > longest:
        return f"{len(value)} characters; a {kind} has at most {longest}"
    match = pattern.fullmatch(value)
    if not match:
        return f"{'an' if kind == 'op' else 'a'} {kind} uses {NAME_RULES[kind]}"
    if check_reserved and not (kind == "series" and value == NATIVE_SERIES):
        parts = ([match.group("label")] + ([match.group("allocator")]
                                           if match.group("allocator") else [])) \
            if kind == "series" else [value]
        clash = next((part for part in parts if reserved(part)), None)
        if clash is not None:
            return (f"{clash!r} is a reserved name (a run directory or a report uses it "
                    f"for its own files: {', '.join(sorted(RESERVED_NAMES))}, and names "
                    f"ending in {', '.join(RESERVED_ENDINGS)})")
    return None


def checked(value, kind: str, what: str | None = None) -> str:
    """``value`` when it is a valid name of ``kind``, else BadInput naming ``what``."""
    problem = name_problem(value, kind)
    if problem is not None:
        shown = repr(value[:40]) + ("..." if len(value) > 40 else "") \
            if isinstance(value, str) else repr(value)
        raise BadInput(f"{what or kind} {one_line(shown)}: {problem}")
    return value


def checked_name(value: str, what: str) -> str:
    """A run id when ``what`` names one ("run id", "--run-id"), else a label: see checked."""
    return checked(value, "run id" if what.replace("-", " ").strip() == "run id" else "label",
                   what)


def _argparse_type(check, name):
    def convert(text):
        try:
            return check(text)
        except BadInput as exc:
            raise argparse.ArgumentTypeError(str(exc))
    convert.__name__ = name
    return convert


def _number(text: str, convert, what: str):
    try:
        return convert(text)
    except ValueError:
        raise BadInput(f"{text!r} is not {what}")


def finite_float(text: str) -> float:
    value = _number(text, float, "a number")
    if not math.isfinite(value):
        raise BadInput(f"{text!r} is not a finite number")
    return value


def _threshold(text: str) -> float:
    value = finite_float(text)
    if not 0 < value < MAX_THRESHOLD:
        raise BadInput(f"{text!r}: a threshold is a fraction above 0 and below "
                       f"{MAX_THRESHOLD:g} (0.05 = 5%)")
    return value


def _fail_above(text: str) -> float:
    value = finite_float(text)
    if not 0 <= value < MAX_THRESHOLD:
        raise BadInput(f"{text!r}: --fail-above is a fraction from 0 to below "
                       f"{MAX_THRESHOLD:g} (0.05 = 5%; 0: any significant slowdown fails)")
    return value


# The classes a regression can have (analysing.comparisons.EVIDENCE, written for a command
# line; "counts only" is never a regression), and "unclassified": no counts on a side.
FAIL_ON_CLASSES = ("confirmed", "memory", "time-only", "unclassified")


def _fail_on(text: str) -> frozenset | None:
    """``--fail-on``: "any", or comma-separated classes; None means any regression fails."""
    names = [name.strip().replace(" ", "-") for name in text.split(",") if name.strip()]
    if names == ["any"]:
        return None
    unknown = [name for name in names if name not in FAIL_ON_CLASSES]
    if unknown or not names:
        raise BadInput(f"{text!r}: unknown class {', '.join(map(repr, unknown)) or '(none given)'}"
                       f"; valid: any, or one or more of {', '.join(FAIL_ON_CLASSES)}")
    return frozenset(names)


def _positive_seconds(text: str) -> float:
    value = finite_float(text)
    if value <= 0:
        raise BadInput(f"{text!r}: seconds must be more than 0")
    return value


def _positive_int(text: str) -> int:
    value = _number(text, int, "a whole number")
    if value < 1:
        raise BadInput(f"{text!r}: must be at least 1")
    return value


def _run_id(text: str) -> str:
    return checked_name(text, "run id")


def _label(text: str) -> str:
    return checked(text, "label")


def _series(text: str) -> str:
    """A series name: a label, with its io stack and a further allocator condition when
    it has them (``3.13``, ``3.13+pyio``, ``3.13@default``); never a path."""
    return checked(text, "series")


def _label_list(text: str) -> list[str]:
    labels = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not label for label in labels):
        raise BadInput(f"{text!r}: give one or more labels, comma-separated, none empty")
    return [checked(label, "label") for label in labels]


def directory_problem(path) -> str | None:
    """Why ``path`` cannot be used as a directory: a file or a device is there, a symbolic
    link loop, or it lies under a file; None when it is a directory or nothing is there yet
    (it is made when written to). The one check of a store's or a cache's directory."""
    try:
        return None if stat.S_ISDIR(os.stat(path).st_mode) else "not a directory"
    except FileNotFoundError:
        return None
    except OSError as exc:
        return ("a symbolic link loop" if exc.errno == errno.ELOOP else "lies under a file"
                if exc.errno == errno.ENOTDIR else f"cannot be read ({exc.strerror or exc})")


def _results_dir(text: str) -> Path:
    """``--results-dir``: a directory, or a path where none is yet (a run makes it); refused
    before a tool reads or writes anything otherwise (a regular file given as the store was
    read as an empty one, and upstream wrote its ISSUE.md from it)."""
    problem = directory_problem(text)
    if problem is not None:
        raise BadInput(f"{one_line(text)}: {problem}; give the results store, a directory")
    return Path(text)


threshold = _argparse_type(_threshold, "threshold")
fail_above = _argparse_type(_fail_above, "fraction")
fail_on = _argparse_type(_fail_on, "classes")
positive_seconds = _argparse_type(_positive_seconds, "seconds")
positive_int = _argparse_type(_positive_int, "count")
run_id = _argparse_type(_run_id, "run id")
label = _argparse_type(_label, "label")
series = _argparse_type(_series, "series")
label_list = _argparse_type(_label_list, "labels")
results_dir = _argparse_type(_results_dir, "directory")


def comma_choices(choices):
    """An argparse type for "a,b" where each item is one of ``choices``."""
    def convert(text):
        items = [part.strip() for part in text.split(",")]
        unknown = [item for item in items if item not in choices]
        if not text.strip() or unknown:
            raise argparse.ArgumentTypeError(
                f"unknown value(s) {', '.join(map(repr, unknown or [text]))}; "
                f"valid: {', '.join(choices)}")
        return list(dict.fromkeys(items))
    convert.__name__ = "choices"
    return convert


class Parser(argparse.ArgumentParser):
    """argparse with exit status 2 and, for an unknown option or value, the valid ones."""

    def _check_value(self, action, value):
        # One wording for every tool: "unknown profile 'fast'; valid: smoke, quick, full".
        if action.choices is not None and value not in action.choices:
            what = (action.metavar or action.dest).replace("_", " ").lower()
            raise argparse.ArgumentError(action, f"unknown {what} {value!r}; valid: "
                                         + ", ".join(map(str, action.choices)))

    def parse_args(self, args=None, namespace=None):
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            valid = sorted(o for a in self._actions for o in a.option_strings
                           if o.startswith("--"))
            self.error(f"unknown option(s) {' '.join(unknown)}; valid options: "
                       f"{', '.join(valid)}")
        return parsed


def one_line(text: str) -> str:
    """``text`` as one printable line: a line break or control character that a file or
    key name carried in is shown escaped (\\n, \\x85), so an error stays one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def terminal_text(text) -> str:
    """``text`` as it may be printed to a terminal: its lines kept, every other control or
    format character (an ANSI escape, a carriage return, a bidi override) a name or message
    carried in shown escaped (\\x1b, \\u202e), so a file cannot recolour, rewrite or reorder
    what the terminal shows. Every name a command prints goes through here (or one_line)."""
    return "\n".join(one_line(line) for line in str(text).split("\n"))


def main_guard(main):
    """Wrap a tool's ``main(argv) -> int``: the one place exit statuses are mapped.

    BadInput is exit 2 with its one-line message, MachineFailure exit 3 with its one
    line; any other exception is exit 3 with the traceback (argparse's own exit 2 and
    Ctrl-C pass through)."""
    def guarded(argv=None, *args, **kwargs) -> int:
        try:
            return main(argv, *args, **kwargs)
        except BadInput as exc:
            print(f"error: {one_line(exc)}", file=sys.stderr)
            return EXIT_BAD_INPUT
        except MachineFailure as exc:
            print(f"error: {one_line(exc)}", file=sys.stderr)
            return EXIT_INTERNAL_ERROR
        except Exception:  # noqa: BLE001 - whatever it is, it must not read as exit 1
            traceback.print_exc()
            print("internal error: please report (the traceback above, and the command)",
                  file=sys.stderr)
            return EXIT_INTERNAL_ERROR
    guarded.__name__ = main.__name__
    guarded.__doc__ = main.__doc__
    return guarded
