"""The stages of one CPython build (``provision.build``), each logged and timed.

``Builder`` runs a build's stages (unpack, configure, make, install, the checks) into one
log file, says every ``HEARTBEAT_SECONDS`` that a long stage is still running, and stops
make and every compiler it started when interrupted; a stage that fails is a
``StageError`` naming the stage and the log. ``probe_interpreter`` starts the new
interpreter to learn what it is (its version, free-threaded or not, the libpython it
loaded, its build variables); ``check_in_place`` starts it again from its final place, on
its own libpython, and refuses it unless it reads as the recipe its name says
(``check_recipe``: a -pgo build must read as static-O3-pgo-lto).
"""
from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable

from iomatrix import procs
from iomatrix.interpreters import probing
from iomatrix.interpreters.cache import BUILD_INFO, Recipe
from iomatrix.interpreters.sources import ProvisionError, Say, Version, brief

PROBE_TIMEOUT = 120
HEARTBEAT_SECONDS = 30.0
STOP_GRACE_SECONDS = 10  # for make and its compilers to exit on SIGTERM before SIGKILL


# Run by the new interpreter before it is moved into place: the build must be
# the version and the kind (free-threaded or not) that was asked for.
# A shared build also says which libpython it loaded (Linux: /proc/self/maps), so that a
# build which would run on another installation's library is caught.
# Its build variables and linkage are what discovery reads the recipe from
# (probing.build_facts), so that a build which does not read as its recipe is refused.
PROBE = ("import json, os, platform, sys, sysconfig\n"
         "maps = '/proc/self/maps'\n"
         "libs = sorted(set(line.split()[-1] for line in open(maps) if 'libpython' in line)) "
         "if os.path.exists(maps) else []\n"
         "print(json.dumps({"
         "'python_version': platform.python_version(), "
         "'free_threaded': bool(sysconfig.get_config_var('Py_GIL_DISABLED')), "
         "'sys_version': sys.version, 'libpython': libs, "
         "'implementation': platform.python_implementation().lower(), "
         "'linkage': ('shared' if libs else 'static') if os.path.exists(maps) else None, "
         "'sysconfig': dict((name, sysconfig.get_config_var(name)) for name in ("
         "'CONFIG_ARGS', 'OPT', 'CFLAGS', 'PY_CFLAGS_NODIST', 'CONFIGURE_CFLAGS_NODIST', "
         "'Py_ENABLE_SHARED', 'Py_JIT'))}))")

# Headings of the lists that CPython's make prints of stdlib extension modules
# it did not build; an interpreter without _decimal or _zstd measures something
# else, so the build info records them.
MODULE_LIST_HEADINGS = (
    "The necessary bits to build these optional modules were not found:",
    "Failed to build these modules:",
    "Following modules built successfully but were removed because they could not be imported:",
)


class StageError(ProvisionError):
    def __init__(self, stage: str, log: Path, detail: str):
        super().__init__(f"{stage} failed: {detail}; see the log: {log}")
        self.stage = stage
        self.log = log


# -- the stages ------------------------------------------------------------------------

def missing_modules(log_text: str) -> list[str]:
    """The stdlib extension modules that make reported as not built."""
    missing: dict[str, None] = {}
    in_list = False
    for line in log_text.splitlines():
        if line.strip() in MODULE_LIST_HEADINGS:
            in_list = True
        elif in_list and line.strip() and not line.startswith("To find"):
            missing.update(dict.fromkeys(line.split()))
        else:
            in_list = False
    return list(missing)


def elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"


def new_log(logs: Path, name: str) -> Path:
    logs.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1, 1000):
        log = logs / (f"{name}-{stamp}.log" if n == 1 else f"{name}-{stamp}-{n}.log")
        try:
            with open(log, "x"):
                return log
        except FileExistsError:
            continue
    raise ProvisionError(f"cannot create a log file in {logs}")


def clean_env() -> dict[str, str]:
    # Settings meant for the host's interpreter would leak into the new one
    # that make install runs (ensurepip, compileall).
    env = dict(os.environ)
    for name in ("PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONNOUSERSITE"):
        env.pop(name, None)
    return env


def remove_stale_partials(pythons: Path, name: str, say: Say) -> None:
    for partial in pythons.glob(f".{name}.partial-*"):
        pid = partial.name.rsplit("-", 1)[-1]
        if pid.isdigit() and procs.pid_alive(int(pid)):
            say(f"leaving {partial}: its build (pid {pid}) is still running")
            continue
        say(f"removing {partial}, left by an earlier build that was killed")
        shutil.rmtree(partial, ignore_errors=True)


class Builder:
    """The stages of one build, each logged to one file."""

    def __init__(self, version: Version, log: Path, say: Say):
        self.version = version
        self.log = log
        self.say = say
        self.start = time.monotonic()
        self.stage_seconds: dict[str, float] = {}

    def write(self, text: str) -> None:
        with open(self.log, "a") as f:
            f.write(text)

    def stage(self, name: str, func: Callable[[], None]) -> None:
        begun = time.monotonic()
        self.say(f"{name} ... (total {elapsed(begun - self.start)})")
        self.write(f"\n=== {name} ===\n")
        try:
            func()
        except StageError:
            raise
        except (OSError, ValueError, KeyError, subprocess.SubprocessError, ProvisionError) as exc:
            self.write(f"{exc}\n")
            raise StageError(name, self.log, str(exc)) from exc
        self.stage_seconds[name] = round(time.monotonic() - begun, 3)
        self.say(f"{name} done in {elapsed(self.stage_seconds[name])}")

    def run(self, name: str, cmd: list[str], cwd: Path) -> None:
        self.stage(name, lambda: self._command(name, cmd, cwd))

    def _command(self, name: str, cmd: list[str], cwd: Path) -> None:
        """Run cmd into the log, saying every HEARTBEAT_SECONDS that it is still running."""
        self.write(f"$ cd {cwd} && {' '.join(cmd)}\n")
        begun = time.monotonic()
        with open(self.log, "ab") as out:
            # A process group of its own, so that an interrupt can stop make and every
            # compiler it started.
            proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, env=clean_env(),
                                    **procs.new_group_kwargs())
        try:
            while True:
                try:
                    code = proc.wait(timeout=HEARTBEAT_SECONDS)
                    break
                except subprocess.TimeoutExpired:
                    now = time.monotonic()
                    self.say(f"{name}: still running, {elapsed(now - begun)} in this stage, "
                             f"{elapsed(now - self.start)} in all (log: {self.log})")
        finally:
            if proc.poll() is None:  # interrupted: do not leave make running
                procs.kill_group(proc, grace=STOP_GRACE_SECONDS)
        if code != 0:
            raise StageError(name, self.log, f"{cmd[0]} exited with status {code}")


def probe_interpreter(builder: Builder, python3: Path, env: dict) -> dict:
    proc = procs.run([str(python3), "-c", PROBE], timeout=PROBE_TIMEOUT, env=env)
    builder.write(f"$ {python3} -c PROBE\n{proc.stdout}{proc.stderr}")
    if proc.returncode != 0:
        raise ProvisionError(f"the new interpreter does not start: {brief(proc.stderr)}")
    return json.loads(proc.stdout)


def probe_staged(builder: Builder, staged: Path, recipe: Recipe, names) -> dict:
    """The staged interpreter's probe (probe_interpreter), run from the staged tree. Not every
    install target links bin/python3, which the contract wants: the first of ``names`` found
    in bin/ is linked to it; none found is a ProvisionError."""
    bin_dir = staged / "bin"
    python3 = bin_dir / "python3"
    if not python3.exists():
        name = next((n for n in names if (bin_dir / n).exists()), None)
        if name is None:
            raise ProvisionError(f"make install left no python3 in {bin_dir}")
        python3.symlink_to(name)
    env = clean_env()
    if recipe.shared:  # its rpath names the final place, which does not exist yet
        env["LD_LIBRARY_PATH"] = str(staged / "lib")
    return probe_interpreter(builder, python3, env)


def check_in_place(builder: Builder, final: Path, recipe: Recipe) -> None:
    """The installed interpreter starts from its final place, on its own libpython, and
    reads as the recipe its directory names (``check_recipe``)."""
    env = clean_env()
    env.pop("LD_LIBRARY_PATH", None)  # it must find its library by itself
    found = probe_interpreter(builder, final / "bin" / "python3", env)
    foreign = [lib for lib in found.get("libpython", [])
               if not os.path.realpath(lib).startswith(str(final) + os.sep)]
    if recipe.shared and foreign:
        raise ProvisionError(f"the new interpreter loads {foreign[0]}, not its own libpython "
                             f"in {final / 'lib'} (rpath?)")
    check_recipe(found, final, recipe)


def install_in_place(builder: Builder, staged: Path, final: Path, recipe: Recipe, info: dict,
                     who: str) -> None:
    """The staged tree's last steps, shared by a release's build and a commit's: write its
    build record, rename it to its final place (one rename: a reader sees it whole or not at
    all), check it starts from there; a failing check renames it out again, so that no
    half-installed build is left where a later run would take it. ``who`` names the kind of
    run that could have made ``final`` meanwhile ("another provision run?")."""
    (staged / BUILD_INFO).write_text(json.dumps(info, indent=2) + "\n")
    if final.exists():
        raise ProvisionError(f"{final} appeared while building ({who})")
    os.rename(staged, final)
    try:
        builder.stage("check in place", lambda: check_in_place(builder, final, recipe))
    except BaseException:
        os.rename(final, staged)
        raise


def recipe_read(found: dict) -> str | None:
    """The recipe discovery will read from a build the probe answered for (shared-O3,
    static-O3-pgo-lto), frame pointers left out (3.15's own default); None when the build
    variables cannot be read."""
    recipe = probing.build_facts(found, "provisioned").get("recipe")
    return "-".join(part for part in recipe.split("-") if part != "fp") if recipe else None


def check_existing(prefix: Path, recipe: Recipe, free_threaded: bool) -> None:
    """A build in the cache that is to be reused: the kind (free-threaded or not) and the
    recipe its name says, read from the interpreter itself (``check_recipe``)."""
    proc = procs.run([str(prefix / "bin" / "python3"), "-c", PROBE], timeout=PROBE_TIMEOUT,
                     env=clean_env())
    try:
        found = json.loads(proc.stdout) if proc.returncode == 0 else None
    except ValueError:
        found = None
    if not isinstance(found, dict):
        raise ProvisionError(f"{prefix} holds a build that does not start "
                             f"({brief(proc.stderr) or 'no answer'}): remove it to build again")
    if bool(found.get("free_threaded")) != free_threaded:
        kind = "free-threaded" if found.get("free_threaded") else "with the GIL"
        raise ProvisionError(f"{prefix} holds a build {kind}, which {prefix.name} is not: "
                             "remove it to build again")
    check_recipe(found, prefix, recipe)


def check_recipe(found: dict, prefix: Path, recipe: Recipe) -> None:
    """Refuse a build whose build variables do not read as the recipe its directory and
    label name: a 3.14.7-pgo without PGO or LTO (configure dropped an option, or a later
    change to the recipe left it out) would be timed and reported as the shipped kind of
    build it is not."""
    read = recipe_read(found)
    if read is not None and read != recipe.reads_as:
        raise ProvisionError(f"{prefix.name} reads as {read}, not {recipe.reads_as} as the "
                             f"{recipe.name} recipe its name says (configure: "
                             f"{(found.get('sysconfig') or {}).get('CONFIG_ARGS') or '?'})")
