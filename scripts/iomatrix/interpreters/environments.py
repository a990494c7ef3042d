"""One environment per interpreter with pyperf installed, made once and reused.

A venv for Python 3.6+, a ``pip install --target`` directory for 2.7 (it has no
venv module). pyperf is pinned per Python version to its last release that
installs there; all of them write the same JSON format. Environments live in
``.nox/iomatrix-envs/<label>/`` and carry a marker file; a marker that matches
the interpreter and the pin means the environment is reused as it is.

Two runs may start at once and both find an environment missing; making one
takes a lock per interpreter (``.<label>.lock`` beside the environments), and
the second run waits, then finds the first one's environment and reuses it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from iomatrix import procs
from iomatrix.interpreters import cache
from iomatrix.interpreters.discovery import Interpreter
from iomatrix.paths import ENVS_DIR

MARKER = "iomatrix-env.json"
INSTALL_TIMEOUT_SECONDS = 600

# (minimum version, pyperf pin): the last release that installs and runs there.
PYPERF_PINS = (
    ((3, 9), "2.10.0"),
    ((3, 8), "2.8.0"),
    ((3, 7), "2.7.0"),   # 2.8.0 imports importlib.metadata and fails on 3.7
    ((3, 6), "2.5.0"),
    ((2, 7), "1.7.1"),
)


class EnvironmentSetupError(RuntimeError):
    """The environment could not be made; the message carries the tail of pip's output."""


@dataclasses.dataclass
class BenchEnvironment:
    """How to run an interpreter with pyperf importable."""
    python: str
    pythonpath: str | None
    pyperf_version: str
    notes: str = ""

    def command_env(self, base=None) -> dict:
        env = dict(os.environ if base is None else base)
        env.pop("PYTHONHOME", None)
        if self.pythonpath:
            env["PYTHONPATH"] = self.pythonpath
        else:
            env.pop("PYTHONPATH", None)
        return env


def pyperf_pin(version_info) -> str:
    for minimum, pin in PYPERF_PINS:
        if tuple(version_info[:2]) >= minimum:
            return pin
    raise EnvironmentSetupError(
        f"Python {'.'.join(map(str, version_info))} is older than every pyperf release we pin "
        "(2.7 and 3.6+ are supported)")


def _run(cmd, log_lines, **kwargs):
    proc = procs.run(cmd, timeout=INSTALL_TIMEOUT_SECONDS, **kwargs)
    log_lines.append("$ " + " ".join(map(str, cmd)))
    log_lines.append(proc.stdout + proc.stderr)
    return proc


def _tail(log_lines, lines=8) -> str:
    return "\n".join("\n".join(log_lines).strip().splitlines()[-lines:])


def ensure_environment(interp: Interpreter, envs_dir: Path = ENVS_DIR, log=print) -> BenchEnvironment:
    """Return the interpreter's environment, making it only when it is missing or stale."""
    if not interp.ok:
        raise EnvironmentSetupError(f"{interp.label}: {interp.error}")
    pin = pyperf_pin(interp.version_info)
    try:
        envs_dir.mkdir(parents=True, exist_ok=True)
        with _creation_lock(envs_dir / f".{interp.label}.lock"):
            return _ensure_locked(interp, envs_dir / interp.label, pin, log)
    except OSError as exc:
        raise EnvironmentSetupError(f"{interp.label}: cannot use {envs_dir}: {exc}")


@contextlib.contextmanager
def _creation_lock(path: Path):
    """Hold an exclusive lock while an environment is checked and made (not a symlink)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # waits for a concurrent run making the same one
        yield
    finally:
        os.close(fd)


def _ensure_locked(interp: Interpreter, env_dir: Path, pin: str, log) -> BenchEnvironment:
    marker_path = env_dir / MARKER
    wanted = {"executable": os.path.realpath(interp.executable), "version": interp.version,
              "pyperf": pin}
    if os.path.lexists(marker_path):
        # read as a cache file is (a FIFO or a link to /dev/zero there must not hang a run):
        # one that cannot be read makes the environment stale, said in one line
        try:
            marker = cache.read_json(marker_path)
        except cache.BadCacheEntry as exc:
            log(f"iomatrix: environment marker {exc}")
            marker = None
        marker = marker if isinstance(marker, dict) else {}
        if all(marker.get(k) == v for k, v in wanted.items()):
            env = BenchEnvironment(marker["python"], marker.get("pythonpath"), pin,
                                   marker.get("notes", ""))
            # pyperf imported when the environment was made; its package file still in place
            # is the check of a reuse (an `import pyperf` per interpreter and session cost
            # 80 ms of CPU each: 117 of them in one run of the tests). A marker without the
            # file (made before it was recorded) is checked by importing, and gets it.
            recorded = marker.get("pyperf_file")
            if isinstance(recorded, str) and _inside(recorded, env_dir) \
                    and os.path.isfile(recorded):
                return env
            found = _pyperf_file(env)
            if found is not None:
                marker_path.write_text(json.dumps({**marker, "pyperf_file": found}, indent=2))
                return env
        log(f"iomatrix: environment {env_dir} is stale; remaking it")
    if env_dir.exists():
        shutil.rmtree(env_dir)
    log(f"iomatrix: making the environment for {interp.label} ({interp.executable}) "
        f"with pyperf {pin} in {env_dir}")
    log_lines: list[str] = []
    try:
        if interp.version_info[0] == 2:
            env = _make_target_dir(interp, env_dir, pin, log_lines)
        else:
            env = _make_venv(interp, env_dir, pin, log_lines)
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(env_dir, ignore_errors=True)
        raise EnvironmentSetupError(f"{interp.label}: making {env_dir} failed: {exc}")
    except EnvironmentSetupError:
        shutil.rmtree(env_dir, ignore_errors=True)
        raise
    found = _pyperf_file(env)
    if found is None:
        shutil.rmtree(env_dir, ignore_errors=True)
        raise EnvironmentSetupError(f"{interp.label}: pyperf does not import after installing it:\n"
                                    + _tail(log_lines))
    (env_dir / "install.log").write_text("\n".join(log_lines))
    marker_path.write_text(json.dumps({**wanted, "python": env.python,
                                       "pythonpath": env.pythonpath, "notes": env.notes,
                                       "pyperf_file": found}, indent=2))
    return env


def _make_target_dir(interp, env_dir, pin, log_lines) -> BenchEnvironment:
    site = env_dir / "site-packages"
    proc = _run([interp.executable, "-m", "pip", "install", "--disable-pip-version-check",
                 "--no-warn-script-location", "-q", "--target", str(site), f"pyperf=={pin}"],
                log_lines)
    if proc.returncode != 0:
        raise EnvironmentSetupError(f"{interp.label}: pip install --target failed:\n" + _tail(log_lines))
    return BenchEnvironment(interp.executable, str(site), pin)


def _make_venv(interp, env_dir, pin, log_lines) -> BenchEnvironment:
    # uv makes the venv and installs pyperf in under a second (venv with ensurepip and pip took
    # 3-5 s per interpreter here); where uv cannot (some older Pythons, PyPy), the venv
    # module and pip do, as before.
    uv = find_uv()
    if uv is not None:
        env = _make_venv_with_uv(uv, interp, env_dir, pin, log_lines)
        if env is not None and _pyperf_file(env) is not None:
            return env
        shutil.rmtree(env_dir, ignore_errors=True)
    proc = _run([interp.executable, "-m", "venv", str(env_dir)], log_lines)
    if proc.returncode != 0:
        raise EnvironmentSetupError(f"{interp.label}: python -m venv failed:\n" + _tail(log_lines))
    python = str(env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    proc = _run(pip + [f"pyperf=={pin}"], log_lines)
    notes = ""
    if proc.returncode != 0:
        # psutil has no wheel for some builds (PyPy, new free-threaded ABIs) and may not
        # compile; pyperf runs without it and only loses a few metadata fields.
        proc = _run(pip + ["--no-deps", f"pyperf=={pin}"], log_lines)
        notes = "pyperf installed without psutil (it would not install)"
        if proc.returncode != 0:
            raise EnvironmentSetupError(f"{interp.label}: pip install pyperf failed:\n"
                                        + _tail(log_lines))
    return BenchEnvironment(python, None, pin, notes)


def find_uv() -> str | None:
    """uv on PATH, or beside the Python running this: ``pipx install 'nox[uv]'`` puts uv in
    nox's own environment and only nox on PATH, so a fresh machine made every environment
    with venv and pip (3-5 s each idle, and the main command makes one per interpreter)."""
    found = shutil.which("uv")
    if found is not None:
        return found
    beside = Path(sys.executable).with_name("uv")
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def _make_venv_with_uv(uv, interp, env_dir, pin, log_lines) -> BenchEnvironment | None:
    """The venv made by uv, or None when uv cannot make it for this interpreter."""
    python = str(env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))
    if _run([uv, "venv", "-q", "--python", interp.executable, str(env_dir)],
            log_lines).returncode != 0:
        return None
    install = [uv, "pip", "install", "-q", "--python", python]
    if _run(install + [f"pyperf=={pin}"], log_lines).returncode == 0:
        return BenchEnvironment(python, None, pin, "")
    if _run(install + ["--no-deps", f"pyperf=={pin}"], log_lines).returncode == 0:
        return BenchEnvironment(python, None, pin,
                                "pyperf installed without psutil (it would not install)")
    return None


def _pyperf_file(env: BenchEnvironment) -> str | None:
    """The file pyperf imports from in ``env``, or None when it does not import."""
    try:
        proc = procs.run([env.python, "-c", "import pyperf; print(pyperf.__file__)"],
                         env=env.command_env(), timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (proc.stdout or "").strip().splitlines()
    # A package directory left without its __init__ imports as a namespace package: no file.
    return lines[-1] if proc.returncode == 0 and lines and os.path.isfile(lines[-1]) else None


def _inside(path: str, directory: Path) -> bool:
    """A marker's file is trusted only inside its own environment."""
    resolved = Path(os.path.realpath(path))
    return resolved.is_relative_to(Path(os.path.realpath(directory)))
