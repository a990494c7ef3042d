"""Issue 56, families 2 and 6 of hostile_probe.py: the iomatrix cache, and the cases still BAD
from before.

``cache``: one entry of the cache ($IOMATRIX_CACHE, a directory in the case's tmp) that is not
what iomatrix writes there (a FIFO, a link to /dev/zero, JSON nested 100,000 deep, a sparse
file of 2 GiB, a directory) must not hang or stop ``nox -l``: that build is left out with one
warning line naming it by its place in the cache, and every other interpreter is listed. A
cache root that is no directory (a symlink loop, a file) is one error line, exit 2. A command
that needs the entry (provision of that version) says why, exit 2, nothing written.

``still-bad-56``: changelog on bad input and on a free-threaded version (exit 2, one line);
provision refusing a downloaded tarball leaves no tarballs/ behind; upstream --run-repro with
an interpreter that is no Python; a regular file as --results-dir (upstream, compress).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

BUILD = Path("cache") / "pythons" / "3.13.0" / "iomatrix-build.json"
ENTRY_NAME = "pythons/3.13.0/iomatrix-build.json"


def cases(probe) -> list:
    return cache_cases(probe) + still_bad_cases(probe)


def _sparse(path: Path, size: int) -> None:
    with open(path, "wb") as f:
        f.truncate(size)


def _deep(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000)


HOSTILE_ENTRIES = {
    "a FIFO": os.mkfifo,
    "a symbolic link to /dev/zero": lambda path: path.symlink_to("/dev/zero"),
    "a symbolic link loop": lambda path: path.symlink_to(path.name),
    "JSON nested 100,000 levels deep": _deep,
    "a sparse file of 2 GiB": lambda path: _sparse(path, 2 << 30),
    "a directory": lambda path: path.mkdir(),
    "a JSON list, not an object": lambda path: path.write_text("[1, 2]"),
    "not JSON": lambda path: path.write_bytes(b"\xff{not json"),
}


def names_entry_once(probe):
    """nox -l listed sessions, and one warning line named the entry (not the machine path)."""
    def check(r):
        if "bench-" not in r.stdout:
            return "nox -l listed no bench session"
        lines = [line for line in r.stderr.splitlines() if ENTRY_NAME in line]
        if len(lines) != 1:
            return f"{len(lines)} lines name {ENTRY_NAME}, not one"
        if str(r.tmp) in lines[0]:
            return "the warning names the machine's path to the cache"
        return None
    return check


def cache_cases(probe) -> list:
    out = []
    family = "cache"
    allowed = ("out", "probes.json")

    for title, make in HOSTILE_ENTRIES.items():
        def entry(tmp, make=make):
            (tmp / BUILD).parent.mkdir(parents=True)
            make(tmp / BUILD)
            return probe.nox_list_argv(tmp), {}
        out.append(probe.Case(family, f"nox -l: a build's iomatrix-build.json is {title}", entry,
                              probe.clean(codes=(0,), allowed=allowed,
                                          check=names_entry_once(probe))))
        out.append(probe.Case(
            family, f"provision 3.13.0: its iomatrix-build.json is {title}",
            lambda tmp, make=make: ((tmp / BUILD).parent.mkdir(parents=True), make(tmp / BUILD),
                                    ([probe.script("provision"), "3.13.0"], {}))[2],
            probe.Expect("REFUSED", allowed=())))

    roots = {
        "a symbolic link loop": lambda tmp: (tmp / "loop").symlink_to("loop"),
        "a regular file": lambda tmp: (tmp / "loop").write_text("not a directory\n"),
        "a link to /dev/null": lambda tmp: (tmp / "loop").symlink_to("/dev/null"),
    }
    for title, make in roots.items():
        def root(tmp, make=make):
            make(tmp)
            return probe.nox_list_argv(tmp), {"IOMATRIX_CACHE": str(tmp / "loop")}
        out.append(probe.Case(family, f"nox -l: IOMATRIX_CACHE is {title}", root,
                              probe.Expect("REFUSED", allowed=())))
    out.append(probe.Case(
        family, "nox -l: the cache's pythons/ is a symbolic link loop",
        lambda tmp: ((tmp / "cache").mkdir(), (tmp / "cache" / "pythons").symlink_to("pythons"),
                     (probe.nox_list_argv(tmp), {}))[2], probe.Expect("REFUSED", allowed=())))
    out.append(probe.Case(
        family, "nox -l: the probe cache is a link to /dev/zero",
        lambda tmp: ((tmp / "probes.json").symlink_to("/dev/zero"),
                     (probe.nox_list_argv(tmp), {}))[1],
        probe.clean(codes=(0,), allowed=allowed)))
    # (the case runs in its tmp: a relative IOMATRIX_CACHE lies there)
    out.append(probe.Case(
        family, "report: IOMATRIX_CACHE is a symbolic link loop (it reads changelogs only)",
        probe.with_run(lambda tmp: probe.report_argv(), lambda: probe.RunSpec(**probe.SLOW_313),
                       env={"IOMATRIX_CACHE": "loop"},
                       also=lambda tmp: (tmp / "loop").symlink_to("loop")),
        probe.clean(codes=(0,))))

    for title, make in (("a FIFO", os.mkfifo),
                        ("a link to /dev/zero", lambda path: path.symlink_to("/dev/zero"))):
        def news_json(tmp, make=make):
            path = probe.news_tarball(tmp)
            make(path.with_name(path.name + ".news.json"))
            return [probe.script("changelog"), "--offline", "3.13.0"], {}
        out.append(probe.Case(family, f"changelog: the .news.json is {title}", news_json,
                              probe.clean(codes=(0,), allowed=("cache",))))
        out.append(probe.Case(
            family, f"provision 3.99.1: the tarball's Debian .dsc is {title}",
            lambda tmp, make=make: _tarball_with_dsc(probe, tmp, make),
            probe.Expect("REFUSED", allowed=())))
    return out


def _tarball_with_dsc(probe, tmp: Path, make):
    tarballs = tmp / "cache" / "tarballs"
    tarballs.mkdir(parents=True)
    top = "Python-3.99.1"
    probe.tarball(tarballs / "python3.99_3.99.1.orig.tar.xz",
                  [(probe.member(f"{top}/configure"))])
    make(tarballs / "python3.99_3.99.1-1.dsc")
    return [probe.script("provision"), "3.99.1"], {}


def still_bad_cases(probe) -> list:
    out = []
    family = "still-bad-56"
    changelog = probe.script("changelog")
    for title, argv, env_of in (
            ("a free-threaded version 3.14.7t", [changelog, "--offline", "3.14.7t"], None),
            ("3.14.7t, fetching", [changelog, "3.14.7t"], None),
            ("IOMATRIX_CACHE a regular file, fetching", [changelog, "3.13.0"],
             lambda tmp: ((tmp / "f").write_text("x\n"), {"IOMATRIX_CACHE": str(tmp / "f")})[1]),
            ("the cache's tarballs/ a regular file, fetching", [changelog, "3.13.0"],
             lambda tmp: ((tmp / "cache").mkdir(), (tmp / "cache" / "tarballs").write_text("x"),
                          {})[2]),
            ("IOMATRIX_CACHE a symbolic link loop", [changelog, "--offline", "3.13.0"],
             lambda tmp: ((tmp / "loop").symlink_to("loop"),
                          {"IOMATRIX_CACHE": str(tmp / "loop")})[1])):
        out.append(probe.Case(family, f"changelog: {title}",
                              lambda tmp, argv=argv, env_of=env_of: (
                                  argv, env_of(tmp) if env_of else {}),
                              probe.Expect("REFUSED", allowed=())))

    def not_a_tarball(tmp):
        (tmp / "canary" / "Python-3.99.1.tar.gz").write_text("not a tarball\n")
        return [probe.script("provision"), "3.99.1", "--url",
                (tmp / "canary" / "Python-3.99.1.tar.gz").as_uri()], {}
    out.append(probe.Case(family, "provision --url of a file that is no tarball: no tarballs/ "
                                  "left", not_a_tarball, probe.Expect("REFUSED", allowed=())))

    def upstream(tmp, *extra, results="results"):
        return [probe.script("upstream"), "read_byLines_textMode", "--between", "3.13.5",
                "3.14.7", "--results-dir", results, "--run-id", probe.RUN_A, "--out-dir",
                "out/u", *extra]
    for title, python in (("/bin/false", "/bin/false"), ("/bin/true", "/bin/true"),
                          ("a directory", "/tmp"), ("no such file", "/nonexistent/python")):
        out.append(probe.Case(
            family, f"upstream --run-repro {title}",
            probe.with_run(lambda tmp, python=python: upstream(
                tmp, "--run-repro", python, sys.executable, "--repeat", "1")),
            probe.Expect("REFUSED", allowed=())))

    def results_file(tmp):
        (tmp / "results").write_text("not a directory\n")
    out.append(probe.Case(family, "upstream: --results-dir is a regular file",
                          lambda tmp: (results_file(tmp), (upstream(tmp), {}))[1],
                          probe.Expect("REFUSED", allowed=())))
    out.append(probe.Case(family, "compress: --results-dir is a regular file",
                          lambda tmp: (results_file(tmp), ([probe.script("compress"),
                                                            "--results-dir", "results",
                                                            probe.RUN_A], {}))[1],
                          probe.Expect("REFUSED", allowed=())))
    out.append(probe.Case(family, "upstream: --results-dir under a regular file",
                          lambda tmp: (results_file(tmp), (upstream(
                              tmp, results="results/x"), {}))[1],
                          probe.Expect("REFUSED", allowed=())))
    return out
