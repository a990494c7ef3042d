"""A hostile-input probe of the command lines (issue 34): >100 cases, each GOOD or BAD.

    .nox/tests/bin/python docs/experiments/hostile_probe.py [--python PY] [--family F]
                                                            [--case TEXT] [--keep] [--list]

Each case builds its input in a fresh temporary directory (a results store, a tarball, an
environment variable), with a ``canary/`` directory beside it, then runs one real command
(scripts/report.py, compare.py, history.py, agree.py, preview.py, provision.py, or
``python -m nox -l``) in a subprocess, in that directory, under a 120 s limit. The case
states what the contract asks (cli.py's exit codes; issue 34's "What to build"):

- ``REFUSED``: exit 2, an error line, no traceback, and nothing written anywhere;
- ``CLEAN`` (with the exit codes it allows): no traceback; nothing written outside the
  case's allowed directories (a snapshot of the whole temporary tree before and after,
  and of the repository's results/ and reports/); every page, HTML file, CSV and the
  terminal output free of live markup (a ``<script>``, an ``on...=`` handler, a
  ``javascript:`` link, a ``file://`` source, an injected heading: markdown is rendered
  with markdown-it as GitHub would, raw HTML on), control characters, spreadsheet
  formulas, ``inf`` and ``nan``; exit 2 there also means nothing written;
- a case may add a check of its own (a page that must stay the main page, a number that
  must not be printed).

The canary directory is where the path-like names point; it must be unchanged. The probe
prints GOOD or BAD per case with the reason, then the totals per family. It is correct
whatever the code it probes: cases are BAD until the code keeps the contract.

As root, permissions do not stop a write: a "read-only" output is a path on a read-only
file system (/proc, /sys) instead.
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
LIMIT_SECONDS = 120
RUN_A, RUN_B = "20260101T000000Z-a", "20260102T000000Z-b"
OPS = ("read_byLines_textMode", "write_byLines_textMode")

# Markup in every name and string field: (short name, text). Each carries "alert(1)" or
# "injected" or "evil" as its marker, which the checks look for.
MARKUP = [
    ("newline-fence", "op\n```\n# injected\n```"),
    ("backtick", "tick`evil`tick"),
    ("script", "<script>alert(1)</script>"),
    ("onerror", "<img src=x onerror=alert(1)>"),
    ("javascript-link", "[click](javascript:alert(1))"),
    ("file-image", "![x](file:///etc/passwd)"),
    ("ansi", "\x1b[31mevil\x1b[0m"),
    ("formula", '=HYPERLINK("http://evil.example","x")'),
]


# -- building inputs -------------------------------------------------------------------

def contract():
    sys.path.insert(0, str(SCRIPTS))
    from iomatrix.storing import contract as module  # the suites' own writer, stdlib only
    return module


def pyperf_file(path: Path, ops: dict, suite="lutz2009", bench_meta=None, run_meta=None):
    """{op: [mean of process 1, ...]}: one run per process, as the matrix writes them."""
    c = contract()
    benchmarks = []
    for op, means in ops.items():
        runs = [({"date": "2026-01-01 00:00:00", c.KEY_ROUND: r, **(run_meta or {})},
                 [(1, m)], [m, m]) for r, m in enumerate(means)]
        meta = {c.KEY_SUITE: suite, c.KEY_CATEGORY: "read-text", c.KEY_BYTES: 1_000_000,
                c.KEY_IO: "c", c.KEY_CACHE: "warm", c.KEY_PROFILE: "quick",
                c.KEY_ALLOCATOR: "steady", c.KEY_OUTPUT: "new", c.KEY_CLOCK: "cpu",
                **(bench_meta or {})}
        benchmarks.append(c.pyperf_benchmark(op, meta, runs))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(c.pyperf_document(benchmarks), indent=1))


def counters_doc(series: str, ops=OPS, **entry_extra) -> dict:
    minor = int(series.split(".")[1]) if re.fullmatch(r"3\.\d+", series) else 13
    return {"iomatrix_counters_version": 1, "series": series, "calls": 1,
            "interpreter": {"label": series, "implementation": "cpython",
                            "version_info": [3, minor, 0]},
            "methods": {"syscalls": "strace", "instructions": "callgrind"}, "skipped": {},
            "ops": {op: {"suite": "lutz2009", "bytes_per_call": 100_000, "calls": 1,
                         "syscalls": {"read": 4, "openat": 1}, "instructions": 50_000,
                         "rusage": {"minflt": 2, "majflt": 0, "nvcsw": 0, "nivcsw": 1},
                         **entry_extra} for op in ops}}


@dataclasses.dataclass
class RunSpec:
    """A small valid run, and what a case changes in it."""
    run_id: str = RUN_A
    labels: tuple = ("3.12", "3.13")
    ops: tuple = OPS
    suite: str = "lutz2009"
    speed: dict = dataclasses.field(default_factory=dict)   # label -> factor
    means: dict | None = None        # label -> {op: [means]} instead of the generated ones
    bench_meta: dict = dataclasses.field(default_factory=dict)
    run_meta: dict = dataclasses.field(default_factory=dict)
    manifest: dict = dataclasses.field(default_factory=dict)   # merged at the top
    session: dict = dataclasses.field(default_factory=dict)    # merged into sessions[0]
    interpreter: dict = dataclasses.field(default_factory=dict)  # merged into each entry
    counters: Callable | None = counters_doc   # label -> document, None: no counters
    phase_rows: list | None = None             # (loop, copy) seconds; None: a good probe
    extra_files: dict = dataclasses.field(default_factory=dict)  # relative path -> text


def make_run(results: Path, spec: RunSpec) -> Path:
    run_dir = results / spec.run_id
    run_dir.mkdir(parents=True)
    interpreters = {}
    for k, label in enumerate(spec.labels):
        minor = 12 + k
        means = (spec.means or {}).get(label) or {
            op: [0.01 * spec.speed.get(label, 1.0) * (1 + 0.001 * r) for r in range(6)]
            for op in spec.ops}
        pyperf_file(run_dir / f"{label}.json", means, spec.suite, spec.bench_meta, spec.run_meta)
        if spec.counters is not None:
            (run_dir / f"{label}.counters.json").write_text(
                json.dumps(spec.counters(label)))
        interpreters[label] = {"label": label, "implementation": "cpython",
                               "version_info": [3, minor, 0], "status": "ok",
                               "version": f"3.{minor}.0", "recipe": "shared-O3",
                               **spec.interpreter}
    rows = spec.phase_rows or [(0.0015, 0.0008)] * 12
    (run_dir / "phase").mkdir()
    (run_dir / "phase" / "s.tsv").write_text(
        "# iomatrix phase probe 1: wall_time loop_seconds copy_seconds\n"
        + "".join(f"{1.7e9 + i:.3f}\t{loop!r}\t{copy!r}\n" for i, (loop, copy) in enumerate(rows)))
    session = {"started": "2026-01-01T00:00:00+00:00", "pid": 1,
               "phase_probe": {"status": "measured", "cpu": 1, "file": "phase/s.tsv"},
               **spec.session}
    manifest = {"run_id": spec.run_id, "host": "probehost", "profile": "quick",
                "cache": "warm", "allocator": "steady", "output": "new", "clock": "auto",
                "affinity": "one", "suites": [spec.suite], "io": ["c"], "cpu_count": 2,
                "started": "2026-01-01T00:00:00+00:00", "interpreters": interpreters,
                "sessions": [session], **spec.manifest}
    (run_dir / "manifest.json").write_text(json.dumps(manifest, indent=1))
    for name, text in spec.extra_files.items():
        (run_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / name).write_text(text)
    return run_dir


def tarball(path: Path, members: list) -> Path:
    """A gzip'd source tarball: (TarInfo-ish dict, data or None) members."""
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


class SparseWriter(io.RawIOBase):
    """A file that skips runs of zero blocks (seek) instead of writing them: a tarball with
    a 3 GiB member of zeros costs a few kB of disk."""

    def __init__(self, path: Path):
        self.f = open(path, "wb")

    def writable(self):
        return True

    def tell(self):
        return self.f.tell()

    def write(self, data):
        data = bytes(data)
        if not data.strip(b"\0"):
            self.f.seek(len(data), os.SEEK_CUR)
        else:
            self.f.write(data)
        return len(data)

    def close(self):
        self.f.truncate()
        self.f.close()
        super().close()


def huge_sparse_tarball(path: Path, tmp: Path, size: int = 3 * 2 ** 30) -> Path:
    """An uncompressed tarball (sparse on disk) whose one member is ``size`` zero bytes,
    made with tarfile from a sparse file."""
    sparse = tmp / "zeros.bin"
    with open(sparse, "wb") as f:
        f.truncate(size)
    out = SparseWriter(path)
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        tar.add(sparse, arcname="Python-3.99.1/huge.bin")
    out.close()
    sparse.unlink()
    return path


def member(name, kind=tarfile.REGTYPE, data=b"x", linkname=""):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    if kind == tarfile.REGTYPE:
        info.size = len(data)
    if kind in (tarfile.CHRTYPE, tarfile.BLKTYPE):
        info.devmajor, info.devminor = 1, 3
    return info, data if kind == tarfile.REGTYPE else None


# -- outcomes --------------------------------------------------------------------------

@dataclasses.dataclass
class Result:
    rc: int | None
    stdout: str
    stderr: str
    changed: dict          # relative path -> "added" / "changed" / "removed"
    tmp: Path
    seconds: float


LIVE_MARKUP = [
    (re.compile(r"<script[^>]*>[^<]*alert\(", re.I), "a live <script>"),
    (re.compile(r"<[a-z][^>]*\son\w+\s*=", re.I), "a live on...= handler"),
    (re.compile(r"""href\s*=\s*["']?\s*javascript:""", re.I), "a live javascript: link"),
    (re.compile(r"""src\s*=\s*["']?\s*file:""", re.I), "a file:// source"),
    (re.compile(r"<h[1-6][^>]*>\s*injected", re.I), "an injected heading"),
    (re.compile(r"<code>evil</code>|</code>evil<code>", re.I), "a code span broken open"),
]
NON_FINITE = re.compile(r"(?<![A-Za-z])(?:[-+±]?inf|nan)(?![A-Za-z])", re.I)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def render_markdown(text: str) -> str:
    try:
        from markdown_it import MarkdownIt
    except ImportError:   # raw text then: the checks still see raw tags
        return text
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(text)


def text_problems(name: str, text: str, kind: str, forbidden=()) -> list[str]:
    """What is wrong with one output text (a page, HTML, CSV, the terminal's output)."""
    out = []
    if CONTROL.search(text.replace("\t", "").replace("\r", "")):
        out.append(f"{name}: a control character (e.g. an ANSI escape)")
    shown = render_markdown(text) if kind == "md" else text
    if kind in ("md", "html"):
        for pattern, what in LIVE_MARKUP:
            if pattern.search(shown):
                out.append(f"{name}: {what}")
    if kind == "csv":
        try:
            for row in csv.reader(io.StringIO(text)):
                for cell in row:
                    if cell[:1] in ("=", "@", "+") or (cell[:1] == "-" and not re.match(
                            r"-[0-9.]", cell)):
                        out.append(f"{name}: a cell read as a formula: {cell[:30]!r}")
                        break
        except csv.Error as exc:
            out.append(f"{name}: not CSV: {exc}")
    if kind in ("md", "csv", "terminal"):
        plain = re.sub(r"<[^>]+>", "", shown)
        match = NON_FINITE.search(plain)
        if match:
            out.append(f"{name}: a non-finite number {plain[max(0, match.start() - 30):match.end()]!r}")
    for bad in forbidden:
        if bad in text:
            out.append(f"{name}: prints {bad!r}")
    return out


def written_texts(result: Result, allowed: tuple) -> list[tuple[str, str, str]]:
    """(name, text, kind) of the files the command wrote in the allowed directories."""
    out = []
    for rel, how in sorted(result.changed.items()):
        if how == "removed":
            continue
        path = result.tmp / rel
        kind = {".md": "md", ".html": "html", ".csv": "csv", ".json": "json"}.get(path.suffix)
        if kind is None or path.is_symlink() or not path.is_file():
            continue
        out.append((rel, path.read_text(errors="replace"), kind))
    return out


def inside(rel: str, allowed: tuple) -> bool:
    return any(rel == a or rel.startswith(a.rstrip("/") + "/") for a in allowed)


@dataclasses.dataclass
class Expect:
    """What the contract asks of a case."""
    kind: str                               # "REFUSED" or "CLEAN"
    codes: tuple = (0, 2)                   # CLEAN: the exit codes it allows
    allowed: tuple = ("out",)               # where the command may write (relative)
    forbidden: tuple = ()                   # strings no output may contain
    check: Callable | None = None           # result -> problem text or None

    def judge(self, r: Result) -> list[str]:
        problems = []
        if r.rc is None:
            return [f"did not end within {LIMIT_SECONDS} s"]
        if "Traceback (most recent call last)" in r.stderr + r.stdout:
            problems.append(f"a traceback (exit {r.rc}): "
                            + r.stderr.strip().splitlines()[-1][:160])
        canary = [p for p in r.changed if inside(p, ("canary",))]
        if canary:
            problems.append(f"the canary changed: {canary[:3]}")
        refused = self.kind == "REFUSED" or r.rc == 2
        if self.kind == "REFUSED" and r.rc != 2:
            problems.append(f"exit {r.rc}, not 2")
        if self.kind == "CLEAN" and r.rc not in self.codes:
            problems.append(f"exit {r.rc}, not one of {self.codes}")
        if r.rc == 2:
            lines = [line for line in r.stderr.splitlines() if line.strip()]
            if not lines or "error" not in lines[-1].lower():
                problems.append(f"exit 2 without an error line: {r.stderr[-160:]!r}")
        if refused and r.changed:
            problems.append(f"refused, yet wrote {sorted(r.changed)[:3]}")
        outside = [p for p in r.changed if not inside(p, self.allowed)]
        if outside and not refused:
            problems.append(f"wrote outside {self.allowed}: {sorted(outside)[:3]}")
        for name, text, kind in written_texts(r, self.allowed):
            if kind != "json":
                problems += text_problems(name, text, kind, self.forbidden)
        problems += text_problems("terminal", r.stdout + r.stderr, "terminal", self.forbidden)
        if self.check is not None and not problems:
            problem = self.check(r)
            if problem:
                problems.append(problem)
        return problems


REFUSED = Expect("REFUSED")


def clean(codes=(0, 2), allowed=("out",), forbidden=(), check=None) -> Expect:
    return Expect("CLEAN", codes, allowed, forbidden, check)


# -- running ---------------------------------------------------------------------------

def snapshot(top: Path) -> dict:
    """relative path -> what identifies its content (type, size, mtime, digest, link)."""
    out = {}
    for directory, dirs, files in os.walk(top, followlinks=False):
        for name in dirs + files:
            path = Path(directory) / name
            rel = str(path.relative_to(top))
            try:
                st = path.lstat()
            except OSError:
                continue
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir", st.st_mode)
            elif path.is_file() and st.st_blocks * 512 < 2 ** 20 and st.st_size < 2 ** 22:
                out[rel] = ("file", st.st_size, st.st_mtime_ns,
                            hashlib.sha1(path.read_bytes()).hexdigest())
            else:
                out[rel] = ("other", st.st_size, st.st_mtime_ns, st.st_mode)
    return out


def differences(before: dict, after: dict) -> dict:
    out = {}
    for rel in before.keys() | after.keys():
        if rel not in after:
            out[rel] = "removed"
        elif rel not in before:
            out[rel] = "added"
        elif before[rel] != after[rel] and before[rel][0] != "dir":
            out[rel] = "changed"
    return out


@dataclasses.dataclass
class Case:
    family: str
    name: str
    setup: Callable        # tmp -> (argv after the python, extra env); builds the input
    expect: Expect


def outside_snapshot() -> dict:
    """The repository's own results/ and reports/: a tool's default outputs."""
    out = {}
    for top in (ROOT / "results", ROOT / "reports"):
        if top.exists():
            out.update({f"{top.name}/{k}": v for k, v in snapshot(top).items()})
    return out


def run_case(case: Case, python: str, keep: bool) -> tuple[list[str], Result | None]:
    tmp = Path(tempfile.mkdtemp(prefix="iomatrix-probe-"))
    try:
        (tmp / "canary").mkdir()
        (tmp / "canary" / "keep.md").write_text("the canary\n")
        (tmp / "out").mkdir()
        argv, env = case.setup(tmp)
        command = [python, *[str(a) for a in argv]]
        environ = {**os.environ, "IOMATRIX_CACHE": str(tmp / "cache"),
                   "IOMATRIX_PROBE_CACHE": str(tmp / "probes.json"), "NO_COLOR": "1",
                   "MPLBACKEND": "Agg", **env}
        before, repo_before = snapshot(tmp), outside_snapshot()
        started = time.monotonic()
        try:
            done = subprocess.run(command, cwd=tmp, env=environ, capture_output=True,
                                  timeout=LIMIT_SECONDS, stdin=subprocess.DEVNULL)
            rc, stdout, stderr = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as exc:
            rc, stdout, stderr = None, exc.stdout or b"", exc.stderr or b""
        changed = differences(before, snapshot(tmp))
        changed.update({f"<repo>/{k}": v for k, v in
                        differences(repo_before, outside_snapshot()).items()})
        result = Result(rc, stdout.decode(errors="replace"), stderr.decode(errors="replace"),
                        changed, tmp, time.monotonic() - started)
        return case.expect.judge(result), result
    except Exception as exc:  # noqa: BLE001 - a case that cannot be built is the probe's bug
        return [f"the probe could not build the case: {exc!r}"], None
    finally:
        if keep:
            print(f"    kept {tmp}")
        else:
            subprocess.run(["chmod", "-R", "u+rwX", str(tmp)], capture_output=True)
            shutil.rmtree(tmp, ignore_errors=True)


# -- the commands ----------------------------------------------------------------------

def script(name):
    return str(SCRIPTS / f"{name}.py")


def report_argv(out="out/o.md", run_id=RUN_A):
    return [script("report"), "--results-dir", "results", "--run-id", run_id, "--out", out,
            "--no-figures"]


def with_run(argv_of, spec_of=RunSpec, env=None, also=None):
    """A setup: build a run (``spec_of()``), maybe more (``also(tmp)``), then the argv."""
    def setup(tmp: Path):
        make_run(tmp / "results", spec_of())
        if also is not None:
            also(tmp)
        return argv_of(tmp), dict(env or {})
    return setup


def run_b(tmp: Path) -> None:
    """The second run of the two-run tools, beside run A."""
    make_run(tmp / "results", RunSpec(run_id=RUN_B))


TOOLS = {
    # name: argv for the good store (run A and, for two-run tools, run B) into out/
    "report": lambda tmp: report_argv(),
    "preview": lambda tmp: [script("preview"), "--results-dir", "results", "--run-id", RUN_A,
                            "--out", "out/html"],
    "compare": lambda tmp: [script("compare"), RUN_A, RUN_B, "--results-dir", "results",
                            "--out", "out/c.md", "--json", "out/c.json"],
    "history": lambda tmp: [script("history"), "3.13", "--results-dir", "results",
                            "--out", "out/h.md"],
    "agree": lambda tmp: [script("agree"), RUN_A, RUN_B, "--results-dir", "results",
                          "--json", "out/a.json"],
}
TWO_RUN_TOOLS = ("compare", "history", "agree")


def tool_case(family, name, tool, spec_of, expect, spec_b_of=None):
    """``tool`` on run A built by ``spec_of`` (and run B, alike, for the two-run tools)."""
    def setup(tmp):
        make_run(tmp / "results", spec_of())
        if tool in TWO_RUN_TOOLS:
            b = spec_b_of() if spec_b_of else dataclasses.replace(spec_of(), run_id=RUN_B)
            make_run(tmp / "results", b)
        return TOOLS[tool](tmp), {}
    return Case(family, f"{tool}: {name}", setup, expect)


def main_page_stays(rel="out/o.md"):
    def check(r: Result):
        path = r.tmp / rel
        if r.rc == 0 and (not path.exists() or "# iomatrix report" not in path.read_text()):
            return f"{rel} is not the main page any more"
        return None
    return check


# -- the cases -------------------------------------------------------------------------

def cases() -> list[Case]:
    out: list[Case] = []
    add = out.append

    # 0. controls: the good store gives GOOD everywhere (the checks themselves are sound)
    for tool in TOOLS:
        add(tool_case("control", "a good store", tool, RunSpec,
                      clean(codes=(0,), check=main_page_stays() if tool == "report" else None)))

    # 1. names used as paths: a suite or op name that walks out of the pages' directory
    path_names = {"suite ../../canary/x": "../../canary/x",
                  "suite absolute into the canary": None,   # filled per case
                  "suite ../o (the main page)": "../o",
                  "suite README": "../../README"}
    for title, suite in path_names.items():
        for tool in ("report", "preview"):
            def spec_of(suite=suite):
                return RunSpec(suite=suite or "/CANARY/abs")
            def setup(tmp, spec_of=spec_of, tool=tool, suite=suite):
                spec = spec_of()
                if suite is None:
                    spec.suite = str(tmp / "canary" / "abs")
                make_run(tmp / "results", spec)
                return TOOLS[tool](tmp), {}
            add(Case("names-as-paths", f"{tool}: {title}", setup,
                     clean(check=main_page_stays() if tool == "report" else None)))
    for title, op in (("op ../../canary/x", "read_../../canary/x"), ("op /abs", "/abs/op"),
                      ("op with a NUL", "read\x00op")):
        add(tool_case("names-as-paths", title, "report",
                      lambda op=op: RunSpec(ops=(op, OPS[1])), clean(check=main_page_stays())))

    # 2. reserved labels: a series file whose name is a reserved one
    for label in ("native", "py.counters", "x.parts", "phase", "3.13@", "3.13+pyio+pyio"):
        def also(tmp, label=label):
            pyperf_file(tmp / "results" / RUN_A / f"{label}.json",
                        {op: [0.02] * 6 for op in OPS})
        def named(r: Result, label=label):
            page = (r.tmp / "out" / "o.md")
            if r.rc == 0 and page.exists() and f"| {label} |" in page.read_text():
                return f"{label!r} reported as a series"
            return None
        add(Case("reserved-labels", f"report: series file {label}.json",
                 with_run(lambda tmp: report_argv(), also=also), clean(check=named)))
    for label in ("manifest", "native", "py.counters", "x.parts", "phase"):
        add(Case("reserved-labels", f"history: label {label}",
                 with_run(lambda tmp, label=label: [script("history"), label, "--results-dir",
                                                    "results", "--out", "out/h.md"]),
                 clean(codes=(2,))))
        add(Case("reserved-labels", f"compare: --label {label}",
                 with_run(lambda tmp, label=label: [script("compare"), RUN_A, RUN_B,
                                                    "--results-dir", "results", "--label",
                                                    label], also=run_b),
                 clean(codes=(2,))))

    # 3. output paths: through a symlinked directory into a run's phase/ and .parts/, onto
    #    a run's own files, over a file
    def linked(target_rel):
        def build(tmp):
            make_run(tmp / "results", RunSpec(run_id=RUN_B))
            target = tmp / "results" / RUN_A / target_rel
            target.mkdir(parents=True, exist_ok=True)
            (tmp / "out" / "via").symlink_to(target, target_is_directory=True)
        return build
    outputs = {"report --out": lambda o: report_argv(out=o),
               "compare --out": lambda o: [script("compare"), RUN_A, RUN_B, "--results-dir",
                                           "results", "--out", o],
               "compare --json": lambda o: [script("compare"), RUN_A, RUN_B, "--results-dir",
                                            "results", "--json", o.replace(".md", ".json")],
               "history --out": lambda o: [script("history"), "3.13", "--results-dir",
                                           "results", "--out", o],
               "agree --json": lambda o: [script("agree"), RUN_A, RUN_B, "--results-dir",
                                          "results", "--json", o.replace(".md", ".json")],
               "preview --out": lambda o: [script("preview"), "--results-dir", "results",
                                           "--run-id", RUN_A, "--out", o.replace(".md", "")]}
    for target in ("phase", ".parts/3.13"):
        for option, argv in outputs.items():
            # the link's target directory is made by the case: allowed to exist, not to fill
            add(Case("output-paths", f"{option} through a link into {target}/",
                     with_run(lambda tmp, argv=argv: argv("out/via/o.md"), also=linked(target)),
                     Expect("REFUSED", allowed=())))
    add(Case("output-paths", "report --out RUN/phase.md",
             with_run(lambda tmp: report_argv(out=f"results/{RUN_A}/phase.md")), REFUSED))
    add(Case("output-paths", "report --out RUN/3.13.md (beside a series)",
             with_run(lambda tmp: report_argv(out=f"results/{RUN_A}/3.13.json.md")),
             clean(codes=(0, 2), allowed=(f"results/{RUN_A}/3.13.json.md",
                                          f"results/{RUN_A}/3.13.json"))))

    def o_is_file(tmp):
        (tmp / "out" / "o").write_text("a file where the pages' directory goes\n")
    add(Case("output-paths", "report --out o.md where o is a file",
             with_run(lambda tmp: report_argv(), also=o_is_file), REFUSED))
    add(Case("output-paths", "report --out a symlink to the canary",
             with_run(lambda tmp: report_argv(),
                      also=lambda tmp: (tmp / "out" / "o.md").symlink_to(
                          tmp / "canary" / "keep.md")), clean(codes=(2,))))
    add(Case("output-paths", "report --out /proc (read-only file system)",
             with_run(lambda tmp: report_argv(out="/proc/iomatrix-probe.md")), REFUSED))
    add(Case("output-paths", "report --out /sys (read-only file system)",
             with_run(lambda tmp: report_argv(out="/sys/iomatrix-probe/o.md")), REFUSED))
    add(Case("output-paths", "compare --out /dev/full",
             with_run(lambda tmp: [script("compare"), RUN_A, RUN_B, "--results-dir", "results",
                                   "--out", "/dev/full"], also=run_b), REFUSED))
    out += outputs_cases()   # issue 40's outputs family: its own block, below cases()

    # 4. part files planted in a run: never read as results
    def planted(tmp):
        pyperf_file(tmp / "results" / RUN_A / ".parts" / "3.13" / "r0--read_byLines_textMode.json",
                    {OPS[0]: [99.0]})
    add(Case("part-files", "report: a planted part file is not read",
             with_run(lambda tmp: report_argv(), also=planted),
             clean(codes=(0,), forbidden=("99.0 s", "9,900"))))
    add(Case("part-files", "compare: a planted part file is not read",
             with_run(lambda tmp: [script("compare"), RUN_A, RUN_B, "--results-dir", "results",
                                   "--json", "out/c.json"],
                      also=lambda tmp: (planted(tmp), run_b(tmp))),
             clean(codes=(0,))))

    # 5. markup in every name and string field
    fields = {
        "op name": lambda m: RunSpec(ops=(f"read_{m}", OPS[1])),
        "suite name": lambda m: RunSpec(suite=m),
        "host": lambda m: RunSpec(manifest={"host": m}),
        "sampling.stopped_by": lambda m: RunSpec(session={"sampling": {
            "stopped_by": m, "extra_rounds": 1, "loose_ops": {}, "borderline_steps": [m]}}),
        "counters op key": lambda m: RunSpec(counters=lambda s: counters_doc(s, ops=(
            OPS[0], f"read_{m}"))),
        "counters syscall name": lambda m: RunSpec(counters=lambda s: counters_doc(
            s, syscalls={"read": 4, m: 1 if s == "3.12" else 3})),
        "skip reason": lambda m: RunSpec(interpreter={"counters": {"skipped": {
            "instructions": m}, "reason": m}}),
        "interpreter version": lambda m: RunSpec(interpreter={"version": m, "recipe": m}),
    }
    for field, spec_of in fields.items():
        for short, text in MARKUP:
            add(tool_case("markup", f"{field}: {short}", "report",
                          lambda spec_of=spec_of, text=text: spec_of(text), clean()))
    for short, text in MARKUP:
        add(tool_case("markup", f"op name: {short}", "preview",
                      lambda text=text: RunSpec(ops=(f"read_{text}", OPS[1])),
                      clean(allowed=("out",))))
    for short, text in MARKUP[:4] + MARKUP[6:]:
        add(tool_case("markup", f"op name: {short}", "compare",
                      lambda text=text: RunSpec(ops=(f"read_{text}", OPS[1])),
                      clean(codes=(0, 1, 2))))
    for short, text in (MARKUP[1], MARKUP[6]):
        label = "3.13" + text.replace("/", "")
        add(tool_case("markup", f"series file name: {short}", "report",
                      lambda label=label: RunSpec(labels=("3.12", label)), clean()))

    # 6. numbers out of bounds
    numbers = {
        "bytes 2**50": (lambda: RunSpec(bench_meta={"iomatrix_bytes": 2 ** 50}),
                        ("20,550,376,175", "20550376175")),
        "peak RSS -2**50": (lambda: RunSpec(run_meta={"iomatrix_peak_rss": -2 ** 50}),
                            ("-1073741824",)),
        "faults 1e12 a call": (lambda: RunSpec(run_meta={"iomatrix_minflt_per_value": 1e12}),
                               ("1,000,000,000,000", "1e+12")),
        "load average 1e300": (lambda: RunSpec(manifest={"machine_state_start": {
            "load_average": [1e300, 1.0, 1.0]}}), ("1e+300",)),
        "sampling 1e999": (lambda: RunSpec(session={"sampling": {
            "target": 1e999, "confidence": 1e999, "extra_rounds": 1, "stopped_by": "x"}}), ()),
        "sampling -5": (lambda: RunSpec(session={"sampling": {
            "target": -5, "confidence": -5, "extra_rounds": -5, "stopped_by": "x"}}),
            ("-5 rounds", "-500%")),
        "instructions 0 -> 10**15": (lambda: RunSpec(counters=lambda s: counters_doc(
            s, instructions=0 if s == "3.12" else 10 ** 15)), ()),
        "phase samples 1 ns and 1 h": (lambda: RunSpec(phase_rows=[(1e-9, 1e-9)] * 6
                                                       + [(3600.0, 3600.0)] * 6),
                                       ("3600000000000",)),
        "times 1 ns against 1 h": (lambda: RunSpec(means={
            "3.12": {op: [1e-9] * 6 for op in OPS}, "3.13": {op: [3600.0] * 6 for op in OPS}}),
            # both times lie within the schema's bounds (1 ns to 1 h), so their ratio,
            # 3.6e12, is a number the page may state; only inf, nan or a crash are BAD
            (" inf", "+inf", "-inf", " nan", "NaN")),
    }
    for title, (spec_of, forbidden) in numbers.items():
        add(tool_case("numbers", title, "report", spec_of, clean(forbidden=forbidden)))
    for title in ("bytes 2**50", "sampling 1e999", "phase samples 1 ns and 1 h"):
        spec_of, forbidden = numbers[title]
        add(tool_case("numbers", title, "preview", spec_of, clean(forbidden=forbidden)))
    for title in ("bytes 2**50", "instructions 0 -> 10**15", "phase samples 1 ns and 1 h"):
        spec_of, forbidden = numbers[title]
        add(tool_case("numbers", title, "compare", spec_of,
                      clean(codes=(0, 1, 2), forbidden=forbidden),
                      spec_b_of=lambda: RunSpec(run_id=RUN_B)))

    def ns_vs_hour(tmp):
        pyperf_file(tmp / "a.json", {op: [1e-9] * 6 for op in OPS})
        pyperf_file(tmp / "b.json", {op: [3600.0] * 6 for op in OPS})
        return [script("compare"), "a.json", "b.json", "--json", "out/c.json"], {}
    # both times are valid (1 ns to 1 h), so is their ratio: only inf or nan would be BAD
    add(Case("numbers", "compare --json: two files, 1 ns against 1 h", ns_vs_hour,
             clean(codes=(1, 2), forbidden=(" inf", "+inf", "-inf", " nan", "NaN"))))

    # 7. a counters file whose own series field names another label
    add(tool_case("counters-series", "3.13.counters.json says series 3.12", "report",
                  lambda: RunSpec(counters=lambda s: counters_doc("3.12")),
                  clean(check=lambda r: None if r.rc != 0 or "3.13.counters.json" in
                        (r.tmp / "out" / "o.md").read_text()
                        else "the counters file is dropped without a word")))
    add(tool_case("counters-series", "3.13.counters.json says series native", "report",
                  lambda: RunSpec(counters=lambda s: counters_doc("native")),
                  clean(check=lambda r: None if r.rc != 0 or "3.13.counters.json" in
                        (r.tmp / "out" / "o.md").read_text()
                        else "the counters file is dropped without a word")))

    # 8. bad IOMATRIX_PYTHONS, through the noxfile's discovery (nox -l)
    python = sys.executable
    for title, value in (("a ../ label", f"../x={python}"), ("a duplicate label",
                                                            f"a={python};a={python}"),
                         ("no =", "justaword"), ("label manifest", f"manifest={python}"),
                         ("label native", f"native={python}"),
                         ("label py.counters", f"py.counters={python}"),
                         ("label x.parts", f"x.parts={python}"),
                         ("label phase", f"phase={python}"),
                         ("Arabic-Indic digits", f"٣.١٣={python}")):
        add(Case("pythons-variable", title,
                 lambda tmp, value=value: (["-m", "nox", "--noxfile", ROOT / "noxfile.py", "-l",
                                            "--envdir", tmp / "out" / "envs"],
                                           {"IOMATRIX_PYTHONS": value}),
                 Expect("REFUSED", allowed=())))
    add(Case("pythons-variable", "control: a good entry",
             lambda tmp: (["-m", "nox", "--noxfile", ROOT / "noxfile.py", "-l", "--envdir",
                           tmp / "out" / "envs"], {"IOMATRIX_PYTHONS": f"probe={python}"}),
             clean(codes=(0,), allowed=("out", "probes.json"))))

    # 9. provision: hostile tarballs, and versions that are not ASCII digits
    def provision_with(members_of):
        def setup(tmp):
            path = members_of(tmp)
            return [script("provision"), "3.99.1", "--tarball", path], {}
        return setup
    top = "Python-3.99.1"
    hostile = {
        "a symlink member into the canary": lambda tmp: [member(f"{top}/link", tarfile.SYMTYPE,
                                                                linkname=str(tmp / "canary"))],
        "a symlink member then a file through it": lambda tmp: [
            member(f"{top}/link", tarfile.SYMTYPE, linkname=str(tmp / "canary")),
            member(f"{top}/link/planted.md", data=b"planted\n")],
        "a hardlink member to /etc/passwd": lambda tmp: [
            member(f"{top}/hard", tarfile.LNKTYPE, linkname="/etc/passwd")],
        "a character device member": lambda tmp: [member(f"{top}/null", tarfile.CHRTYPE)],
        "a block device member": lambda tmp: [member(f"{top}/disk", tarfile.BLKTYPE)],
        "a FIFO member": lambda tmp: [member(f"{top}/fifo", tarfile.FIFOTYPE)],
        "an absolute member path": lambda tmp: [member(str(tmp / "canary" / "abs.md"))],
        "a ../ member path": lambda tmp: [member(f"{top}/../../canary/up.md")],
    }
    for title, members_of in hostile.items():
        add(Case("provision", f"--tarball with {title}",
                 provision_with(lambda tmp, members_of=members_of: tarball(
                     tmp / "Python-3.99.1.tar.gz", [member(f"{top}/README")] + members_of(tmp))),
                 Expect("REFUSED", allowed=())))
    add(Case("provision", "--tarball with a 3 GiB member (sparse)",
             provision_with(lambda tmp: huge_sparse_tarball(tmp / "Python-3.99.1.tar", tmp)),
             Expect("REFUSED", allowed=())))
    add(Case("provision", "--tarball that is not a tarball",
             provision_with(lambda tmp: (tmp / "Python-3.99.1.tar.gz").write_text("no") and
                            tmp / "Python-3.99.1.tar.gz"), Expect("REFUSED", allowed=())))
    for title, version in (("Arabic-Indic digits", "٣.١٣.٠"), ("mixed digits", "3.1٣.0"),
                           ("fullwidth digits", "３.１３.０"), ("a ../ version", "../3.13.0"),
                           ("a newline", "3.13.0\n")):
        add(Case("provision", f"version with {title}",
                 lambda tmp, version=version: ([script("provision"), version, "--uv"], {}),
                 Expect("REFUSED", allowed=())))

    # 10. a results directory that is a file, or unreadable in other ways
    def results_file(tmp):
        (tmp / "results").write_text("not a directory\n")
    for tool, argv in (("report", lambda tmp: report_argv()),
                       ("compare", lambda tmp: TOOLS["compare"](tmp)),
                       ("history", lambda tmp: TOOLS["history"](tmp)),
                       ("agree", lambda tmp: TOOLS["agree"](tmp)),
                       ("preview", lambda tmp: TOOLS["preview"](tmp))):
        add(Case("results-dir", f"{tool}: --results-dir is a file",
                 lambda tmp, argv=argv: (results_file(tmp), (argv(tmp), {}))[1], REFUSED))
    add(Case("results-dir", "report: --results-dir is /dev/null",
             lambda tmp: ([script("report"), "--results-dir", "/dev/null", "--run-id", RUN_A,
                           "--out", "out/o.md", "--no-figures"], {}), REFUSED))
    add(Case("results-dir", "report: the run directory is a symlink to the canary",
             lambda tmp: ((tmp / "results").mkdir(), (tmp / "results" / RUN_A).symlink_to(
                 tmp / "canary"), (report_argv(), {}))[2], REFUSED))
    add(Case("results-dir", "report: the manifest is a FIFO",
             lambda tmp: (make_run(tmp / "results", RunSpec()),
                          (tmp / "results" / RUN_A / "manifest.json").unlink(),
                          os.mkfifo(tmp / "results" / RUN_A / "manifest.json"),
                          (report_argv(), {}))[3], clean(codes=(0, 2))))

    out += changelog_cases()
    out += interpreter_config_generated_cases()
    out += fifth_pass_cases()
    return out


# -- changelogs and their cache (issue 40, item 2) ----------------------------------------
# A run whose 3.13 (3.13.0) is twice as slow as its 3.12 (3.12.0): a finding on every op,
# whose candidates come from cache/tarballs/Python-3.13.0.tar.xz (the case's IOMATRIX_CACHE)
# and the .news.json beside it. compare of the two series files has a regression: exit 1,
# whatever the cache holds. The report and compare only read the cache (allowed: out/).

NEWS_TOP = "Python-3.13.0"
NEWS_HEAD = ("What's New in Python 3.13.0 final?\n==================================\n\n"
             "*Release date: 2024-10-07*\n\nLibrary\n-------\n\n")
NEWS_ENTRY = ("- gh-117151: Faster line iteration (readline) of :class:`io.TextIOWrapper` "
              "by 20%.\n")
SLOW_313 = dict(speed={"3.13": 2.0})


def news_tarball(tmp: Path, news: str | None = None, blocks: list | None = None) -> Path:
    """cache/tarballs/Python-3.13.0.tar.xz (uncompressed: tarfile reads it by its magic):
    a README and Misc/NEWS holding ``news``, or ``blocks`` of raw headers instead."""
    path = tmp / "cache" / "tarballs" / f"{NEWS_TOP}.tar.xz"
    path.parent.mkdir(parents=True, exist_ok=True)
    if blocks is not None:
        # the headers, the data the last one announces as a sparse hole (zeros that cost no
        # disk, there to be read by a reader that believes the header), then a good NEWS
        headers, hole = blocks
        data = (NEWS_HEAD + NEWS_ENTRY).encode()
        news = tar_header(f"{NEWS_TOP}/Misc/NEWS", len(data)) + data + bytes(-len(data) % 512)
        with open(path, "wb") as f:
            f.write(tar_header(f"{NEWS_TOP}/README", 0) + b"".join(headers))
            f.seek(-(-hole // 512) * 512, os.SEEK_CUR)
            f.write(news + bytes(1024))
        return path
    with tarfile.open(path, "w") as tar:
        for name, text in ((f"{NEWS_TOP}/README", "readme"),
                           (f"{NEWS_TOP}/Misc/NEWS", news or NEWS_HEAD + NEWS_ENTRY)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def news_cache(tmp: Path, change) -> None:
    """A .news.json beside the tarball: the good one (as the changelog command writes it)
    with ``change(document, first entry)`` applied; bytes for a cache that is not JSON."""
    path = news_tarball(tmp)
    entry = {"number": "gh-117151", "release": "3.13.0", "date": "2024-10-07",
             "section": "Library", "text": NEWS_ENTRY.split(": ", 1)[1].strip()}
    document = {"format": 1, "source": str(path), "version": "3.13.0", "unparsed": [],
                "releases": [{"version": "3.13.0", "date": "2024-10-07", "entries": [entry]}]}
    changed = change(document, entry)
    cache = path.with_name(path.name + ".news.json")
    cache.write_bytes(changed if isinstance(changed, bytes) else json.dumps(document).encode())


def tar_header(name: str, size: int, kind=tarfile.REGTYPE, fmt=tarfile.GNU_FORMAT) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info.tobuf(format=fmt)


def compare_files_argv(tmp: Path):
    return [script("compare"), f"results/{RUN_A}/3.12.json", f"results/{RUN_A}/3.13.json",
            "--out", "out/c.md"]


def changelog_cases() -> list[Case]:
    out: list[Case] = []
    many = 150_000
    hostile_news = {
        "a heading followed by 150,000 spaces": "What's New in Python 3.1 x" + " " * many
                                                + "y\n=====\n" + NEWS_HEAD + NEWS_ENTRY,
        "a date line followed by 150,000 spaces": NEWS_HEAD.replace(
            "2024-10-07*", "2024-10-07" + " " * many + "y") + NEWS_ENTRY,
        "an entry followed by 150,000 digits": NEWS_HEAD + NEWS_ENTRY.rstrip() + " "
                                               + "1" * many + "\n",
        "an entry followed by 150,000 spaces and a role": NEWS_HEAD + NEWS_ENTRY.rstrip()
                                                          + " :func:`" + " " * many + "x\n",
        "a 4,000-digit issue number": NEWS_HEAD + "- gh-" + "9" * 4000 + ": Faster line "
                                      "iteration (readline) by 90%.\n" + NEWS_ENTRY,
        "entries with markup": NEWS_HEAD + "".join(
            f"- gh-{k}: Faster line iteration (readline) {text} by 9%.\n"
            for k, (_, text) in enumerate(MARKUP, 1)),
    }
    for title, text in hostile_news.items():
        for tool, argv_of, codes in (("report", lambda tmp: report_argv(), (0,)),
                                     ("compare", compare_files_argv, (1,))):
            out.append(Case("changelogs", f"{tool}: NEWS with {title}",
                            with_run(argv_of, lambda: RunSpec(**SLOW_313),
                                     also=lambda tmp, text=text: news_tarball(tmp, text)),
                            clean(codes=codes, forbidden=("9" * 50,))))

    hostile_caches = {
        "a URL to another site": lambda d, e: e.update(url="https://evil.example/x"),
        "a number holding <img onerror>": lambda d, e: e.update(
            number="gh-1<img src=x onerror=alert(1)>"),
        "a 4,000-digit number": lambda d, e: e.update(number="gh-" + "9" * 4000),
        "not JSON": lambda d, e: b"{not json",
        "nested 100,000 levels": lambda d, e: b"[" * 100_000,
        "a text with a script": lambda d, e: e.update(text="Faster readline <script>alert(1)"
                                                           "</script> [x](javascript:alert(1))"),
    }
    for title, change in hostile_caches.items():
        for tool, argv_of, codes in (("report", lambda tmp: report_argv(), (0,)),
                                     ("compare", compare_files_argv, (1,))):
            out.append(Case("changelogs", f"{tool}: .news.json with {title}",
                            with_run(argv_of, lambda: RunSpec(**SLOW_313),
                                     also=lambda tmp, change=change: news_cache(tmp, change)),
                            clean(codes=codes, forbidden=("evil.example", "9" * 50))))

    hostile_tarballs = {   # (headers, the data's size: a sparse hole), then a good NEWS
        "a 100 GiB member (sparse)": lambda: ([tar_header(f"{NEWS_TOP}/huge", 100 << 30)],
                                              100 << 30),
        "a 1 GiB GNU long-name header (sparse)": lambda: ([tar_header(
            "././@LongLink", 1 << 30, tarfile.GNUTYPE_LONGNAME, tarfile.USTAR_FORMAT)], 1 << 30),
        "a 1 GiB pax header (sparse)": lambda: ([tar_header(
            "pax", 1 << 30, tarfile.XHDTYPE, tarfile.USTAR_FORMAT)], 1 << 30),
    }
    for title, blocks_of in hostile_tarballs.items():
        out.append(Case("changelogs", f"report: a tarball with {title}",
                        with_run(lambda tmp: report_argv(), lambda: RunSpec(**SLOW_313),
                                 also=lambda tmp, b=blocks_of: news_tarball(tmp, blocks=b())),
                        clean(codes=(0,))))
        out.append(Case("changelogs", f"compare: a tarball with {title}",
                        with_run(compare_files_argv, lambda: RunSpec(**SLOW_313),
                                 also=lambda tmp, b=blocks_of: news_tarball(tmp, blocks=b())),
                        clean(codes=(1,))))
        out.append(Case("changelogs", f"changelog: a tarball with {title}",
                        lambda tmp, b=blocks_of: (news_tarball(tmp, blocks=b()), (
                            [script("changelog"), "--offline", "3.13.0"], {}))[1],
                        clean(codes=(3,), allowed=())))
    out.append(Case("changelogs", "changelog: NEWS with an entry followed by 150,000 digits",
                    lambda tmp: (news_tarball(tmp, hostile_news[
                        "an entry followed by 150,000 digits"]),
                        ([script("changelog"), "--offline", "3.13.0"], {}))[1],
                    clean(codes=(0,), allowed=("cache",))))
    out.append(Case("changelogs", "changelog: a version of non-ASCII digits",
                    lambda tmp: ([script("changelog"), "--offline", "٣.١٣.٠"], {}), REFUSED))
    return out


# -- issue 40: interpreter reports, config files, generated files ---------------------------
# What an interpreter says about itself (the probe's answer, and the probe cache), the
# declarations (iomatrix.toml, IOMATRIX_PYTHONS) and what `nox -s upstream` writes
# (ISSUE.md, the reproducer, its --out-dir). A hostile interpreter is a #!/bin/sh script
# printing its own probe answer: discovery runs it as it runs any Python.

def fake_answer(version="3.99.1", **overrides) -> dict:
    parts = re.match(r"([0-9]+)\.([0-9]+)\.([0-9]+)", version)
    answer = {"version": version,
              "version_info": [int(p) for p in parts.groups()] if parts else [3, 13, 0],
              "implementation": "cpython", "executable": "", "sys_version": version,
              "free_threaded": False, "gil_enabled": True, "debug": False, "linkage": "static",
              "shared": False, "configure_args": "", "optimized": False, "lto": False,
              "compiler": "GCC 12.2.0"}
    answer.update(overrides)
    return answer


def fake_python(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def printing(answer) -> str:
    """Shell code printing ``answer`` (JSON) as the probe's answer line."""
    text = json.dumps(answer) if not isinstance(answer, str) else answer
    return "printf '%s\\n' '" + text.replace("'", "'\\''") + "'"


def nox_list_argv(tmp: Path, noxfile: Path = ROOT / "noxfile.py") -> list:
    return ["-m", "nox", "--noxfile", noxfile, "-l", "--envdir", tmp / "out" / "envs"]


def lists_sessions(hostile: str):
    """nox -l listed real sessions and named the hostile interpreter on one warning line."""
    def check(r: Result):
        if "bench-" not in r.stdout:
            return "nox -l listed no bench session"
        warned = [line for line in r.stderr.splitlines() if hostile in line]
        if len(warned) != 1:
            return f"{len(warned)} warning lines name {hostile}, not one"
        return None
    return check


def project_clone(tmp: Path) -> Path:
    """A copy of the project (discovery reads iomatrix.toml beside the package it runs from)."""
    clone = tmp / "clone"
    for tree in ("scripts", "suites"):
        shutil.copytree(ROOT / tree, clone / tree, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("noxfile.py", "pyproject.toml"):
        shutil.copy(ROOT / name, clone / name)
    return clone


HOSTILE_REPORTS = {
    "a string version_info": fake_answer(version_info="3.99.1"),
    "version 3.3000.0": fake_answer("3.3000.0"),
    "markup in the version": fake_answer("3.99.1<script>alert(1)</script>"),
    "an ANSI escape and a bidi override in sys_version": fake_answer(
        sys_version="3.99.1 \x1b[31mevil\u202e"),
    "a version that is not its version_info": fake_answer("3.12.0", version_info=[3, 99, 1]),
    "a NUL in its executable": fake_answer(executable="/x\x00y"),
    "an unknown key": fake_answer(evil="<img src=x onerror=alert(1)>"),
}


def interpreter_config_generated_cases() -> list[Case]:
    out: list[Case] = []
    add = out.append
    allowed = ("out", "probes.json")

    # 11. what an interpreter says about itself: a found one is dropped with one warning
    for title, answer in HOSTILE_REPORTS.items():
        def found(tmp, answer=answer):
            bin_dir = tmp / "bin"
            fake_python(bin_dir / "python3.99", printing(answer))
            return nox_list_argv(tmp), {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
        add(Case("interpreter-report", f"nox -l: a found python3.99 reporting {title}", found,
                 clean(codes=(0,), allowed=allowed, check=lists_sessions("python3.99"))))
    for title, body in (("invalid UTF-8", r"printf 'x\377\376\n'"),
                        ("JSON nested 100,000 deep", "i=0; while [ $i -lt 100000 ]; do "
                                                     "printf '['; i=$((i+1)); done; echo"),
                        ("terminal escapes on stderr, exit 1",
                         "printf '\\033[2J\\033]0;owned\\007\\342\\200\\256evil\\n' >&2; exit 1")):
        def found_raw(tmp, body=body):
            bin_dir = tmp / "bin"
            fake_python(bin_dir / "python3.99", body)
            return nox_list_argv(tmp), {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
        add(Case("interpreter-report", f"nox -l: a found python3.99 printing {title}", found_raw,
                 clean(codes=(0,), allowed=allowed, check=lists_sessions("python3.99"))))
    add(Case("interpreter-report", "nox -l: a declared interpreter reporting a string "
                                   "version_info stays listed, unusable",
             lambda tmp: (nox_list_argv(tmp), {"IOMATRIX_PYTHONS": "hostile=" + str(fake_python(
                 tmp / "bin" / "python3", printing(fake_answer(version_info="3.99.1"))))}),
             clean(codes=(0,), allowed=allowed, check=lambda r: None if re.search(
                 r"bench-hostile.*unusable", r.stdout) else "bench-hostile not listed unusable")))

    def hostile_cache(tmp):
        sys.path.insert(0, str(SCRIPTS))
        from iomatrix.interpreters import discovery, probing
        real = next((p for p in discovery.pyenv_candidates() + discovery.debian_candidates()), None)
        key = probing._binary_key(real) if real else "none"
        (tmp / "probes.json").write_text(json.dumps({key: fake_answer(
            version_info="3.13.0", executable=real)}))
        return nox_list_argv(tmp), {}
    add(Case("interpreter-report", "nox -l: a probe cache entry with a string version_info",
             hostile_cache, clean(codes=(0,), allowed=allowed,
                                  check=lambda r: None if "bench-" in r.stdout else "no session")))
    add(Case("interpreter-report", "nox -l: the probe cache is a FIFO",
             lambda tmp: (os.mkfifo(tmp / "probes.json"), (nox_list_argv(tmp), {}))[1],
             clean(codes=(0,), allowed=allowed)))

    # 12. the declarations: iomatrix.toml (in a copy of the project) and IOMATRIX_PYTHONS
    def with_config(write):
        def setup(tmp):
            clone = project_clone(tmp)
            write(clone / "iomatrix.toml")
            return nox_list_argv(tmp, clone / "noxfile.py"), {}
        return setup
    configs = {
        "is a FIFO": lambda path: os.mkfifo(path),
        "is a directory": lambda path: path.mkdir(),
        "with brackets nested 100,000 deep": lambda path: path.write_text(
            "x = " + "[" * 100_000 + "]" * 100_000 + "\n"),
        "with 60,000 labels": lambda path: path.write_text("[interpreters]\n" + "".join(
            f'l{n} = "/x"\n' for n in range(60_000))),
        "of 2 MiB": lambda path: path.write_text("# " + "x" * (2 << 20) + "\n"),
        "with an ANSI escape and a bidi override in a label": lambda path: path.write_text(
            '[interpreters]\n"\\u001b[31mevil\\u202e" = "/usr/bin/python3"\n'),
        "with a control character in a path": lambda path: path.write_text(
            '[interpreters]\nx = "/usr/bin/python3\\u001b[2J"\n'),
    }
    for title, write in configs.items():
        add(Case("config-file", f"nox -l: iomatrix.toml {title}", with_config(write),
                 Expect("REFUSED", allowed=())))
    for title, value in (("5,000 labels", ";".join(f"l{n}=/x" for n in range(5_000))),
                         ("a control character in a path", "x=/usr/bin/python3\x1b[2J"),
                         ("a bidi override in a label", "\u202eevil=/usr/bin/python3")):
        add(Case("config-file", f"nox -l: IOMATRIX_PYTHONS with {title}",
                 lambda tmp, value=value: (nox_list_argv(tmp), {"IOMATRIX_PYTHONS": value}),
                 Expect("REFUSED", allowed=())))

    # 13. what `nox -s upstream` writes: ISSUE.md, the reproducer, --out-dir
    def upstream_argv(out_dir="out/u", op="read_byLines_textMode", *extra, run_id=RUN_A):
        return [script("upstream"), op, "--between", "3.13.5", "3.14.7", "--results-dir",
                "results", *(["--run-id", run_id] if run_id else []), "--out-dir", out_dir,
                *extra]

    def finding_spec(**entry) -> RunSpec:
        def interp(label, version):
            return {"label": label, "implementation": "cpython", "status": "ok",
                    "version": version, "version_info": [int(p) for p in version.split(".")],
                    "recipe": "shared-O3", **entry}
        return RunSpec(labels=("3.13", "3.14"), speed={"3.14": 1.3}, manifest={
            "host": MARKUP[2][1] + MARKUP[0][1], "interpreters": {
                "3.13": interp("3.13", "3.13.5"), "3.14": interp("3.14", "3.14.7")}})
    for title, entry in (("markup and escapes in the manifest's builds", {
                              "sys_version": MARKUP[6][1] + MARKUP[2][1],
                              "compiler": MARKUP[3][1], "source": MARKUP[0][1]}),
                         ("a lone quote in configure_args",
                          {"configure_args": "'--prefix=/x' \"--with-lto"})):
        add(Case("generated-files", f"upstream ISSUE.md: {title}",
                 with_run(lambda tmp: upstream_argv(), lambda entry=entry: finding_spec(**entry)),
                 # upstream fetches the candidates' changelogs into the cache ($IOMATRIX_CACHE)
                 clean(codes=(0,), allowed=(*allowed, "cache"), check=lambda r: None if (
                     r.tmp / "out" / "u" / "ISSUE.md").exists() else "no ISSUE.md")))
    # no run holds these ops (no --run-id): the reproducer alone would be written
    for title, op in (("Arabic-Indic digits", "chunks_read_٦٤KiB"),
                      ("fullwidth digits", "chunks_read_６４KiB"),
                      ("a read size of 10**7 MiB", "chunks_read_9999999MiB")):
        add(Case("generated-files", f"upstream: an op with {title}",
                 with_run(lambda tmp, op=op: upstream_argv(op=op, run_id=None), finding_spec),
                 REFUSED))
    for title, out_dir in (("in a run directory", f"results/{RUN_A}/u"),
                           ("in the results store", "results/u"),
                           ("on a read-only file system", "/proc/iomatrix-probe/u")):
        add(Case("generated-files", f"upstream --out-dir {title}",
                 with_run(lambda tmp, out_dir=out_dir: upstream_argv(out_dir=out_dir),
                          finding_spec), REFUSED))
    add(Case("generated-files", "upstream --out-dir a dangling link",
             with_run(lambda tmp: ((tmp / "out" / "link").symlink_to(tmp / "nowhere"),
                                   upstream_argv(out_dir="out/link"))[1], finding_spec),
             REFUSED))
    add(Case("generated-files", "upstream --run-repro under an interpreter that fails",
             with_run(lambda tmp: upstream_argv("out/u", "read_byLines_textMode", "--run-repro",
                                                str(fake_python(tmp / "bin" / "python", (
                                                    "cat >/dev/null; echo boom >&2; exit 1"))),
                                                sys.executable, "--repeat", "1"),
                      finding_spec),
             # (issue 56: a named interpreter that does not run is bad input, before anything)
             REFUSED))
    return out


# -- issue 40: outputs never remove what they did not make ------------------------------
# (its own block: another family's cases go in a block of their own beside it)

def report_first(argv_of=lambda tmp: report_argv(out="out/o.md", run_id=RUN_A)[:-1]):
    """A setup step: an earlier report written for real (figures drawn), as a user has one."""
    def build(tmp):
        subprocess.run([sys.executable, *argv_of(tmp)], cwd=tmp, capture_output=True,
                       env={**os.environ, "MPLBACKEND": "Agg"}, timeout=LIMIT_SECONDS,
                       check=True)
    return build


def canary_hard_link(tmp):
    """A page whose image is a hard link to the canary's file (outside the pages' tree)."""
    (tmp / "pages" / "figures").mkdir(parents=True)
    os.link(tmp / "canary" / "keep.md", tmp / "pages" / "figures" / "plot.png")
    (tmp / "pages" / "page.md").write_text("# a page\n\n![plot](figures/plot.png)\n")


def no_canary_copy(r: Result):
    copies = [rel for rel in r.changed if (r.tmp / rel).is_file()
              and (r.tmp / rel).read_bytes() == b"the canary\n" and not inside(rel, ("canary",))]
    return f"the canary's file was copied: {copies[:2]}" if copies else None


def names_run_b(r: Result):
    page = r.tmp / "out" / "o.md"
    if r.rc == 0 and f"run {RUN_B}" not in page.read_text().split("\n", 3)[1]:
        return "a run whose manifest says started 'zzzz' was taken for the newest"
    return None


def outputs_cases() -> list[Case]:
    out: list[Case] = []
    add = out.append
    family = "outputs-40"
    with_figures = lambda o: report_argv(out=o)[:-1]   # noqa: E731 - report_argv draws none
    notes = lambda name: lambda tmp: (tmp / "out" / name).write_text("# my notes\n")  # noqa: E731

    # a pages or figures directory that is not the report's own is never replaced
    add(Case(family, "report --out canary.md (a user's directory beside it)",
             with_run(lambda tmp: report_argv(out="canary.md")), REFUSED))
    add(Case(family, "report --out results.md (the results store itself)",
             with_run(lambda tmp: report_argv(out="results.md")), REFUSED))
    add(Case(family, "report --out results/x.md (inside the results store)",
             with_run(lambda tmp: report_argv(out="results/x.md")), REFUSED))
    add(Case(family, "report --out out/figures.md (the figures just drawn)",
             with_run(lambda tmp: with_figures("out/figures.md"), also=report_first()),
             REFUSED))
    add(Case(family, "report: figures/ a symbolic link to the canary",
             with_run(lambda tmp: with_figures("out/o.md"),
                      also=lambda tmp: (tmp / "out" / "figures").symlink_to(tmp / "canary")),
             REFUSED))
    add(Case(family, "report: figures/RUN a symbolic link to the canary",
             with_run(lambda tmp: with_figures("out/o.md"),
                      also=lambda tmp: ((tmp / "out" / "figures").mkdir(),
                                        (tmp / "out" / "figures" / RUN_A).symlink_to(
                                            tmp / "canary"))), REFUSED))
    add(Case(family, "report: the pages directory a symbolic link to the canary",
             with_run(lambda tmp: report_argv(),
                      also=lambda tmp: (tmp / "out" / "o").symlink_to(tmp / "canary")),
             REFUSED))
    add(Case(family, "report: a file of the user's added to an earlier report's pages",
             with_run(lambda tmp: report_argv(),
                      also=lambda tmp: (report_first(lambda t: report_argv())(tmp),
                                        (tmp / "out" / "o" / "mine.txt").write_text("x\n"))),
             REFUSED))
    add(Case(family, "report: an earlier version's pages (no marker) are replaced",
             with_run(lambda tmp: report_argv(),
                      also=lambda tmp: ((tmp / "out" / "o").mkdir(),
                                        (tmp / "out" / "o" / "old.md").write_text(
                                            "<!-- generated by scripts/report.py: do not "
                                            "edit, regenerate -->\n# old\n"))),
             clean(codes=(0,), check=main_page_stays())))
    add(Case(family, "report --out RUN/report.md (a run's own report)",
             with_run(lambda tmp: report_argv(out=f"results/{RUN_A}/report.md")),
             clean(codes=(0,), allowed=(f"results/{RUN_A}/report.md",
                                        f"results/{RUN_A}/report"))))
    # an --out that is no place for a report
    add(Case(family, "report --out under a dangling symbolic link",
             with_run(lambda tmp: report_argv(out="gone/o.md"),
                      also=lambda tmp: (tmp / "gone").symlink_to(tmp / "nowhere")), REFUSED))
    add(Case(family, "report --out a FIFO",
             with_run(lambda tmp: report_argv(out="out/f.md"),
                      also=lambda tmp: os.mkfifo(tmp / "out" / "f.md")), REFUSED))
    add(Case(family, "report --out an existing file that is not a report",
             with_run(lambda tmp: report_argv(out="out/notes.md"), also=notes("notes.md")),
             REFUSED))
    add(Case(family, "report --out a directory named d.md",
             with_run(lambda tmp: report_argv(out="out/d.md"),
                      also=lambda tmp: (tmp / "out" / "d.md").mkdir()), REFUSED))
    add(Case(family, "report --out with figures under /proc (not writable)",
             with_run(lambda tmp: with_figures("/proc/iomatrix-probe/o.md")), REFUSED))
    for name in ("a](javascript:alert(1)).md", "evil\x1b[31m.md", "my report.md"):
        add(Case(family, f"report --out named {name!r} (its pages link it)",
                 with_run(lambda tmp, name=name: report_argv(out=f"out/{name}")), REFUSED))
    add(Case(family, "report: a started of free text never makes a run the newest",
             lambda tmp: (make_run(tmp / "results", RunSpec(manifest={"started": "zzzz"})),
                          make_run(tmp / "results", RunSpec(run_id=RUN_B, manifest={
                              "started": "2026-01-02T00:00:00+00:00"})),
                          ([script("report"), "--results-dir", "results", "--out", "out/o.md",
                            "--no-figures"], {}))[2],
             clean(codes=(0,), check=names_run_b)))
    # preview
    add(Case(family, "preview --out the canary (a user's directory)",
             with_run(lambda tmp: [script("preview"), "--results-dir", "results", "--run-id",
                                   RUN_A, "--out", "canary"]), REFUSED))
    add(Case(family, "preview: an image hard-linked to the canary's file",
             lambda tmp: (canary_hard_link(tmp), ([script("preview"), "pages/page.md",
                                                   "--out", "out/html"], {}))[1],
             clean(codes=(0,), allowed=("out",), check=no_canary_copy)))
    add(Case(family, "preview --out with an ANSI escape in its name",
             with_run(lambda tmp: [script("preview"), "--results-dir", "results", "--run-id",
                                   RUN_A, "--out", "out/\x1b[31mevil"]),
             clean(codes=(0, 2), allowed=("out",))))
    # bisect and release: their destination is checked before anything is timed
    add(Case(family, "bisect --out under /proc (not writable)",
             lambda tmp: ([script("bisect_releases"), "mmapio_find_mmap", "--between", "3.12",
                           "3.13", "--results-dir", "results", "--out", "/proc/x/a.md"], {}),
             REFUSED))
    add(Case(family, "bisect --out an existing file",
             lambda tmp: ((tmp / "out" / "a.md").write_text("an earlier answer\n"),
                          ([script("bisect_releases"), "mmapio_find_mmap", "--between", "3.12",
                            "3.13", "--results-dir", "results", "--out", "out/a.md"], {}))[1],
             REFUSED))
    add(Case(family, "release --out an existing file that is not its comment",
             lambda tmp: (notes("n.md")(tmp), (["-m", "iomatrix.commands.release", "3.13",
                                                "--results-dir", "results", "--out",
                                                "out/n.md"], {"PYTHONPATH": str(SCRIPTS)}))[1],
             REFUSED))
    return out


# -- the command line ------------------------------------------------------------------

def fifth_pass_cases() -> list[Case]:
    """Issue 56's families, one module each beside this file (``hostile_cases_<family>.py``,
    each with ``cases(probe)`` taking this module for its helpers), so that each family's
    cases stay in one place with the family's own inputs."""
    import importlib.util
    out: list[Case] = []
    for path in sorted(Path(__file__).parent.glob("hostile_cases_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        out += module.cases(sys.modules[__name__])
    return out


def report_case(k: int, count: int, case: Case, problems: list, result, totals: dict) -> None:
    verdict = "BAD" if problems else "GOOD"
    good, total = totals.get(case.family, (0, 0))
    totals[case.family] = (good + (not problems), total + 1)
    took = f"{result.seconds:.0f}s" if result else "-"
    rc = result.rc if result else "-"
    print(f"{verdict:4} [{k}/{count}] {case.family}: {case.name!r} (exit {rc}, {took})"
          + "".join(f"\n       {p}" for p in problems[:4]), flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter that runs the commands (with the report extras)")
    parser.add_argument("--family", action="append", help="only these families")
    parser.add_argument("--case", help="only cases whose name contains this text")
    parser.add_argument("--keep", action="store_true", help="keep each case's directory")
    parser.add_argument("--list", action="store_true", help="list the cases, run nothing")
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once")
    parser.add_argument("--limit", type=float, default=LIMIT_SECONDS,
                        help="seconds a case may take (default: %(default)s)")
    args = parser.parse_args(argv)
    globals()["LIMIT_SECONDS"] = args.limit   # read by run_case and Expect.judge
    chosen = [c for c in cases() if (not args.family or c.family in args.family)
              and (not args.case or args.case in c.name)]
    if args.list:
        for c in chosen:
            print(f"{c.family:18} {c.expect.kind:8} {c.name!r}")
        print(f"{len(chosen)} cases")
        return 0
    totals: dict = {}
    started = time.monotonic()
    with ThreadPoolExecutor(max(args.jobs, 1)) as pool:
        outcomes = pool.map(lambda case: run_case(case, args.python, args.keep), chosen)
        for k, (case, (problems, result)) in enumerate(zip(chosen, outcomes), 1):
            report_case(k, len(chosen), case, problems, result, totals)
    print(f"\nper family (GOOD/cases), {time.monotonic() - started:.0f} s:")
    for family, (good, total) in totals.items():
        print(f"  {family:18} {good}/{total}")
    good = sum(g for g, _ in totals.values())
    total = sum(t for _, t in totals.values())
    print(f"total: {good} GOOD, {total - good} BAD of {total} cases")
    return 0 if good == total else 1


if __name__ == "__main__":
    sys.exit(main())
