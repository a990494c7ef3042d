"""Child processes: is a pid alive, stop a process and what it started, run with a deadline, tails.

One place for these, used by the runner, discovery, environments and provisioning,
so they agree: a process we may not signal (EPERM) is alive, since it belongs to
someone else; only "no such process" means dead.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time

TAIL_LINES = 12


def pid_alive(pid) -> bool:
    """True unless ``pid`` is certainly gone; EPERM (another user's process) is alive."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OSError, OverflowError):  # OverflowError: beyond any pid this system can have
        return False
    return True


def tail(text: str, lines: int = TAIL_LINES, sep: str = "\n") -> str:
    """The last ``lines`` lines of a process's output."""
    return sep.join(text.strip().splitlines()[-lines:])


def new_group_kwargs() -> dict:
    """Popen arguments that start a child in its own process group, where there are groups."""
    return {"start_new_session": True} if hasattr(os, "killpg") else {}


def kill_group(proc: subprocess.Popen, grace: float = 0.0) -> None:
    """Stop a child and whatever it started (a process pool, a shell's child), then reap it.

    With ``grace`` the group gets SIGTERM first and that many seconds to exit.
    """
    if not hasattr(os, "killpg"):  # Windows: no process groups to signal
        proc.kill()
        proc.wait()
        return
    signals = ([signal.SIGTERM] if grace else []) + [signal.SIGKILL]
    for sig in signals:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=grace or None)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.wait()


def pin(proc: subprocess.Popen, cpus) -> None:
    """Let a child (and what it starts later) run only on ``cpus``; None: leave it.

    Done from the parent right after the start, so it works for every interpreter
    (Python 2.7 has no os.sched_setaffinity). The child has only begun to import then.
    """
    if cpus:
        try:
            os.sched_setaffinity(proc.pid, cpus)
        except ProcessLookupError:
            pass  # it exited already: its exit status tells why


@contextlib.contextmanager
def children_start_on(cpus):
    """Children started in the block run only on ``cpus`` from their first instruction (None:
    leave them): the calling thread is restricted for the block, and a child inherits the
    mask of the thread that starts it.

    ``pin`` after the start comes too late for a child that starts its own at once: strace
    forks the program it traces before the parent gets to pin strace.
    """
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def run(cmd, *, timeout: float, env=None, cwd=None, text=True,
        cpus=None) -> subprocess.CompletedProcess:
    """subprocess.run with a deadline that kills the child's whole process group.

    ``subprocess.run(timeout=...)`` kills only the child; a grandchild that holds the
    pipes open would keep us waiting. Raises subprocess.TimeoutExpired after the kill.
    """
    with children_start_on(cpus):
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, env=env, cwd=cwd, text=text,
                                **new_group_kwargs())
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        proc.communicate()
        raise
    except BaseException:
        kill_group(proc)
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by signal {-returncode} ({signal.Signals(-returncode).name})"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def supervise(cmd, env, timeout: float, cwd=None, stderr_dir=None,
              cpus=None) -> tuple[str | None, str | None]:
    """Run a worker that prints "START <name>" before each task: (None, None) on success,
    else (the task it was in, why it failed, with its output tail).

    Each task gets ``timeout`` seconds of its own. A thread reads the heartbeat lines
    (portable, unlike select() on pipes). The worker's stderr is kept in an unnamed
    temporary file in ``stderr_dir`` (default: the system's temp dir).
    """
    state = {"task": None, "started": time.monotonic()}

    def follow(stream):
        for line in stream:
            if line.startswith(b"START "):
                state["task"] = line[6:].decode("utf-8", "replace").strip()
                state["started"] = time.monotonic()

    with tempfile.TemporaryFile(dir=stderr_dir) as stderr:
        with children_start_on(cpus):
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, env=env,
                                    stdin=subprocess.DEVNULL, cwd=cwd, **new_group_kwargs())
        reader = threading.Thread(target=follow, args=(proc.stdout,), daemon=True)
        reader.start()
        try:
            while True:
                remaining = state["started"] + timeout - time.monotonic()
                if remaining <= 0:
                    kill_group(proc)
                    return state["task"], f"timed out after {timeout:g} s (--timeout)"
                try:
                    proc.wait(timeout=min(remaining, 0.5))
                    break
                except subprocess.TimeoutExpired:
                    continue
        except BaseException:
            kill_group(proc)
            raise
        finally:
            reader.join(timeout=5)
            proc.stdout.close()
        if proc.returncode != 0:
            stderr.seek(0)
            err = stderr.read().decode("utf-8", "replace")
            return state["task"], f"{describe_exit(proc.returncode)}\n{tail(err)}"
    return None, None
