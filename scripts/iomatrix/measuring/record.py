"""A run's manifest as the runner writes it: opened once per session, rewritten as it goes.

The manifest records the run spec (``"spec"``, from ``RunSpec.to_manifest``), the
machine, each session (its own spec included), and each series' status. A status is
derived from the series' files on every write (``planning.series_status``), never
carried over, so a damaged or interrupted run is described as it is on disk.
"""
from __future__ import annotations

import dataclasses
import os
import sys

from iomatrix import procs
from iomatrix.measuring import machine, planning
from iomatrix.storing import contract, store
from iomatrix.measuring.spec import RunSpec, SpecError, resume_differences

MANIFEST_VERSION = 2


def open_manifest(run: store.Run, spec: RunSpec) -> dict:
    """The run's manifest with this session added: a new one, or the stored one when the
    run is resumed with the same spec (SpecError naming the differences otherwise)."""
    manifest = run.read_manifest()
    session = {"started": store.utc_now(), "argv": sys.argv, "suites": list(spec.suites),
               "io": list(spec.io_stacks), "seed": spec.seed, "pid": os.getpid(),
               "spec": spec.to_manifest()}
    if manifest:
        differences = resume_differences(manifest, spec)
        if differences:
            raise SpecError(f"run {run.run_id} was made with another spec than this call "
                            "asks for (field: stored -> asked): " + "; ".join(differences)
                            + ". Resume it with the same options, or use another --run-id.")
        manifest["suites"] = sorted(set(manifest.get("suites", [])) | set(spec.suites))
        manifest["io"] = sorted(set(manifest.get("io", [])) | set(spec.io_stacks))
        manifest.setdefault("sessions", []).append(session)
        manifest.setdefault("interpreters", {})
        return manifest
    conditions = spec.conditions
    return {
        "iomatrix_manifest_version": MANIFEST_VERSION, "run_id": run.run_id,
        **machine.facts(), "spec": spec.to_manifest(),
        # The conditions stay top-level too: the report and older tools read them there.
        "profile": spec.profile.name, "cache": conditions.cache,
        "allocator": conditions.allocator, "allocator_twins": list(spec.allocator_twins),
        # What the caller's environment set for the allocator (MALLOC_*, ...): the workers
        # inherit it beside what the run sets (steady overrides it; default refuses it).
        "allocator_env_inherited": machine.inherited_allocator_variables(),
        "output": conditions.output,
        "clock": conditions.clock, "affinity": conditions.affinity,
        "values": store.SETTLED_VALUES, "fixture_page_cache": contract.FIXTURE_READ_BACK,
        "timing_cpus": machine.timing_cpus(conditions.affinity)[1],
        "profile_settings": dataclasses.asdict(spec.profile),
        "suites": list(spec.suites), "io": list(spec.io_stacks),
        "order": {"method": store.LOCKSTEP_ORDER, "seed": spec.seed},
        "started": session["started"], "finished": None,
        "machine_state_start": machine.state(store.utc_now()), "interpreters": {},
        "sessions": [session],
    }


def session_name(manifest: dict) -> str:
    """A file name for what the current session writes: its number in the run and its start."""
    started = manifest["sessions"][-1]["started"].replace(":", "").replace("+0000", "Z")
    return f"session{len(manifest['sessions']):03d}-{started}"


def write_manifest(run: store.Run, manifest: dict, plans: dict, profile) -> None:
    record_series(run, manifest, plans, profile)
    run.write_manifest(manifest)


def record_series(run: store.Run, manifest: dict, plans: dict, profile) -> None:
    """Each series' status, missing processes and failures, from its files and its plan."""
    for plan in plans.values():
        if plan.interp is None:
            entry = manifest.setdefault("native", {})
        else:
            entry = manifest["interpreters"][plan.series]
        if plan.ops:
            entry["planned_ops"] = sorted(op for _, op in plan.ops)
        planned = entry.get("planned_ops") if isinstance(entry.get("planned_ops"), list) else []
        status, missing = planning.series_status(run, plan, planned, profile)
        entry["status"] = status
        entry["missing"] = missing
        entry["results_file"] = plan.series + ".json" if status == "ok" else None
        if plan.kept:
            continue
        entry["skipped_ops"] = plan.skipped
        entry["failed_ops"] = plan.failed_ops
        entry["error_tail"] = procs.tail(plan.error) if plan.error else (
            procs.tail(next(iter(plan.failed_ops.values()))) if status == "failed" and
            plan.failed_ops else None)
