"""Release day: is the new release slower at file I/O than the last one of its minor version?

    nox -s release -- NEW [--against OLD] [--debian-source] [--profile quick] [--suite lutz2009]

NEW is an interpreter label of this machine (``3.13.15``) or a CPython version to build
(``3.14.8``, ``3.15.0rc3``, ``3.14.8t``); a version that is not here is provisioned first
(``scripts/provision.py``; ``--debian-source`` lets it fetch Debian's source package).
OLD defaults to the previous patch release of NEW's minor version built by NEW's recipe
(free-threaded or not alike): the one here, else built from a tarball at hand (the cache's
tarballs/, or Debian's pool with --debian-source) with that recipe, else the newest older
release here of that recipe. A base of another recipe (``--against``) is refused: the
comparison would measure the build as much as the release; ``--allow-recipe-change``
compares them anyway and the comment says so at its top. The comment also states both
builds' facts, the machine, the iomatrix commit and the command that reproduces it.
NEW and OLD run in lockstep in one run, with an A/A
twin of OLD, so the comment states how often the harness flags a difference between an
interpreter and itself. The comment is ``compare``'s, ready for a pull request:

    exit 0: no significant regression beyond --fail-above; 1: a regression; 2: bad input
    (nothing is run or written: an unknown label, a version that cannot be built here,
    no OLD to compare with, an --out among a run's results, a --run-id of a run made
    with other options); 3, one line naming the run, which is kept: a side or its A/A
    twin that did not complete (its manifest says why, as the matrix's exit 3), a full
    disk (the run stops where a later call with its --run-id resumes it), a stored file
    compare refuses, a comment that cannot be written (it is printed); or an internal
    error (a traceback).
"""
from __future__ import annotations

import html
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from iomatrix import cli
from iomatrix.markup import code, md, visible
from iomatrix.interpreters import discovery, provision as provisioning
from iomatrix.measuring import bench, runner
from iomatrix.storing import contract, outputs, store
from iomatrix.interpreters import sources
from iomatrix.paths import REPO_ROOT, RESULTS_DIR

VERSION_PATTERN = re.compile(r"(\d+)\.(\d+)\.(\d+)((?:a|b|rc)\d+)?(t?)")
DEFAULT_FAIL_ABOVE = 0.05


class ReleaseError(cli.BadInput):
    """Bad input for a release comparison: exit 2, nothing run or written."""


def parser() -> cli.Parser:
    p = cli.Parser(prog="nox -s release --",
                   description="Compare a new CPython release with the previous one.")
    p.add_argument("new", metavar="NEW", type=cli.label,
                   help="label here (3.13.15) or version to build (3.14.8, 3.15.0rc3, 3.14.8t)")
    p.add_argument("--against", metavar="OLD", type=cli.label, default=None,
                   help="label to compare with (default: the previous patch release of NEW's "
                        "minor version built by NEW's recipe: the one here, else built from a "
                        "tarball at hand, else the newest older release here of that recipe)")
    p.add_argument("--debian-source", action="store_true",
                   help="when NEW or OLD must be built, let provisioning fetch Debian's source "
                        "package")
    p.add_argument("--recipe", default=provisioning.DEFAULT_RECIPE,
                   choices=list(provisioning.RECIPES),
                   help="how to build NEW when it is not here (default: %(default)s); OLD is "
                        "built by NEW's recipe")
    p.add_argument("--allow-recipe-change", action="store_true",
                   help="compare with an OLD built by another recipe than NEW (the comment "
                        "says so at its top)")
    p.add_argument("--profile", default="quick", choices=contract.PROFILES)
    p.add_argument("--suite", default=runner.CORE_SUITE, help="suite(s), comma-separated, or all")
    p.add_argument("--results-dir", type=cli.results_dir, default=RESULTS_DIR)
    p.add_argument("--run-id", type=cli.run_id, default=None,
                   help="default: release-NEW-vs-OLD-<UTC time>")
    p.add_argument("--fail-above", type=cli.threshold, default=DEFAULT_FAIL_ABOVE,
                   help="a significant slowdown beyond this fails (default: %(default)s = 5%%)")
    p.add_argument("--allow-condition-change", action="store_true",
                   help="gate even when NEW and OLD were measured under different conditions "
                        "(compare's option)")
    p.add_argument("--out", type=Path, default=None,
                   help="the comment's file (default: reports/release-NEW-vs-OLD.md for the "
                        "default results dir, else release.md in the run's directory)")
    return p


def labels_here(interpreters) -> str:
    return ", ".join(i.label for i in sorted(interpreters, key=discovery.sort_key) if i.ok)


def find(interpreters, name: str):
    """The usable interpreter labelled ``name``, or the one whose version is ``name``."""
    by_label = {i.label: i for i in interpreters if i.ok}
    if name in by_label:
        return by_label[name]
    match = VERSION_PATTERN.fullmatch(name)
    if match is None:
        return None
    version, free_threaded = name[:-1] if match.group(5) else name, bool(match.group(5))
    same = [i for i in interpreters if i.ok and i.implementation == "cpython"
            and i.version == version and i.free_threaded == free_threaded]
    return min(same, key=lambda i: len(i.label)) if same else None


def _release_order(interp) -> tuple:
    """3.15.0rc1 < 3.15.0rc2 < 3.15.0 < 3.15.1 (sources.Version's order)."""
    text = interp.version.rstrip("+") + ("t" if interp.free_threaded else "")
    try:
        return sources.parse_version(text).sort_key
    except sources.UsageError:
        return (*interp.version_info, 3, 0, interp.free_threaded)


def previous_release(version: str) -> str | None:
    """The release before ``version`` in its minor series when it can be named without a
    list of releases: 3.13.15 -> 3.13.14, 3.15.0rc2 -> 3.15.0rc1; None for X.Y.0 and for a
    first alpha, beta or candidate (whatever came before is not one step away)."""
    match = VERSION_PATTERN.fullmatch(version)
    if match is None:
        return None
    major, minor, patch, pre, t = match.groups()
    if pre:
        kind, serial = re.fullmatch(r"([a-z]+)(\d+)", pre).groups()
        return f"{major}.{minor}.{patch}{kind}{int(serial) - 1}{t}" if int(serial) > 1 else None
    return f"{major}.{minor}.{int(patch) - 1}{t}" if int(patch) > 0 else None


def same_recipe(a, b) -> bool:
    """a and b were built by one recipe (an unreadable recipe matches: it is not refused)."""
    return a.recipe is None or b.recipe is None or a.recipe == b.recipe


def default_old(interpreters, new, build=None):
    """The previous patch release of NEW's minor version built by NEW's recipe.

    The one here; else, when ``build`` (a function of a version text returning the
    refreshed interpreters, or None when it cannot be built) builds it, that one; else the
    newest older release here of NEW's recipe. ReleaseError when none, naming the builds
    of other recipes that were passed over."""
    older = [i for i in interpreters if i.ok and i.implementation == "cpython"
             and i.version_info[:2] == new.version_info[:2]
             and i.free_threaded == new.free_threaded and i.version != new.version
             and i.source in discovery.RELEASE_SOURCES and _release_order(i) < _release_order(new)]
    fitting = [i for i in older if same_recipe(i, new)]
    previous = previous_release(new.version.rstrip("+") + ("t" if new.free_threaded else ""))
    exact = [i for i in fitting if previous and i.version == previous.rstrip("t")]
    if not exact and previous and build is not None:
        rebuilt = build(previous)
        if rebuilt is not None:
            interpreters[:] = rebuilt
            return default_old(interpreters, new)
    if exact or fitting:
        return max(exact or fitting, key=lambda i: (_release_order(i), -len(i.label)))
    series = f"{new.version_info[0]}.{new.version_info[1]}"
    other_recipes = ", ".join(f"{i.label} ({i.recipe})" for i in older)
    raise ReleaseError(
        f"no earlier {series} release built by {new.label}'s recipe ({new.recipe}) here to "
        f"compare {new.label} with"
        + (f"; builds of other recipes are not compared by default: {other_recipes}"
           if other_recipes else "")
        + (f"; build {previous} (nox -s provision -- {previous}, --debian-source to fetch it)"
           if previous else "")
        + f"; or give --against LABEL (here: {labels_here(interpreters)})")


def provision(version: str, debian_source: bool, log,
              recipe: str = provisioning.DEFAULT_RECIPE) -> None:
    """Build ``version`` by ``recipe`` with scripts/provision.py; ReleaseError when it
    cannot be built here."""
    command = [sys.executable, str(REPO_ROOT / "scripts" / "provision.py"),
               *(["--debian-source"] if debian_source else []), "--recipe", recipe, version]
    log(f"release: {version} is not on this machine; building it: {' '.join(command[1:])}")
    code = subprocess.call(command)
    if code != 0:
        hint = "" if debian_source else " (--debian-source lets it fetch Debian's source package)"
        raise ReleaseError(f"cannot build {version} here (provisioning exited {code}){hint}; "
                           f"build it with `nox -s provision -- {version} --recipe {recipe}` or "
                           "declare an interpreter in iomatrix.toml, then rerun")


def tarball_at_hand(version: str) -> bool:
    """The cache's tarballs/ holds version's source (python.org's or Debian's name)."""
    tarballs = provisioning.cache_root() / "tarballs"
    return any((tarballs / name).is_file()
               for name in sources.parse_version(version).tarball_names)


def base_builder(new, debian_source: bool, log):
    """A function building OLD by NEW's recipe (for default_old), or None when NEW's
    recipe is not one provisioning makes (a distribution's build, an unreadable one)."""
    recipe = provisioning.recipe_reading_as(new.recipe)
    if recipe is None:
        return None

    def build(version: str):
        if not (tarball_at_hand(version) or debian_source):
            log(f"release: no tarball of {version} at hand (--debian-source fetches it)")
            return None
        try:
            provision(version, debian_source, log, recipe.name)
        except ReleaseError as exc:
            log(f"release: {exc}")
            return None
        return discovery.discover()
    return build


def resolve(args, interpreters, log=print):
    """(interpreters, NEW, OLD), building NEW when it is a version that is not here."""
    new = find(interpreters, args.new)
    if new is None and VERSION_PATTERN.fullmatch(args.new) is None:
        raise ReleaseError(f"unknown interpreter {args.new!r}: not a label here "
                           f"({labels_here(interpreters)}) and not a "
                           "CPython version such as 3.14.8 or 3.15.0rc3")
    if args.against is not None and find(interpreters, args.against) is None:
        raise ReleaseError(f"unknown interpreter {args.against!r} for --against; labels here: "
                           + labels_here(interpreters))
    if new is None:
        provision(args.new, args.debian_source, log, args.recipe)
        interpreters = discovery.discover()
        new = find(interpreters, args.new)
        if new is None:
            raise ReleaseError(f"{args.new} was built but discovery does not find it; see "
                               "`cd scripts && python -m iomatrix.interpreters.discovery`")
    interpreters = list(interpreters)
    old = find(interpreters, args.against) if args.against else default_old(
        interpreters, new, base_builder(new, args.debian_source, log))
    if old.label == new.label:
        raise ReleaseError(f"NEW and OLD are the same interpreter ({new.label})")
    if not same_recipe(old, new) and not args.allow_recipe_change:
        raise ReleaseError(
            f"{old.label} is built {old.recipe} and {new.label} {new.recipe}: the comparison "
            "would measure the change of build recipe as much as the release; build "
            f"{old.version} by {new.label}'s recipe (nox -s provision -- {old.version} --recipe "
            f"{getattr(provisioning.recipe_reading_as(new.recipe), 'name', 'NAME')}) or give "
            "--allow-recipe-change")
    return interpreters, new, old


# -- the comment's context -------------------------------------------------------------

BUILD_ROWS = (("version", "version"), ("source", "source"), ("recipe", "recipe"),
              ("libpython", "shared"), ("PGO", "pgo"), ("LTO", "lto"),
              ("frame pointers", "frame_pointers"), ("JIT", "jit"), ("OPT", "opt"),
              ("configure", "configure_args"), ("compiler", "compiler"))


def _fact(entry: dict, key: str) -> str:
    value = entry.get(key)
    if key == "shared":
        return discovery.linkage_text(entry)
    if value is None or value == "":
        return "unknown" if key in ("recipe", "pgo", "frame_pointers", "jit") else "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = str(value)
    if key == "configure_args":  # install paths say nothing about speed
        try:  # a manifest's text: an unbalanced quote of either kind is words, no crash
            words = shlex.split(text)
        except ValueError:
            words = text.split()
        text = " ".join(w for w in words if not w.startswith(("--prefix", "--libdir")))
    return code(text) if key in ("opt", "configure_args") and text else md(text)


def builds_table(manifest: dict, old: str, new: str) -> list[str]:
    """Both builds' facts side by side, as the run's manifest recorded them."""
    entries = manifest.get("interpreters", {})
    lines = [f"| build | {code(old)} (before) | {code(new)} (after) |", "|:--|:--|:--|"]
    for title, key in BUILD_ROWS:
        lines.append(f"| {title} | {_fact(entries.get(old, {}), key)} | "
                     f"{_fact(entries.get(new, {}), key)} |")
    return lines


def iomatrix_commit() -> str:
    """The commit of this checkout, with "+ uncommitted changes" when it has them."""
    def git(*args):
        return subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True,
                              text=True, timeout=30)
    try:
        head = git("rev-parse", "--short=12", "HEAD")
        status = git("status", "--porcelain", "--untracked-files=no", "--", "scripts", "suites")
    except (OSError, subprocess.SubprocessError):
        return "unknown (no git)"
    if head.returncode != 0:
        return "unknown (not a git checkout)"
    return head.stdout.strip() + (" + uncommitted changes" if status.stdout.strip() else "")


def machine_line(manifest: dict) -> str:
    parts = [manifest.get("host"), manifest.get("cpu"),
             f"{manifest['cpu_count']} CPUs" if manifest.get("cpu_count") else None,
             f"{manifest['memory_bytes'] / 2 ** 30:.0f} GiB" if manifest.get("memory_bytes")
             else None, manifest.get("os"), manifest.get("libc")]
    return ", ".join(str(p) for p in parts if p) or "not recorded"


def reproduce_command(args, new: str, old: str) -> str:
    words = ["nox", "-s", "release", "--", new, "--against", old, "--profile", args.profile,
             "--suite", args.suite, "--fail-above", repr(args.fail_above)]
    words += ["--allow-recipe-change"] if args.allow_recipe_change else []
    return " ".join(shlex.quote(w) for w in words)


def context_lines(args, manifest: dict, new, old) -> list[str]:
    """What the comment states before the timings: a recipe change first, then both builds,
    the machine, the iomatrix commit and the command that reproduces it."""
    lines = []
    if not same_recipe(old, new):
        lines += [f"> **The builds differ: {md(old.recipe)} → {md(new.recipe)}** (--allow-recipe-change). "
                  "Every ratio below measures the change of build recipe as well as the "
                  "release.", ""]
    lines += builds_table(manifest, old.label, new.label) + [""]
    lines += [f"Machine: {md(machine_line(manifest))}. iomatrix commit: "
              f"{md(iomatrix_commit())}. Reproduce: {code(reproduce_command(args, new.label, old.label))}",
              ""]
    return lines


def release_name(interp) -> str:
    """The name a release's comment and run carry: the release (3.14.7) where the label is
    only its minor version (discovery gives "3.14" to the newest 3.14 build), so that two
    release days of one minor never share a file; any other label (3.13.15-pgo, 3.14t) as it
    is. Versions are held to platform.python_version()'s form by the probe: never a path."""
    minor = ".".join(str(interp.version).split(".")[:2])
    return str(interp.version) if interp.label == minor else interp.label


def comment_path(args, new_label: str, old_label: str) -> Path:
    if args.out is not None:
        return args.out
    if Path(args.results_dir).resolve() == RESULTS_DIR.resolve():
        return REPO_ROOT / "reports" / f"release-{new_label}-vs-{old_label}.md"
    return Path(args.results_dir) / args.run_id / "release.md"


COMMENT_START = b"## Release check: "


def is_release_comment(path: Path) -> bool:
    """Whether ``path`` is a comment this command wrote (the only file it writes over)."""
    return outputs.starts_with(path, COMMENT_START)


def check_comment_path(out: Path) -> None:
    """The comment's file: absent or a comment of an earlier release check, outside a run's
    results, in a place that takes it; exit 2 before anything is built or timed."""
    outputs.check_link_name(out, "--out")
    outputs.check_outputs([out], "--out", replaceable=is_release_comment)


def compare_files(python: str, before: Path, after: Path, fail_above: float,
                  out: Path | None = None, allow_condition_change: bool = False) \
        -> tuple[int, str]:
    """(exit status, markdown) of scripts/compare.py; its exit status is the gate's.

    compare's bad input (a stored file it refuses) is ReleaseError (main makes it exit 3
    naming the run, which is written); anything else but 0 or 1 is compare's internal
    error, raised (exit 3)."""
    command = [python, str(REPO_ROOT / "scripts" / "compare.py"), str(before), str(after),
               "--fail-above", repr(fail_above), *(["--out", str(out)] if out else []),
               *(["--allow-condition-change"] if allow_condition_change else [])]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode == cli.EXIT_BAD_INPUT:
        raise ReleaseError(f"compare refused the run: {done.stderr.strip()}")
    if done.returncode not in (cli.EXIT_OK, cli.EXIT_REGRESSION):
        raise RuntimeError(f"compare failed (exit {done.returncode}): {done.stderr.strip()}")
    return done.returncode, done.stdout


def summary_of(comment: str) -> str:
    """compare's comment up to its per-op details: the A/A twin's summary table."""
    return comment.split("<details>")[0].strip()


@cli.main_guard
def main(argv, compare_python: str = sys.executable, log=print) -> int:
    """The whole release comparison; returns the gate's exit status (0, 1), 2 or 3."""
    args = parser().parse_args(argv)
    if args.out is not None:
        check_comment_path(args.out)   # before the run, not after it
    try:
        interpreters, new, old = resolve(args, discovery.discover(), log)
    except (ReleaseError, discovery.DiscoveryError) as exc:
        print(f"release: error: {exc}", file=sys.stderr)
        return cli.EXIT_BAD_INPUT
    if args.run_id is None:
        args.run_id = (f"release-{release_name(new)}-vs-{release_name(old)}-"
                       f"{bench.DEFAULT_RUN_ID}")[:cli.MAX_NAME_LENGTH]
    out = comment_path(args, release_name(new), release_name(old))
    check_comment_path(out)   # the default place too, before anything is timed
    if args.allow_recipe_change:  # compare then gates the recipe change it states
        args.allow_condition_change = True
    log(f"release: {new.label} ({new.version}, {new.executable}) against {old.label} "
        f"({old.version}), with an A/A twin of {old.label}")
    run_args = bench.parser("release", matrix=True).parse_args(
        ["--profile", args.profile, "--suite", args.suite, "--results-dir", str(args.results_dir),
         "--run-id", args.run_id,
         # The comparison is NEW against OLD under one condition: a further allocator
         # condition would time the lineage's newest release alone (planning.lineage_labels).
         "--allocator", "steady"])
    run_dir = Path(args.results_dir) / args.run_id
    kept = f"run {args.run_id} is written and kept in {run_dir}"
    try:
        manifest = bench.run(interpreters, [old.label, new.label], run_args, aa=old.label, log=log)
    except bench.BadBenchInput as exc:   # refused before anything was written
        print(f"release: error: {exc}", file=sys.stderr)
        return cli.EXIT_BAD_INPUT
    except bench.BenchError as exc:   # a full disk mid-run, a run id in use: as the matrix's
        named = str(run_dir) in str(exc) or f"run {args.run_id} in " in str(exc) \
            or not os.path.lexists(run_dir / store.MANIFEST)   # in use: another's, not kept
        print(cli.one_line(f"release: error: {exc}{'' if named else '; ' + kept}"),
              file=sys.stderr)
        return cli.EXIT_INTERNAL_ERROR
    failed = bench.failures(manifest, [old.label, new.label, f"{old.label}-aa"])
    if failed:
        print(f"release: error: not complete: {', '.join(failed)} (see {run_dir}/manifest.json)",
              file=sys.stderr)
        return cli.EXIT_INTERNAL_ERROR   # as the matrix's: the run is written, and kept
    # From here the run is written: whatever fails is exit 3 naming it (2 says nothing was).
    run = store.Run(Path(args.results_dir), args.run_id)   # its files plain or .json.gz
    try:
        gate, comment = compare_files(compare_python, run.series_file(old.label),
                                      run.series_file(new.label), args.fail_above,
                                      allow_condition_change=args.allow_condition_change)
        _, aa_comment = compare_files(compare_python, run.series_file(old.label),
                                      run.series_file(f"{old.label}-aa"), args.fail_above,
                                      allow_condition_change=args.allow_condition_change)
    except ReleaseError as exc:
        raise cli.MachineFailure(f"{exc}; {kept}") from None
    verdict = "a regression" if gate else "no significant regression"
    text = (f"## Release check: {code(new.label)} ({md(new.version)}) against {code(old.label)} "
            f"({md(old.version)})\n\n**{verdict}** beyond {args.fail_above:.0%} (exit {gate}); "
            f"run {code(args.run_id)}, {md(args.profile)} profile, suites: {md(args.suite)}.\n\n"
            + "\n".join(context_lines(args, manifest, new, old)) + "\n"
            + comment.strip() + "\n\n<details><summary>A/A check: "
            f"<code>{html.escape(visible(old.label))}</code> against itself in the same run (how often the harness "
            "flags a difference that is not there)</summary>\n\n" + aa_comment.strip()
            + "\n\n</details>\n")
    print(cli.terminal_text(text))   # first: whatever happens to the file, it is not lost
    printed = f"the comment ({verdict}) is printed above; {kept}"
    try:
        outputs.write_outputs({out: text}, "--out", replaceable=is_release_comment,
                              unchanged=f"{out} is left as it was; {printed}")
    except cli.BadInput as exc:   # the place was taken meanwhile: the run is written all the same
        raise cli.MachineFailure(f"{exc}; {printed}") from None
    log(cli.terminal_text(f"release: wrote {out}; exit {gate}"))
    return gate


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
