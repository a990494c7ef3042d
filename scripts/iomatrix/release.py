"""Release day: is the new release slower at file I/O than the last one of its minor version?

    nox -s release -- NEW [--against OLD] [--debian-source] [--profile quick] [--suite lutz2009]

NEW is an interpreter label of this machine (``3.13.15``) or a CPython version to build
(``3.14.8``, ``3.15.0rc3``, ``3.14.8t``); a version that is not here is provisioned first
(``scripts/provision.py``; ``--debian-source`` lets it fetch Debian's source package).
OLD defaults to the newest other release of the same minor version on the machine, built
the same way (free-threaded or not). NEW and OLD run in lockstep in one run, with an A/A
twin of OLD, so the comment states how often the harness flags a difference between an
interpreter and itself. The comment is ``compare``'s, ready for a pull request:

    exit 0: no significant regression beyond --fail-above; 1: a regression; 2: bad input
    (nothing is run or written: an unknown label, a version that cannot be built here,
    no OLD to compare with).
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from iomatrix import bench, cli, contract, discovery, runner, store
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
                   help="label to compare with (default: the newest other release of NEW's "
                        "minor version here)")
    p.add_argument("--debian-source", action="store_true",
                   help="when NEW must be built, let provisioning fetch Debian's source package")
    p.add_argument("--profile", default="quick", choices=contract.PROFILES)
    p.add_argument("--suite", default=runner.CORE_SUITE, help="suite(s), comma-separated, or all")
    p.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    p.add_argument("--run-id", type=cli.run_id, default=None,
                   help="default: release-NEW-vs-OLD-<UTC time>")
    p.add_argument("--fail-above", type=cli.threshold, default=DEFAULT_FAIL_ABOVE,
                   help="a significant slowdown beyond this fails (default: %(default)s = 5%%)")
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


def default_old(interpreters, new):
    """The newest other release of NEW's minor version, built the same way."""
    candidates = [i for i in interpreters if i.ok and i.implementation == "cpython"
                  and i.version_info[:2] == new.version_info[:2]
                  and i.free_threaded == new.free_threaded and i.version != new.version
                  and i.source in discovery.RELEASE_SOURCES]
    if not candidates:
        raise ReleaseError(f"no other {new.version_info[0]}.{new.version_info[1]} release here to "
                           f"compare {new.label} with; give --against LABEL (here: "
                           f"{labels_here(interpreters)})")
    return max(candidates, key=lambda i: (tuple(i.version_info), i.label))


def provision(version: str, debian_source: bool, log) -> None:
    """Build ``version`` with scripts/provision.py; ReleaseError when it cannot be built here."""
    command = [sys.executable, str(REPO_ROOT / "scripts" / "provision.py"),
               *(["--debian-source"] if debian_source else []), version]
    log(f"release: {version} is not on this machine; building it: {' '.join(command[1:])}")
    code = subprocess.call(command)
    if code != 0:
        hint = "" if debian_source else " (--debian-source lets it fetch Debian's source package)"
        raise ReleaseError(f"cannot build {version} here (provisioning exited {code}){hint}; "
                           f"build it with `nox -s provision -- {version}` or declare an "
                           "interpreter in iomatrix.toml, then rerun")


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
        provision(args.new, args.debian_source, log)
        interpreters = discovery.discover()
        new = find(interpreters, args.new)
        if new is None:
            raise ReleaseError(f"{args.new} was built but discovery does not find it; see "
                               "`python scripts/iomatrix/discovery.py`")
    old = find(interpreters, args.against) if args.against else default_old(interpreters, new)
    if old.label == new.label:
        raise ReleaseError(f"NEW and OLD are the same interpreter ({new.label})")
    return interpreters, new, old


def comment_path(args, new_label: str, old_label: str) -> Path:
    if args.out is not None:
        return args.out
    if Path(args.results_dir).resolve() == RESULTS_DIR.resolve():
        return REPO_ROOT / "reports" / f"release-{new_label}-vs-{old_label}.md"
    return Path(args.results_dir) / args.run_id / "release.md"


def compare_files(python: str, before: Path, after: Path, fail_above: float,
                  out: Path | None = None) -> tuple[int, str]:
    """(exit status, markdown) of scripts/compare.py; its exit status is the gate's."""
    command = [python, str(REPO_ROOT / "scripts" / "compare.py"), str(before), str(after),
               "--fail-above", repr(fail_above), *(["--out", str(out)] if out else [])]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"compare failed (exit {done.returncode}): {done.stderr.strip()}")
    return done.returncode, done.stdout


def summary_of(comment: str) -> str:
    """compare's comment up to its per-op details: the A/A twin's summary table."""
    return comment.split("<details>")[0].strip()


def main(argv, compare_python: str = sys.executable, log=print) -> int:
    """The whole release comparison; returns the gate's exit status (0, 1) or 2."""
    args = parser().parse_args(argv)
    try:
        interpreters, new, old = resolve(args, discovery.discover(), log)
    except (ReleaseError, discovery.DiscoveryError) as exc:
        print(f"release: error: {exc}", file=sys.stderr)
        return cli.EXIT_BAD_INPUT
    if args.run_id is None:
        args.run_id = f"release-{new.label}-vs-{old.label}-{bench.DEFAULT_RUN_ID}"[:cli.MAX_NAME_LENGTH]
    log(f"release: {new.label} ({new.version}, {new.executable}) against {old.label} "
        f"({old.version}), with an A/A twin of {old.label}")
    run_args = bench.parser("release", matrix=True).parse_args(
        ["--profile", args.profile, "--suite", args.suite, "--results-dir", str(args.results_dir),
         "--run-id", args.run_id])
    try:
        manifest = bench.run(interpreters, [old.label, new.label], run_args, aa=old.label, log=log)
    except bench.BenchError as exc:
        print(f"release: error: {exc}", file=sys.stderr)
        return cli.EXIT_BAD_INPUT
    run_dir = Path(args.results_dir) / args.run_id
    failed = bench.failures(manifest, [old.label, new.label, f"{old.label}-aa"])
    if failed:
        print(f"release: error: not complete: {', '.join(failed)} (see {run_dir}/manifest.json)",
              file=sys.stderr)
        return cli.EXIT_BAD_INPUT
    gate, comment = compare_files(compare_python, run_dir / f"{old.label}.json",
                                  run_dir / f"{new.label}.json", args.fail_above)
    _, aa_comment = compare_files(compare_python, run_dir / f"{old.label}.json",
                                  run_dir / f"{old.label}-aa.json", args.fail_above)
    verdict = "a regression" if gate else "no significant regression"
    text = (f"## Release check: `{new.label}` ({new.version}) against `{old.label}` "
            f"({old.version})\n\n**{verdict}** beyond {args.fail_above:.0%} (exit {gate}); "
            f"run `{args.run_id}`, {args.profile} profile, suites: {args.suite}.\n\n"
            + comment.strip() + "\n\n<details><summary>A/A check: "
            f"<code>{old.label}</code> against itself in the same run (how often the harness "
            "flags a difference that is not there)</summary>\n\n" + aa_comment.strip()
            + "\n\n</details>\n")
    out = comment_path(args, new.label, old.label)
    out.parent.mkdir(parents=True, exist_ok=True)
    store.atomic_write_text(out, text)
    print(text)
    log(f"release: wrote {out}; exit {gate}")
    return gate


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
