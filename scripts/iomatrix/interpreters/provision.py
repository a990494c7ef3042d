"""Build CPython interpreters from source into the iomatrix cache (``nox -s provision``).

    nox -s provision -- 3.14.7 3.14.7t 3.15.0rc2
    nox -s provision -- 3.13.15 --recipe release
    python scripts/provision.py [--recipe NAME] [--jobs N] [--debian-source] VERSION [VERSION...]

VERSION is X.Y.Z with an optional pre-release (3.15.0rc2) and an optional trailing
"t" for a free-threaded build (configured --disable-gil). The tarball is found,
fetched and checked by ``iomatrix.interpreters.sources``; this module builds it.

A recipe is how a version is built, and so part of what a benchmark of it measures
(RECIPES below). ``lineage``, the default, is the recipe of the interpreters already
on the machine (pyenv's: a shared libpython, CPython's own -O3), so a new release
extends the same lineage and a step between two releases is not a step between two
build scripts. One version can be built under several recipes side by side: each
recipe has its own directory, pythons/<version><suffix> (3.13.15, 3.13.15-pgo).

A build is configured with --prefix=pythons/<version><suffix> and installed with
DESTDIR into a hidden pythons/.<version><suffix>.partial-<pid>/ staging directory;
iomatrix-build.json is written into the staged tree, which is then renamed into place
and started once more from there. Discovery only looks at directories holding that
file, so it never sees half a build. A failed or interrupted build removes its staging
directory (and a build that does not start from its final place is taken out again)
and keeps its log.

Online machines can skip building: `nox --download-python always` and
`uv python install 3.14` provide python-build-standalone interpreters (--uv runs
the latter). The README's provisioning section has the cache layout and how to get
Debian's source tarballs through apt.

Exit status: 0 done; 2 bad input, one line (a VERSION that is not a version, an option, a
tarball refused before extraction: a symlink, link, device or fifo member, an absolute or
``..`` path, a member over 64 MiB or 1 GiB in all, a checksum that does not match);
3 a download or a build failed (the log is named); 130 interrupted. Never 1, which is a
comparison's regression.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from iomatrix import cli, procs
from iomatrix.interpreters import sources
# The build cache and the recipes live in interpreters.cache (discovery reads them without
# importing the builder); their names stay importable from here.
from iomatrix.interpreters.cache import (BUILD_DIR_RE, BUILD_INFO, DEFAULT_RECIPE,  # noqa: F401
                                         OPTIMIZED_ARGS, RECIPES, SUFFIX_PATTERN, Recipe,
                                         build_suffix, cache_root, list_builds, read_build,
                                         recipe_named, recipe_of_build, recipe_reading_as)
from iomatrix.interpreters.sources import (ProvisionError, Say, UsageError, Version, brief,
                                        parse_version, resolve_tarball)

UV_TIMEOUT = 15  # uv's own HTTP timeout; an offline uv fails within it
UV_INSTALL_TIMEOUT = 600
PROBE_TIMEOUT = 120
HEARTBEAT_SECONDS = 30.0
STOP_GRACE_SECONDS = 10  # for make and its compilers to exit on SIGTERM before SIGKILL
FREE_THREADED_ARGS = ["--disable-gil"]


# Run by the new interpreter before it is moved into place: the build must be
# the version and the kind (free-threaded or not) that was asked for.
# A shared build also says which libpython it loaded (Linux: /proc/self/maps), so that a
# build which would run on another installation's library is caught.
PROBE = ("import json, os, platform, sys, sysconfig\n"
         "maps = '/proc/self/maps'\n"
         "libs = sorted(set(line.split()[-1] for line in open(maps) if 'libpython' in line)) "
         "if os.path.exists(maps) else []\n"
         "print(json.dumps({"
         "'python_version': platform.python_version(), "
         "'free_threaded': bool(sysconfig.get_config_var('Py_GIL_DISABLED')), "
         "'sys_version': sys.version, 'libpython': libs}))")

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


# -- building --------------------------------------------------------------------------

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


def _elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"


def _new_log(logs: Path, name: str) -> Path:
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


def _clean_env() -> dict[str, str]:
    # Settings meant for the host's interpreter would leak into the new one
    # that make install runs (ensurepip, compileall).
    env = dict(os.environ)
    for name in ("PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONNOUSERSITE"):
        env.pop(name, None)
    return env


def _remove_stale_partials(pythons: Path, name: str, say: Say) -> None:
    for partial in pythons.glob(f".{name}.partial-*"):
        pid = partial.name.rsplit("-", 1)[-1]
        if pid.isdigit() and procs.pid_alive(int(pid)):
            say(f"leaving {partial}: its build (pid {pid}) is still running")
            continue
        say(f"removing {partial}, left by an earlier build that was killed")
        shutil.rmtree(partial, ignore_errors=True)


class _Builder:
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
        self.say(f"{name} ... (total {_elapsed(begun - self.start)})")
        self.write(f"\n=== {name} ===\n")
        try:
            func()
        except StageError:
            raise
        except (OSError, ValueError, KeyError, subprocess.SubprocessError, ProvisionError) as exc:
            self.write(f"{exc}\n")
            raise StageError(name, self.log, str(exc)) from exc
        self.stage_seconds[name] = round(time.monotonic() - begun, 3)
        self.say(f"{name} done in {_elapsed(self.stage_seconds[name])}")

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
                                    stderr=subprocess.STDOUT, env=_clean_env(),
                                    **procs.new_group_kwargs())
        try:
            while True:
                try:
                    code = proc.wait(timeout=HEARTBEAT_SECONDS)
                    break
                except subprocess.TimeoutExpired:
                    now = time.monotonic()
                    self.say(f"{name}: still running, {_elapsed(now - begun)} in this stage, "
                             f"{_elapsed(now - self.start)} in all (log: {self.log})")
        finally:
            if proc.poll() is None:  # interrupted: do not leave make running
                procs.kill_group(proc, grace=STOP_GRACE_SECONDS)
        if code != 0:
            raise StageError(name, self.log, f"{cmd[0]} exited with status {code}")


def build(version: Version | str, *, root: Path | None = None, tarball: Path | str | None = None,
          url: str | None = None, sha256: str | None = None, recipe: str = DEFAULT_RECIPE,
          optimized: bool = False, jobs: int | None = None, debian_source: bool = False,
          say: Say | None = None) -> Path:
    """Build version by recipe into root/pythons/<version><suffix>/ unless it is there;
    return that path. optimized=True is the release recipe (the option before recipes)."""
    version = parse_version(version) if isinstance(version, str) else version
    chosen = recipe_named("release" if optimized else recipe)
    name = version.text + chosen.suffix
    if say is None:
        def say(text: str) -> None:
            print(f"[{name}] {text}", flush=True)
    root = Path(root).absolute() if root is not None else cache_root()
    pythons = root / "pythons"
    final = pythons / name
    existing = read_build(final)
    if existing is not None:
        if existing["recipe"] != chosen.name:
            # Made before recipes, under the name the lineage now uses.
            raise ProvisionError(
                f"{final} holds a {existing['recipe']} build of {version} (configure "
                f"{' '.join(existing.get('configure_args', []))}), not the {chosen.name} recipe; "
                f"move it to {pythons / (version.text + RECIPES[existing['recipe']].suffix)} to "
                f"keep it, or remove it, then build again")
        say(f"{name} already built at {final}")
        return final
    if final.exists():
        raise ProvisionError(f"{final} exists but holds no {BUILD_INFO}: remove it to build "
                             f"{name}")
    if sha256 is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
        raise UsageError(f"--sha256 {sha256!r} is not a sha256 hex digest")
    jobs = jobs or os.cpu_count() or 1

    source = resolve_tarball(version, root, tarball=tarball, url=url, sha256=sha256,
                             debian_source=debian_source, say=say)
    say(f"tarball {source.path} (sha256 {source.sha256})")

    pythons.mkdir(parents=True, exist_ok=True)
    _remove_stale_partials(pythons, name, say)
    log = _new_log(pythons / "logs", name)
    say(f"building with the {chosen.name} recipe; log: {log}")
    configure_args = [f"--prefix={final}"]
    configure_args += FREE_THREADED_ARGS if version.free_threaded else []
    configure_args += chosen.configure_args
    if chosen.shared:
        # As pyenv does: the interpreter finds its own libpython, not another one.
        configure_args.append(f"LDFLAGS=-Wl,-rpath,{final / 'lib'}")
    partial = pythons / f".{name}.partial-{os.getpid()}"
    stage_dir = partial / "stage"
    staged = stage_dir / str(final).lstrip(os.sep)
    builder = _Builder(version, log, say)
    builder.write(f"iomatrix provision {version}, recipe {chosen.name}\ntarball: {source.path}\n"
                  f"sha256: {source.sha256}\nconfigure: {configure_args}\njobs: {jobs}\n")
    src: list[Path] = []
    probe: dict = {}

    def unpack() -> None:
        sources.extract(source.path, partial / "src")
        src.append(next((partial / "src").iterdir()))

    def check() -> None:
        bin_dir = staged / "bin"
        python3 = bin_dir / "python3"
        if not python3.exists():
            # Not every install target links bin/python3; the contract wants it.
            for name in (f"python{version.series}t", f"python{version.series}"):
                if (bin_dir / name).exists():
                    python3.symlink_to(name)
                    break
            else:
                raise ProvisionError(f"make install left no python3 in {bin_dir}")
        env = _clean_env()
        if chosen.shared:  # its rpath names the final place, which does not exist yet
            env["LD_LIBRARY_PATH"] = str(staged / "lib")
        probe.update(_probe(builder, python3, env))
        if probe["python_version"] != version.python_version:
            raise ProvisionError(f"the tarball built Python {probe['python_version']}, not "
                                 f"{version.python_version}")
        if probe["free_threaded"] != version.free_threaded:
            kind = "free-threaded" if probe["free_threaded"] else "with the GIL"
            raise ProvisionError(f"the build is {kind}, which {version} is not")

    partial.mkdir()
    try:
        builder.stage("unpack", unpack)
        builder.run("configure", [str(src[0] / "configure"), *configure_args], src[0])
        builder.run("make", ["make", f"-j{jobs}"], src[0])
        builder.run("install", ["make", "install", f"DESTDIR={stage_dir}"], src[0])
        builder.stage("check", check)
        missing = missing_modules(log.read_text(errors="replace"))
        if missing:
            say(f"warning: built without {', '.join(missing)} (missing build dependencies; "
                "see the log)")
        info = {
            "version": version.text,
            "python_version": version.python_version,
            "free_threaded": version.free_threaded,
            "configure_args": configure_args,
            "recipe": chosen.name,
            "optimized": chosen.name == "release",
            "tarball": source.url or str(source.path),
            "tarball_path": str(source.path),
            "sha256": source.sha256,
            "build_seconds": round(time.monotonic() - builder.start, 3),
            "stage_seconds": builder.stage_seconds,
            "jobs": jobs,
            "built_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "log": str(log),
            "sys_version": probe["sys_version"],
            "missing_modules": missing,
        }
        (staged / BUILD_INFO).write_text(json.dumps(info, indent=2) + "\n")
        if final.exists():
            raise ProvisionError(f"{final} appeared while building (another provision run?)")
        os.rename(staged, final)
        try:
            builder.stage("check in place", lambda: _check_in_place(builder, final, chosen))
        except BaseException:
            os.rename(final, staged)  # not half-installed: out again, removed below
            raise
    except BaseException as exc:
        shutil.rmtree(partial, ignore_errors=True)
        if isinstance(exc, KeyboardInterrupt):
            builder.write("\n=== interrupted ===\n")
            say(f"interrupted; removed {partial}; log kept: {log}")
        elif not isinstance(exc, StageError):
            builder.write(f"\n=== failed: {exc} ===\n")
            if isinstance(exc, (ProvisionError, OSError)):
                raise ProvisionError(f"{exc}; see the log: {log}") from exc
        raise
    shutil.rmtree(partial, ignore_errors=True)
    say(f"built {name} ({chosen.name} recipe) in {_elapsed(info['build_seconds'])} at {final}: "
        f"{probe['sys_version']}")
    return final


def _probe(builder: _Builder, python3: Path, env: dict) -> dict:
    proc = procs.run([str(python3), "-c", PROBE], timeout=PROBE_TIMEOUT, env=env)
    builder.write(f"$ {python3} -c PROBE\n{proc.stdout}{proc.stderr}")
    if proc.returncode != 0:
        raise ProvisionError(f"the new interpreter does not start: {brief(proc.stderr)}")
    return json.loads(proc.stdout)


def _check_in_place(builder: _Builder, final: Path, recipe: Recipe) -> None:
    """The installed interpreter starts from its final place, on its own libpython."""
    env = _clean_env()
    env.pop("LD_LIBRARY_PATH", None)  # it must find its library by itself
    found = _probe(builder, final / "bin" / "python3", env)
    foreign = [lib for lib in found.get("libpython", [])
               if not os.path.realpath(lib).startswith(str(final) + os.sep)]
    if recipe.shared and foreign:
        raise ProvisionError(f"the new interpreter loads {foreign[0]}, not its own libpython "
                             f"in {final / 'lib'} (rpath?)")


def uv_install(versions: list[Version], http_timeout: float = UV_TIMEOUT,
               timeout: float = UV_INSTALL_TIMEOUT) -> None:
    """Run `uv python install VERSION` for each version, failing fast when offline."""
    uv = shutil.which("uv")
    if uv is None:
        raise ProvisionError("--uv: uv is not installed (pip install uv); offline, build from "
                             "source instead (drop --uv)")
    env = _clean_env()
    # Without these an offline uv retries for a long while before it gives up.
    env.setdefault("UV_HTTP_TIMEOUT", str(int(http_timeout)))
    env.setdefault("UV_HTTP_RETRIES", "0")
    for version in versions:
        cmd = [uv, "python", "install", version.text]
        print(f"[{version}] {' '.join(cmd)}", flush=True)
        try:
            proc = procs.run(cmd, env=env, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise ProvisionError(f"uv python install {version} gave no result within "
                                 f"{exc.timeout:g}s; the machine may be offline: build from "
                                 "source instead (drop --uv)") from exc
        sys.stdout.write(proc.stdout)
        if proc.returncode != 0:
            raise ProvisionError(f"uv python install {version} failed (exit {proc.returncode}): "
                                 f"{brief(proc.stderr)}; offline? build from source instead "
                                 "(drop --uv)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nox -s provision --",
        description="Build CPython from source into the iomatrix cache (see scripts/provision.py). "
                    "With no VERSION: the newest release of each minor version that this "
                    "machine lacks and can obtain (--newest).",
        epilog="Tarballs are looked up in the cache's tarballs/ directory before any download; "
               "--debian-source fetches Debian's orig tarball with apt-get. Online, "
               "`nox --download-python always` or `uv python install 3.14` (--uv) provide "
               "python-build-standalone interpreters instead of building.")
    parser.add_argument("versions", nargs="*", metavar="VERSION",
                        help="e.g. 3.14.7, 3.14.7t, 3.15.0rc2 (none: --newest)")
    parser.add_argument("--newest", action="store_true",
                        help="the newest release of each minor version this machine lacks and "
                             "can obtain (cache, Debian's pool, python.org)")
    parser.add_argument("--free-threaded", action="store_true",
                        help="with --newest: also the free-threaded (t) build of each, 3.13 on")
    parser.add_argument("--list", "--dry-run", dest="list", action="store_true",
                        help="print what --newest would build, and build nothing")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--tarball", type=Path, metavar="PATH", help="source tarball to build from")
    source.add_argument("--url", help="download the source tarball from URL")
    source.add_argument("--uv", action="store_true", help="run `uv python install VERSION` instead")
    parser.add_argument("--sha256", metavar="HEX", help="expected sha256 of the tarball")
    parser.add_argument("--debian-source", action="store_true",
                        help="fetch Debian's orig tarball with apt-get when tarballs/ lacks it")
    parser.add_argument("--recipe", default=DEFAULT_RECIPE, metavar="NAME",
                        help="how to build: " + "; ".join(
                            f"{r.name}{' (default)' if r.name == DEFAULT_RECIPE else ''}: "
                            f"{r.description}" for r in RECIPES.values()))
    parser.add_argument("--optimized", action="store_true",
                        help="the release recipe (the option's name before recipes)")
    parser.add_argument("--jobs", type=int, metavar="N", help="make -jN (default: CPU count)")
    return parser


def newest_versions(free_threaded: bool, listing_only: bool) -> tuple[list[Version], set[str]]:
    """The plan of --newest, printed; the versions to build and those from Debian."""
    from iomatrix.interpreters import newest  # it imports discovery, which imports us
    steps, notes = newest.default_plan(free_threaded)
    for step in steps:
        print(step.describe().replace(": build ", ": would build ")
              if listing_only and step.action == "build" else step.describe(), flush=True)
    for note in notes:
        print(f"note: {note}", flush=True)
    unobtainable = [step.series for step in steps if step.action == "none"]
    if unobtainable:
        print(f"could not obtain: {', '.join(unobtainable)} (no tarball in the cache, apt's "
              "index, the pool or python.org)", flush=True)
    chosen = [step for step in steps if step.action == "build"]
    return ([step.version for step in chosen],
            {step.version.text for step in chosen if "Debian" in step.where or "apt" in step.where})


@cli.main_guard
def main(argv: list[str]) -> int:
    """Exit 0 done; 2 bad input (a VERSION, an option, a refused tarball); 3 a download or
    a build failed; 130 interrupted. Never 1: that is a comparison's regression."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        versions = [parse_version(text) for text in args.versions]
        want_newest = args.newest or not versions
        if want_newest and versions:
            raise UsageError("--newest chooses the versions itself; give VERSIONs or --newest")
        if (args.list or args.free_threaded) and not want_newest:
            raise UsageError("--list and --free-threaded go with --newest (or no VERSION)")
        single = {"--tarball": args.tarball, "--url": args.url, "--sha256": args.sha256}
        for option, value in single.items():
            if value is not None and (len(versions) != 1):
                raise UsageError(f"{option} applies to one VERSION, not {len(versions)}")
        if args.jobs is not None and args.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        recipe = recipe_named(args.recipe)
        if args.optimized and recipe.name not in ("release", DEFAULT_RECIPE):
            raise UsageError(f"--optimized is the release recipe; it contradicts --recipe "
                             f"{recipe.name}")
        if args.optimized:
            recipe = RECIPES["release"]
        if args.uv:
            if want_newest:
                raise UsageError("--uv needs VERSIONs")
            uv_install(versions)
            return cli.EXIT_OK
        from_debian: set[str] = set()
        if want_newest:
            versions, from_debian = newest_versions(args.free_threaded, args.list)
            if args.list or not versions:
                return cli.EXIT_OK
        failed, owed = [], cli.EXIT_OK
        for version in versions:
            try:
                build(version, tarball=args.tarball, url=args.url, sha256=args.sha256,
                      recipe=recipe.name, jobs=args.jobs,
                      debian_source=args.debian_source or version.text in from_debian)
            except ProvisionError as exc:
                bad = isinstance(exc, UsageError)
                message = cli.one_line(exc) if bad else str(exc)
                print(f"error: [{version}{recipe.suffix}] {message}", file=sys.stderr, flush=True)
                failed.append(version.text + recipe.suffix)
                owed = max(owed, cli.EXIT_BAD_INPUT if bad else cli.EXIT_INTERNAL_ERROR)
    except UsageError as exc:
        print(f"{parser.prog}: error: {cli.one_line(exc)}", file=sys.stderr)
        return cli.EXIT_BAD_INPUT
    except ProvisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return cli.EXIT_INTERNAL_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    if failed and len(versions) > 1:
        print(f"error: failed to build {', '.join(failed)}", file=sys.stderr)
    return owed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
