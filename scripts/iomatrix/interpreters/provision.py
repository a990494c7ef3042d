"""Build CPython interpreters from source into the iomatrix cache (``nox -s provision``).

    nox -s provision -- 3.14.7 3.14.7t 3.15.0rc2
    nox -s provision -- 3.13.15 --recipe release
    python scripts/provision.py [--recipe NAME] [--jobs N] [--debian-source] VERSION [VERSION...]

VERSION is X.Y.Z with an optional pre-release (3.15.0rc2) and an optional trailing
"t" for a free-threaded build (configured --disable-gil). The tarball is found,
fetched and checked by ``iomatrix.interpreters.sources``; this module builds it (its
stages, their log and the new interpreter's checks: ``iomatrix.interpreters.build_stages``).

A recipe is how a version is built, and so part of what a benchmark of it measures (RECIPES, in
iomatrix.interpreters.cache). ``lineage``, the default, is the recipe of the interpreters
already on the machine (pyenv's: a shared libpython, CPython's own -O3), so a new release
extends the same lineage and a step between two releases is not a step between two build
scripts. One version can be built under several recipes side by side: each recipe has its own
directory, pythons/<version><suffix> (3.13.15, 3.13.15-pgo).

A build is configured with --prefix=pythons/<version><suffix> and installed with
DESTDIR into a hidden pythons/.<version><suffix>.partial-<pid>/ staging directory;
iomatrix-build.json is written into the staged tree, which is then renamed into place
and started once more from there. Discovery only looks at directories holding that
file, so it never sees half a build. A failed or interrupted build removes its staging
directory (and a build that does not start from its final place is taken out again)
and keeps its log.

With no VERSION (``--newest``) the plan is ``iomatrix.interpreters.newest``'s: the newest
release of each minor version, and beside the newest stable one its free-threaded and
PGO+LTO twins (3.14.7t, 3.14.7-pgo; ``--no-twins`` leaves them out), built after every
plain build. A twin that cannot be built leaves the plain builds and one line
("warning: twin missing: ..."); the exit status is the plain builds'. Every build is
refused unless it reads as the recipe its name says (``build_stages.check_recipe``), when
it is built and when a cached one is reused.

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
import dataclasses
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

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
# One build's stages, its log and its checks are run by interpreters.build_stages; its
# public names (the stage error, the module lists, the timeouts) stay importable from here.
from iomatrix.interpreters.build_stages import (  # noqa: F401
    HEARTBEAT_SECONDS, MODULE_LIST_HEADINGS, PROBE, PROBE_TIMEOUT, STOP_GRACE_SECONDS, Builder,
    StageError, check_existing, check_in_place, check_recipe, clean_env, elapsed, install_in_place,
    missing_modules, new_log, probe_interpreter, probe_staged, remove_stale_partials)

UV_TIMEOUT = 15  # uv's own HTTP timeout; an offline uv fails within it
UV_INSTALL_TIMEOUT = 600
FREE_THREADED_ARGS = ["--disable-gil"]


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
            # a build log tail, a path, a tool's message: shown, never acted on
            print(cli.terminal_text(f"[{name}] {text}"), flush=True)
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
        try:
            check_existing(final, chosen, version.free_threaded)
        except ProvisionError as exc:
            raise ProvisionError(f"{exc}; not reused") from exc
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
    remove_stale_partials(pythons, name, say)
    log = new_log(pythons / "logs", name)
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
    builder = Builder(version, log, say)
    builder.write(f"iomatrix provision {version}, recipe {chosen.name}\ntarball: {source.path}\n"
                  f"sha256: {source.sha256}\nconfigure: {configure_args}\njobs: {jobs}\n")
    src: list[Path] = []
    probe: dict = {}

    def unpack() -> None:
        sources.extract(source.path, partial / "src")
        src.append(next((partial / "src").iterdir()))

    def check() -> None:
        probe.update(probe_staged(builder, staged, chosen,
                                  (f"python{version.series}t", f"python{version.series}")))
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
        install_in_place(builder, staged, final, chosen, info, "another provision run?")
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
    say(f"built {name} ({chosen.name} recipe) in {elapsed(info['build_seconds'])} at {final}: "
        f"{probe['sys_version']}")
    return final


def uv_install(versions: list[Version], http_timeout: float = UV_TIMEOUT,
               timeout: float = UV_INSTALL_TIMEOUT) -> None:
    """Run `uv python install VERSION` for each version, failing fast when offline."""
    uv = shutil.which("uv")
    if uv is None:
        raise ProvisionError("--uv: uv is not installed (pip install uv); offline, build from "
                             "source instead (drop --uv)")
    env = clean_env()
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
        sys.stdout.write(cli.terminal_text(proc.stdout))
        if proc.returncode != 0:
            raise ProvisionError(f"uv python install {version} failed (exit {proc.returncode}): "
                                 f"{brief(proc.stderr)}; offline? build from source instead "
                                 "(drop --uv)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nox -s provision --",
        description="Build CPython from source into the iomatrix cache (see scripts/provision.py). "
                    "With no VERSION: the newest release of each minor version that this "
                    "machine lacks and can obtain (--newest), and the free-threaded and "
                    "PGO+LTO twins of the newest stable one.",
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
    parser.add_argument("--no-twins", action="store_true",
                        help="with --newest: leave out the twins of the newest stable release "
                             "(its free-threaded build, 3.14.7t, and its PGO+LTO build, "
                             "3.14.7-pgo), planned beside its plain build otherwise")
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


@dataclasses.dataclass(frozen=True)
class Wanted:
    """One build a provision command asks for: its version and recipe, and for a twin of
    the newest release (newest.TWIN_KINDS) its kind, which a failure does not fail for."""
    version: Version
    recipe: str = DEFAULT_RECIPE
    twin: str = ""
    debian_source: bool = False

    @property
    def name(self) -> str:
        return self.version.text + RECIPES[self.recipe].suffix

    @property
    def plain(self) -> str:
        """The plain build a twin is the twin of (3.14.7 for 3.14.7t and 3.14.7-pgo)."""
        return self.version.python_version


def newest_versions(free_threaded: bool, listing_only: bool, twins: bool = True,
                    recipe: str = DEFAULT_RECIPE) -> list[Wanted]:
    """The plan of --newest, printed; the builds it wants (the plain ones by ``recipe``),
    twins after every plain build and the PGO+LTO twin (the slowest) last."""
    from iomatrix.interpreters import newest  # it imports discovery, which imports us
    steps, notes = newest.default_plan(free_threaded, twins=twins)
    # The plain builds by the recipe asked for; --recipe release makes the plain build the
    # PGO+LTO one: one build, listed once.
    steps = [dataclasses.replace(step, recipe=recipe) if step.version and not step.twin
             else step for step in steps]
    here = {step.name for step in steps if step.action == "have"}
    steps = [step for step in steps if step.action != "build" or step.name not in here]
    steps = [step for n, step in enumerate(steps)
             if not step.version or step.name not in {s.name for s in steps[:n]}]
    for step in steps:
        print(step.describe().replace(": build ", ": would build ")
              if listing_only and step.action == "build" else step.describe(), flush=True)
    for note in notes:
        print(cli.one_line(f"note: {note}"), flush=True)
    unobtainable = [step.series for step in steps if step.action == "none"]
    if unobtainable:
        print(f"could not obtain: {', '.join(unobtainable)} (no tarball in the cache, apt's "
              "index, the pool or python.org)", flush=True)
    chosen = [step for step in steps if step.action == "build"]
    chosen.sort(key=lambda step: (bool(step.twin), step.recipe != DEFAULT_RECIPE))
    return [Wanted(step.version, step.recipe, step.twin,
                   "Debian" in step.where or "apt" in step.where) for step in chosen]


def twin_missing_line(wanted: Wanted, why: str) -> str:
    """The one line a twin that could not be built leaves (the plain builds stand)."""
    return (f"warning: twin missing: {wanted.name} ({wanted.twin} twin of {wanted.plain}) "
            f"was not built: {why}")


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
        if (args.list or args.free_threaded or args.no_twins) and not want_newest:
            raise UsageError("--list, --free-threaded and --no-twins go with --newest (or no "
                             "VERSION)")
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
        wanted = [Wanted(version, recipe.name, debian_source=args.debian_source)
                  for version in versions]
        if want_newest:
            wanted = newest_versions(args.free_threaded, args.list, twins=not args.no_twins,
                                     recipe=recipe.name)
            if args.list or not wanted:
                return cli.EXIT_OK
        failed, failed_releases, owed, missing_twins = [], set(), cli.EXIT_OK, []
        for one in wanted:
            if one.twin and one.plain in failed_releases:
                missing_twins.append(twin_missing_line(
                    one, f"its plain build {one.plain} failed"))
                continue
            try:
                build(one.version, tarball=args.tarball, url=args.url, sha256=args.sha256,
                      recipe=one.recipe, jobs=args.jobs,
                      debian_source=args.debian_source or one.debian_source)
            except ProvisionError as exc:
                bad = isinstance(exc, UsageError)
                message = cli.one_line(exc) if bad else cli.terminal_text(exc)
                if one.twin:
                    # A machine that cannot build a twin (no compiler support, a failed PGO
                    # run) keeps its plain builds: one line says which twin is missing.
                    missing_twins.append(twin_missing_line(one, cli.one_line(message)))
                    continue
                print(f"error: [{one.name}] {message}", file=sys.stderr, flush=True)
                failed.append(one.name)
                failed_releases.add(one.version.python_version)
                owed = max(owed, cli.EXIT_BAD_INPUT if bad else cli.EXIT_INTERNAL_ERROR)
        for line in missing_twins:
            print(line, file=sys.stderr, flush=True)
    except UsageError as exc:
        print(f"{parser.prog}: error: {cli.one_line(exc)}", file=sys.stderr)
        return cli.EXIT_BAD_INPUT
    except ProvisionError as exc:
        print(f"error: {cli.terminal_text(exc)}", file=sys.stderr)
        return cli.EXIT_INTERNAL_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    if failed and len(wanted) > 1:
        print(f"error: failed to build {', '.join(failed)}", file=sys.stderr)
    return owed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
