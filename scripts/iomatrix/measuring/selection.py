"""Which ops a run measures: ``--suite core`` (the default), ``all``, or suite names.

``core`` is the 2009 study's 14 ops (suite ``lutz2009``) plus a handful of telling
ops from every other suite. Each suite declares its share next to its ops, as a
literal ``CORE = {"op": "why it is in core"}`` (its module docstring says the same,
one line per op); this module collects them. They are read from the files with
``ast``, not imported: the suites are worker code (every Python from 2.7), and the
host never imports them.

Core also takes the control of each of its ops that has one: a suite's literal
``CONTROLS = {"op": "what its control times"}`` names the ops that have a control op,
``<op>__control`` (suites/_api.py, control_op), which the host sets beside the op's
release steps (iomatrix.analysing.controls).

What core costs: a lockstep round of core took 1.9 to 2.25 times as long as a round
of the study alone (the same three interpreters, 2.7, 3.13 and PyPy, quick profile,
alternating runs on this 2-core host). A study round of the main command's 16 series
took 26.5 s in its published runs, so a core round takes about 56 s (50-60 s). With
the lineage timed again under the untouched allocator, the quick profile's 8 rounds of
one value and the next group's workers started while a group is timed, the main
command over 17 interpreters and the A/A twin takes 8.6-8.7 minutes (docs/methodology.md).
"""
from __future__ import annotations

import ast
from pathlib import Path

from iomatrix.paths import SUITES_DIR

CORE = "core"
ALL = "all"
# The suite whose every op is in core: the study the project started from.
STUDY_SUITE = "lutz2009"
# Machinery in suites/, not suites (the same rule as suites/_api.available_suites).
NOT_SUITES = ("harness.py",)
# An op's control op is named after it (suites/_api.py: CONTROL_SUFFIX).
CONTROL_SUFFIX = "__control"


def control_name(op: str) -> str:
    return op + CONTROL_SUFFIX


def declared_controls(directory: Path = SUITES_DIR) -> dict[str, dict[str, str]]:
    """{suite: {op: what its control times}}, from every suite's ``CONTROLS``."""
    return declared_by_suite("CONTROLS", directory)


class SelectionError(ValueError):
    """A --suite value that names no selection; the message lists the valid names."""


def available_suites(directory: Path = SUITES_DIR) -> list[str]:
    return sorted(p.stem for p in directory.glob("*.py")
                  if not p.name.startswith("_") and p.name not in NOT_SUITES)


def declared(suite: str, name: str, directory: Path = SUITES_DIR):
    """The literal a suite module assigns to ``name`` at top level, or None."""
    path = directory / f"{suite}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def declared_by_suite(name: str, directory: Path = SUITES_DIR) -> dict[str, dict]:
    """{suite: the dict literal it assigns to ``name``}, in suite order, for the suites that
    assign a non-empty one."""
    found = {}
    for suite in available_suites(directory):
        value = declared(suite, name, directory)
        if value:
            found[suite] = dict(value)
    return found


def core_ops(directory: Path = SUITES_DIR) -> dict[str, dict[str, str]]:
    """{suite: {op: why it is in core}}, in suite order, from every suite's ``CORE``."""
    return declared_by_suite("CORE", directory)


def valid_names(directory: Path = SUITES_DIR) -> list[str]:
    return [CORE, ALL, *available_suites(directory)]


def resolve(value: str, directory: Path = SUITES_DIR) -> tuple[tuple, tuple | None]:
    """(suites, ops) of a --suite value; ops is None when every op of the suites runs.

    ``core`` and ``all`` stand alone; suite names may be combined with commas.
    """
    names = [name.strip() for name in str(value).split(",") if name.strip()]
    valid = valid_names(directory)
    unknown = [name for name in names if name not in valid]
    if unknown or not names:
        raise SelectionError(f"unknown suite(s) {', '.join(map(repr, unknown or [value]))}; "
                             f"valid: {', '.join(valid)}")
    if len(names) > 1 and ({CORE, ALL} & set(names)):
        raise SelectionError(f"{value!r}: {CORE!r} and {ALL!r} stand alone; give one of them, "
                             "or suite names separated by commas")
    if names == [ALL]:
        return tuple(available_suites(directory)), None
    if names == [CORE]:
        core = core_ops(directory)
        controls = declared_controls(directory)
        chosen = []
        for suite, ops in core.items():
            for op in ops:
                chosen.append(op)
                if op in controls.get(suite, {}):
                    chosen.append(control_name(op))
        return tuple(core), tuple(chosen)
    return tuple(dict.fromkeys(names)), None


def core_reason(op: str, directory: Path = SUITES_DIR) -> str | None:
    """Why ``op`` is in core, or None when it is not (a control: as its op's control)."""
    controls = declared_controls(directory)
    for suite, ops in core_ops(directory).items():
        if op in ops:
            return ops[op]
        for name in ops:
            if op == control_name(name) and name in controls.get(suite, {}):
                return f"the control of {name}: {controls[suite][name]}"
    return None
