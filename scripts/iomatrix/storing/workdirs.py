"""Work directories: only ours, found by name and marker, never by a path read from a file.

A run's fixtures and scratch files live in ``<work root>/iomatrix-<run id>-XXXX/``
with a marker file iomatrix wrote (run id, pid, host). A run directory travels
(git, CI artifacts), so nothing in it may name a directory to delete: cleanup
looks for our own name pattern under the work root and checks our marker.
"""
from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

from iomatrix import procs
from iomatrix.storing import contract, store

WORK_PREFIX = "iomatrix-"
WORK_MARKER = "iomatrix-work.json"


class WorkDirError(RuntimeError):
    """No work directory could be made where the user asked."""


def make_work_dir(parent: Path, run: store.Run) -> Path:
    try:
        root = Path(tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{run.run_id}-", dir=str(parent)))
    except OSError as exc:
        raise WorkDirError(f"cannot make a work directory in {parent}: {exc.strerror or exc}")
    marker = {"run_id": run.run_id, "pid": os.getpid(), "host": socket.gethostname(),
              "results": str(run.path.resolve())}
    contract.atomic_write_json(str(root / WORK_MARKER), marker)
    return root


def clean_stale_work_dirs(parent: Path, run_id: str, log) -> None:
    """Remove work directories an interrupted session of this run left in ``parent``.

    Only directories iomatrix made are candidates: named ``iomatrix-<run id>-*``,
    owned by this user, holding the marker iomatrix wrote, for this run id and
    host, whose process is gone. A live owner (EPERM counts as alive: it is
    someone else's) or anything else is reported and left alone.
    """
    for candidate in sorted(Path(parent).glob(f"{WORK_PREFIX}{run_id}-*")):
        if candidate.is_symlink() or not candidate.is_dir():
            continue
        try:
            marker = contract.read_json(str(candidate / WORK_MARKER), 4096)
            owner = candidate.lstat().st_uid
        except (OSError, ValueError) as exc:
            log(f"iomatrix: left {candidate} alone: no readable iomatrix marker ({exc})")
            continue
        ours = isinstance(marker, dict) and marker.get("run_id") == run_id \
            and marker.get("host") == socket.gethostname() \
            and (not hasattr(os, "getuid") or owner == os.getuid())
        if not ours:
            log(f"iomatrix: left {candidate} alone: not made by this user for run {run_id}")
            continue
        pid = marker.get("pid")
        if pid == os.getpid() or procs.pid_alive(pid):
            log(f"iomatrix: left {candidate} alone: its process {pid} is alive")
            continue
        shutil.rmtree(candidate, ignore_errors=True)
        log(f"iomatrix: removed {candidate}, left by an interrupted session")
