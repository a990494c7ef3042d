"""Where a run's time goes: the seconds of each stage of a session, kept in its manifest.

Why: the main command must fit a time (10 minutes here for every interpreter), and what
takes it moves as interpreters, suites and the host change; a run that states its own
stages says where, without a profiler. Each session of a run records ``stages`` in its
manifest entry (stored with sorted keys; ``SESSION_STAGES`` gives the order to print them
in): ``environments`` (each interpreter's pyperf environment made or checked, its ops listed
and pyperf's metadata of it collected), ``fixtures``, ``planned_rounds``, ``native`` (the C
reference compiled before the planned rounds, and its best blocks measured after them),
``extra_rounds``, ``merge`` (the parts into series files) and ``counting``; a stage that did
not run is absent. The main command prints
them at its end (``table``), with the changelog step and the report, which run after the
manifest is written (nox sessions of their own).
"""
from __future__ import annotations

import contextlib
import time

# The stages of a session, in the order to print them (the manifest stores them sorted).
SESSION_STAGES = ("environments", "fixtures", "planned_rounds", "native", "extra_rounds",
                  "merge", "counting")


class Stages:
    """Seconds per stage, as the stages run (``timed``)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def timed(self, name: str):
        """Add the time of the ``with`` block to stage ``name`` (even when it raises)."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0)
                                       + time.monotonic() - started, 1)


def table(stages: dict, after: dict | None = None, total: float | None = None) -> str:
    """The stages as lines "stage  seconds", ``after`` (stages after the session: the
    changelog step, the report) below them, and the total when given."""
    rows = [(name, seconds) for name, seconds in {**stages, **(after or {})}.items()
            if isinstance(seconds, (int, float))]
    if total is not None:
        rows.append(("total", total))
    width = max([len(name) for name, _ in rows] + [5])
    return "\n".join(f"  {name:<{width}}  {seconds:7.1f} s" for name, seconds in rows)


def main_command_table(results_dir, run_id: str, discovery: float, matrix_seconds: float,
                       after: dict, total: float) -> str:
    """The main command's stages: the interpreters' probe (``discovery``, as nox loads the
    noxfile), the run's session stages from its manifest (its last session), what of the
    matrix session no stage covers (``matrix_other``: the run's start, its listing of the
    interpreters, writing the manifest), ``after`` it (the changelog step, the report, each
    with its nox session's environment) and the total; a line saying why when the manifest
    cannot be read."""
    from iomatrix.storing import store
    try:
        manifest = store.Run(results_dir, run_id).read_manifest() or {}
        session = (manifest.get("sessions") or [{}])[-1]
        stored = session.get("stages") or {}
        # in the order they ran (a stored manifest has its keys sorted)
        recorded = {name: stored[name] for name in sorted(
            stored, key=lambda n: SESSION_STAGES.index(n) if n in SESSION_STAGES else 99)}
    except (store.ResultFileError, OSError, ValueError, AttributeError) as exc:
        return f"  (the run's stages cannot be read: {exc})"
    other = max(0.0, matrix_seconds - sum(recorded.values()))
    rows = {"discovery": discovery, **recorded, "matrix_other": other, **after}
    return table({k: round(v, 1) for k, v in rows.items()}, total=round(total, 1))
