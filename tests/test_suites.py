"""Every suite, smoke profile: each op as a real pyperf worker, plus the failure paths.

Never asserts a timing: a result counts when the worker exits 0 and its JSON
holds the op with values and the iomatrix metadata.
"""
from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import need
from iomatrix.interpreters import environments

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITES_DIR = os.path.join(ROOT, "suites")
HARNESS = os.path.join(SUITES_DIR, "harness.py")
import _api  # noqa: E402  (suites/ is on the path: pyproject.toml)
import _fixtures  # noqa: E402
import _results  # noqa: E402
import harness  # noqa: E402
import pyperf  # noqa: E402

SUITES = _api.available_suites()
OUR_SUITES = ("iobench", "chunks", "mmapio", "copies", "manyfiles", "textio")
MIN_TOTAL_OPS = 100


@pytest.fixture(scope="session")
def smoke_fixtures(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("fixtures"))
    _fixtures.make_fixtures(SUITES, "smoke", directory)
    return directory


def smoke_ops(suite_name, fixtures_dir, scratch):
    ctx = _api.load_context(fixtures_dir, scratch, "smoke", "c", "warm")
    return _api.load_suite(suite_name).ops(ctx)


def worker_cmd(suite, op, fixtures_dir, scratch, output, io_stack="c", python=None):
    return [python or sys.executable, HARNESS, "--suite", suite, "--op", op,
            "--fixtures", fixtures_dir, "--scratch", scratch, "--iomatrix-profile", "smoke",
            "--io", io_stack, "--worker", "--worker-task", "0", "-l", "1", "-w", "0", "-n", "1",
            "-o", output]


def run_worker(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


def check_result(proc, output, op_name, io_stack="c"):
    assert proc.returncode == 0, "%s failed:\n%s" % (op_name, proc.stderr[-3000:])
    bench = pyperf.Benchmark.load(output)
    assert bench.get_name() == op_name
    assert len(bench.get_values()) == 1
    metadata = bench.get_metadata()
    assert metadata["iomatrix_bytes"] > 0
    assert metadata["iomatrix_io"] == io_stack


@pytest.mark.parametrize("suite", SUITES)
def test_every_op_runs_and_verifies_in_a_batch_worker(suite, smoke_fixtures, tmp_path):
    """Every op of the suite, one after the other in one ``--batch`` worker as the matrix runs
    them (a process per op cost a minute of the tests' CPU), each verified by its own check;
    the first op also as an ordinary pyperf worker (``--op``), the other way a user runs one."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ops = [op for op in smoke_ops(suite, smoke_fixtures, str(scratch)) if not op.unavailable]
    assert ops
    output, errors = tmp_path / "batch.json", tmp_path / "errors.json"
    proc = run_worker([sys.executable, HARNESS, "--batch", "--suite", suite,
                       "--ops", json.dumps([op.name for op in ops]), "--fixtures", smoke_fixtures,
                       "--scratch", str(scratch), "--iomatrix-profile", "smoke", "--io", "c",
                       "--cache", "warm", "--allocator", "steady", "--output-state", "new",
                       "--round", "0", "--warmups", "0", "--values", "1",
                       "--output", str(output), "--errors", str(errors)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(errors.read_text()) == {}
    suite_file = pyperf.BenchmarkSuite.load(str(output))
    assert sorted(suite_file.get_benchmark_names()) == sorted(op.name for op in ops)
    for bench in suite_file.get_benchmarks():
        assert len(bench.get_values()) == 1 and bench.get_metadata()["iomatrix_bytes"] > 0
    first = str(tmp_path / "first.json")
    check_result(run_worker(worker_cmd(suite, ops[0].name, smoke_fixtures, str(scratch), first)),
                 first, ops[0].name)
    assert os.listdir(str(scratch)) == [], "ops left files in the scratch directory"


def test_op_names_unique_and_enough():
    ctx = _api.Context(os.devnull, os.devnull, profile="quick")
    names = []
    for suite in SUITES:
        suite_ops = _api.load_suite(suite).ops(ctx)
        if suite in OUR_SUITES:
            for op in suite_ops:
                assert op.name.startswith(suite + "_"), op.name
        names += [op.name for op in suite_ops]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert len(names) >= MIN_TOTAL_OPS


@pytest.mark.parametrize("profile", _results.PROFILES)
def test_op_list_is_the_same_in_every_profile(profile):
    def names(p):
        ctx = _api.Context(os.devnull, os.devnull, profile=p)
        return [op.name for s in OUR_SUITES for op in _api.load_suite(s).ops(ctx)]
    assert names(profile) == names("quick")


def test_every_module_has_a_docstring_and_sizes():
    for suite in OUR_SUITES:
        module = _api.load_suite(suite)
        assert module.__doc__ and len(module.__doc__) > 200, suite
        for profile in _results.PROFILES:
            module.fixtures(profile)  # builds the list without making anything


@pytest.fixture(scope="session")
def py27(machine_interpreters):
    """The 2.7 interpreter discovery finds here (a fresh machine of this kind has one)."""
    return need(machine_interpreters, "2.7")


def test_suites_list_under_python27(py27):
    proc = run_worker([py27.executable, HARNESS, "--list-ops", ",".join(OUR_SUITES)])
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["ops"]
    host = harness.list_ops(list(OUR_SUITES))
    assert [r["op"] for r in rows] == [r["op"] for r in host]
    unavailable = dict((r["op"], r["unavailable"]) for r in rows if r["unavailable"])
    for name in ("copies_os_sendfile", "copies_os_copy_file_range",
                 "manyfiles_write_thread_pool_executor", "manyfiles_write_asyncio_run_in_executor",
                 "textio_read_whole_utf8_invalid_surrogateescape"):
        assert unavailable.get(name), name
    assert all(isinstance(reason, str) and reason for reason in unavailable.values())


def test_fixtures_are_identical_when_made_by_python27(py27, smoke_fixtures, tmp_path):
    """Fixtures must not depend on the interpreter that makes them."""
    directory = str(tmp_path / "fx27")
    code = ("import sys; sys.path.insert(0, %r); import _fixtures; "
            "_fixtures.make_fixtures(%r, 'smoke', %r)" % (SUITES_DIR, list(OUR_SUITES), directory))
    proc = run_worker([py27.executable, "-c", code])
    assert proc.returncode == 0, proc.stderr
    with open(os.path.join(directory, _api.FIXTURES_MANIFEST)) as f:
        made_by_27 = json.load(f)["files"]
    with open(os.path.join(smoke_fixtures, _api.FIXTURES_MANIFEST)) as f:
        made_here = json.load(f)["files"]
    assert made_by_27 == dict((name, made_here[name]) for name in made_by_27)


def test_one_op_per_suite_runs_under_python27(py27, smoke_fixtures, tmp_path):
    # pyperf under 2.7 as the matrix gets it: the environment of 2.7 the matrix makes and
    # reuses (pip install --target), never what some PYTHONPATH of the machine holds
    env = environments.ensure_environment(py27, log=lambda *a: None).command_env()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    picks = [("iobench", "iobench_readmodify_binary_400KiB_20units"),
             ("chunks", "chunks_readinto_64KiB"), ("mmapio", "mmapio_regex_mmap"),
             ("copies", "copies_readinto_loop_1MiB"), ("manyfiles", "manyfiles_write_process_pool"),
             ("textio", "textio_print_lines_utf8")]
    for suite, op in picks:
        output = str(tmp_path / (op + ".json"))
        proc = run_worker(worker_cmd(suite, op, smoke_fixtures, str(scratch), output,
                                     python=py27.executable),
                          env=env)
        check_result(proc, output, op)
    assert os.listdir(str(scratch)) == []


@pytest.mark.parametrize("suite,op", [
    ("iobench", "iobench_read_text_utf8_lf_20KiB_20units"),
    ("chunks", "chunks_read_64KiB"),
    ("textio", "textio_read_lines_utf8"),
    ("textio", "textio_stringio_write_lines"),
])
def test_pyio_axis(suite, op, smoke_fixtures, tmp_path):
    output = str(tmp_path / "part.json")
    proc = run_worker(worker_cmd(suite, op, smoke_fixtures, str(tmp_path), output, io_stack="pyio"))
    check_result(proc, output, op, io_stack="pyio")


def _copy_fixtures(src, tmp_path):
    dst = str(tmp_path / "fixtures")
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("suite,op,fixture,damage", [
    ("chunks", "chunks_read_1MiB", "chunks.bin", "flip"),
    ("textio", "textio_read_lines_utf8", "textio-utf8.txt", "truncate"),
    ("iobench", "iobench_seek_binary_400KiB_1000units", "iobench-400KiB.bin", "flip"),
    ("mmapio", "mmapio_find_mmap", "mmapio.txt", "truncate"),
])
def test_corrupted_fixture_fails_the_op(suite, op, fixture, damage, smoke_fixtures, tmp_path):
    fixtures_dir = _copy_fixtures(smoke_fixtures, tmp_path)
    path = os.path.join(fixtures_dir, fixture)
    with open(path, "r+b") as f:
        if damage == "flip":
            f.seek(1000)
            byte = f.read(1)
            f.seek(1000)
            f.write(bytes([byte[0] ^ 0xFF]))
        else:
            f.truncate(os.path.getsize(path) // 2)
    output = str(tmp_path / "part.json")
    proc = run_worker(worker_cmd(suite, op, fixtures_dir, str(tmp_path), output))
    assert proc.returncode != 0
    assert "VerificationError" in proc.stderr and fixture in proc.stderr


def test_verify_rejects_wrong_results(smoke_fixtures, tmp_path):
    """A fast wrong answer fails verify even when the fixture itself is intact."""
    ops = dict((op.name, op) for s in ("chunks", "iobench", "manyfiles")
               for op in smoke_ops(s, smoke_fixtures, str(tmp_path)))
    wrong = [("chunks_read_1MiB", (0, 0, b"")),
             ("chunks_iterate_lines", (1, 1, b"x")),
             ("iobench_read_text_utf8_lf_20KiB_whole", (1, u"x")),
             ("manyfiles_read_sequential", (0, 0, 0))]
    for name, result in wrong:
        op = ops[name]
        if op.setup:
            op.setup()
        try:
            with pytest.raises(_api.VerificationError):
                op.verify(result)
        finally:
            if op.teardown:
                op.teardown()


def test_write_op_detects_a_skipped_write(smoke_fixtures, tmp_path):
    """The r+ ops toggle payloads with an odd number of passes: a call that writes nothing fails."""
    ops = dict((op.name, op) for op in smoke_ops("iobench", smoke_fixtures, str(tmp_path)))
    op = ops["iobench_overwrite_binary_400KiB_4096units"]
    op.setup()
    try:
        index = op.run()
        op.verify(index)
        with pytest.raises(_api.VerificationError, match="crc32"):
            op.verify(1 - index)         # the state before the call: as if nothing was written
    finally:
        op.teardown()
    assert os.listdir(str(tmp_path)) == []


def test_peak_rss_tells_streaming_from_read_all(smoke_fixtures, tmp_path):
    """The harness measures one untimed call in each fresh worker and records it as metadata."""
    import copies
    size = copies.FILE_BYTES["smoke"]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    peaks = {}
    for name in ("copies_loop_64KiB", "copies_read_all_write"):
        output = str(tmp_path / (name + ".json"))
        proc = run_worker(worker_cmd("copies", name, smoke_fixtures, str(scratch), output))
        check_result(proc, output, name)
        metadata = pyperf.Benchmark.load(output).get_metadata()
        peaks[name], method = metadata["iomatrix_peak_rss"], metadata["iomatrix_peak_rss_method"]
    if method == "VmHWM":
        # some of the file's pages may land in memory the process already had
        assert peaks["copies_read_all_write"] >= size * 3 // 4
        assert peaks["copies_loop_64KiB"] < size // 4
    assert os.listdir(str(scratch)) == []


def test_unwritable_fixture_directory_is_named(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("not a directory")
    target = str(blocker / "sub")
    with pytest.raises(OSError, match=re.escape(target)):
        _fixtures.make_fixtures(["chunks"], "smoke", target)


@pytest.mark.parametrize("suites", [["lutz2009"], ["manyfiles"]])
def test_the_fixtures_page_cache_state_is_stated_even_without_files(tmp_path, suites):
    # manyfiles writes its files in its ops: a run of it alone must state the same state as
    # any other, or resuming it would be refused as a run made before the state was stated.
    manifest = _fixtures.make_fixtures(suites, "smoke", str(tmp_path / "f"))
    assert manifest["page_cache"] == _results.FIXTURE_READ_BACK
    assert bool(manifest["files"]) == (suites == ["lutz2009"])


def _size_text(size: int) -> str:
    for unit, factor in (("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} bytes"


@pytest.mark.parametrize("suite, table", [
    ("copies", "FILE_BYTES"), ("mmapio", "FILE_BYTES"), ("chunks", "FILE_BYTES"),
    ("textio", "TEXT_BYTES"), ("manyfiles", "PROFILES")])
def test_each_suite_docstring_states_the_sizes_of_its_profile_table(suite, table):
    """A sentence about method must be true: the docstring's sizes are the table's."""
    module = importlib.import_module(suite)
    sizes = getattr(module, table)
    if suite == "manyfiles":
        phrases = [f"{p} {files} files of {rows} rows" for p, (files, rows) in sizes.items()]
    else:
        phrases = [f"{p} {_size_text(size)}" for p, size in sizes.items()]
    expected = "Sizes: " + ", ".join(phrases)
    assert expected in " ".join(module.__doc__.split()), (suite, expected)


def test_the_read_ops_files_are_the_files_the_write_ops_make():
    import manyfiles
    for files, rows in ((3, 4), (50, 200)):
        assert manyfiles.csv_texts(files, rows) == [manyfiles.csv_text(k, rows)
                                                    for k in range(files)]


# ascii_text and DeterministicBytes.block draw their numbers with the generator's step written
# out (suites/_data.py, for speed); what they make must be what the methods make, byte for byte,
# under every Python (fixtures are the same bytes wherever they are made).
BY_THE_METHODS = r'''
import hashlib, sys
sys.path.insert(0, sys.argv[1])
import _data

def ascii_text_by_the_methods(size, seed, max_words=14):
    rng = _data.DeterministicBytes(seed)
    out, total = [], 0
    while total < size:
        n = 1 + rng.next() % max_words
        line = " ".join(rng.choice(_data.WORDS) for _ in range(n))
        if rng.next() % 5 == 0:
            line = "- Issue #%d: %s." % (1000 + rng.next() % 9000, line)
        line += "\n"
        out.append(line)
        total += len(line)
    text = "".join(out)[:size]
    return text[:-1] + "\n"

def block_by_the_methods(rng, size):
    pool = bytearray(rng.next() & 0xFF for _ in range(65536 + 4096))
    out = bytearray()
    while len(out) < size:
        start = rng.next() % 4096
        out += pool[start:start + 65536]
    return bytes(out[:size])

for size, seed, words in ((1, 7, 14), (777, 2020, 5), (300000, 2009, 14)):
    assert _data.ascii_text(size, seed, words) == ascii_text_by_the_methods(size, seed, words)
rng, by_hand = _data.DeterministicBytes(1230), _data.DeterministicBytes(1230)
assert rng.block(200000) == block_by_the_methods(by_hand, 200000)
assert rng.next() == by_hand.next()      # and the generator is left where the methods leave it
print(hashlib.sha256(_data.ascii_text(300000, 2009).encode("ascii")).hexdigest())
'''


@pytest.mark.parametrize("label", ["2.7", "3.13"])
def test_fixture_text_and_blocks_are_the_methods_bytes_under_every_python(label,
                                                                           machine_interpreters):
    interp = need(machine_interpreters, label)
    proc = subprocess.run([interp.executable, "-c", BY_THE_METHODS, SUITES_DIR],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    here = subprocess.run([sys.executable, "-c", BY_THE_METHODS, SUITES_DIR],
                          capture_output=True, text=True, timeout=120)
    assert here.returncode == 0, here.stderr
    assert proc.stdout == here.stdout      # the same bytes under the host's Python
