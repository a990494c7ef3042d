"""A finding's call paths in words, for its suite page (analysing.callpaths)."""
from __future__ import annotations

from iomatrix.analysing import callpaths
from iomatrix.reporting.markdown import code, fmt_value, md


def _per_call(value) -> str:
    return f"{fmt_value(value, '+,.0f', signed=True)}/call"


def _taken(calls) -> str:
    before, after = calls
    if before == after:
        return ""
    said = " → ".join("–" if n is None else fmt_value(n, ",.0f") for n in (before, after))
    return f", taken {said}/call"


def paths_sentence(graphs: dict, op: str, a: str, b: str) -> str | None:
    """Every group of the step's call paths: its path, its change per call, its functions
    and how often its first edge was taken; then the build's share apart. "Call paths
    unavailable" with the reason where a side's edges cannot be used; None where they were
    never kept or nothing moved."""
    try:
        found = callpaths.step_paths(graphs, op, a, b)
    except callpaths.Unavailable as exc:
        return None if exc.absent else f"Call paths unavailable: {md(str(exc))}."
    if not found.groups:
        return None
    said = []
    for group in found.groups:
        functions = ", ".join(f"{code(name)} {_per_call(change)}"
                              for name, change in group.functions)
        said.append(" → ".join(code(name) for name in group.path)
                    + f": {_per_call(group.change)} ({functions}){_taken(group.calls)}")
    build = ""
    if found.build_names and found.build_change:
        build = (f" The build's share, apart: {_per_call(found.build_change)} in "
                 + ", ".join(code(name) for name in found.build_names) + ".")
    return ("Call paths (the functions that explain the step, grouped by the path they ran "
            "on, from the C function Python code called; docs/methodology.md): "
            + "; ".join(said) + "." + build)
