"""Outputs never remove what they did not make (issue 40, its outputs family).

Every case is real: a tiny run on disk (test_fuzz.make_run), the tools' own mains, real
directories, links, FIFOs, a read-only or full file system (a tmpfs, when this machine lets
the tests mount one: as root), and checksums of what must stay before and after. A
refused output is exit 2 with one line, before anything is computed, and changes nothing.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from iomatrix import cli
from iomatrix.commands import bisect, bisect_points, release
from iomatrix.reporting import preview
from iomatrix.storing import outputs, store
from conftest import ROOT, need
from test_fuzz import call, make_run

import report

RUN = "20260101T000000Z-a"


def checksum(directory: Path) -> str:
    """What ``find DIR -type f -exec sha256sum {} + | sort | sha256sum`` sums, plus every
    name, link and directory: one digest of the whole tree."""
    digest = hashlib.sha256()
    for path in sorted(Path(directory).rglob("*")):
        rel = path.relative_to(directory).as_posix()
        if path.is_symlink():
            digest.update(f"L {rel} {os.readlink(path)}\n".encode())
        elif path.is_file():
            digest.update(f"F {rel} {hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
        else:
            digest.update(f"D {rel}\n".encode())
    return digest.hexdigest()


def store_with_run(tmp_path: Path) -> Path:
    results = tmp_path / "res"
    make_run(results, RUN)
    return results


def refused(capsys, args, *, main=report.main) -> str:
    """Run ``main``; assert exit 2 and one error line; return it."""
    code, _, err = call(main, [str(a) for a in args], capsys)
    assert code == cli.EXIT_BAD_INPUT, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def full_disk(capsys, args, *, main=report.main) -> str:
    """Run ``main`` on a full disk; assert exit 3 (the machine's failure, issue 56), one error
    line and no traceback; return it."""
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert code == cli.EXIT_INTERNAL_ERROR and "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def report_args(results: Path, out, *more):
    return ["--results-dir", results, "--run-id", RUN, "--out", out, *more]


@pytest.fixture
def tmpfs(tmp_path):
    """mount(options) -> a fresh tmpfs under tmp_path (skip where the tests cannot mount)."""
    mounted = []

    def mount(name: str, options: str) -> Path:
        point = tmp_path / name
        point.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()[:80]})")
        mounted.append(point)
        return point
    yield mount
    for point in mounted:
        subprocess.run(["umount", str(point)], capture_output=True)


# -- 1. report: the pages directory and figures ------------------------------------------

def test_out_beside_a_users_directory_is_refused_and_the_directory_untouched(tmp_path, capsys):
    results = store_with_run(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "thesis.tex").write_text("\\section{years of work}\n")
    (victim / "notes.md").write_text("# my notes\n")
    before, parent = checksum(victim), checksum(tmp_path)
    line = refused(capsys, report_args(results, tmp_path / "victim.md"))
    assert "victim" in line and "did not write" in line
    assert checksum(victim) == before and checksum(tmp_path) == parent


def test_out_named_like_the_results_store_is_refused_and_the_store_untouched(tmp_path, capsys):
    results = store_with_run(tmp_path)
    before = checksum(tmp_path)
    line = refused(capsys, ["--results-dir", results, "--out", tmp_path / "res.md"])
    assert "is the results directory" in line
    assert checksum(tmp_path) == before


def test_out_results_md_in_the_repository_root_is_refused_and_nothing_changes(tmp_path):
    """The real repository: `report --out results.md` from its root (its results/ is the
    default store). git status and the store's checksum are the same after."""
    if not (ROOT / "results").is_dir():
        pytest.skip("no results/ in this checkout")
    status = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--ignored",
                             "--", "results", "results.md", "figures"],
                            capture_output=True, text=True).stdout
    before = checksum(ROOT / "results")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "report.py"), "--out",
                           "results.md"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == cli.EXIT_BAD_INPUT, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "results" in done.stderr
    assert checksum(ROOT / "results") == before
    assert not (ROOT / "results.md").exists() and not (ROOT / "figures").exists()
    assert subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--ignored", "--",
                           "results", "results.md", "figures"], capture_output=True,
                          text=True).stdout == status


def test_out_figures_md_is_refused_and_the_figures_just_drawn_stay(tmp_path, capsys):
    results = store_with_run(tmp_path)
    out = tmp_path / "out"
    code, _, err = call(report.main, report_args(results, out / "r.md"), capsys)
    assert code == 0, err
    drawn = sorted(p.name for p in (out / "figures" / RUN).glob("*.png"))
    assert drawn, "the report drew no figure"
    before = checksum(out)
    line = refused(capsys, report_args(results, out / "figures.md"))
    assert "figures" in line
    assert checksum(out) == before


@pytest.mark.parametrize("link", ["figures", "figures/RUN", "pages"])
def test_a_linked_figures_or_pages_directory_is_refused_never_written_through(
        tmp_path, capsys, link):
    results = store_with_run(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine\n")
    out = tmp_path / "out"
    where = {"figures": out / "figures", "figures/RUN": out / "figures" / RUN,
             "pages": out / "r"}[link]
    where.parent.mkdir(parents=True, exist_ok=True)
    where.symlink_to(elsewhere, target_is_directory=True)
    before = checksum(tmp_path)
    refused(capsys, report_args(results, out / "r.md"))
    assert checksum(tmp_path) == before


def test_out_inside_a_run_or_the_store(tmp_path, capsys):
    """RUN/report.md (the matrix's place) writes report files only; a name among the runs
    is refused, the store unchanged."""
    results = store_with_run(tmp_path)
    run_dir = results / RUN
    results_files = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    code, _, err = call(report.main, report_args(results, run_dir / "report.md",
                                                 "--no-figures"), capsys)
    assert code == 0, err
    assert {p: p.read_bytes() for p in results_files} == results_files
    new = {p.relative_to(run_dir).parts[0] for p in run_dir.rglob("*")} - \
        {p.relative_to(run_dir).parts[0] for p in results_files}
    assert new == {"report.md", "report"}
    before = checksum(tmp_path)
    for out in (results / "x.md", results / f"{RUN}.md", run_dir / "phase.md"):
        refused(capsys, report_args(results, out, "--no-figures"))
    assert checksum(tmp_path) == before


@pytest.mark.parametrize("kind", ["fifo", "notes", "directory", "dangling parent",
                                  "file parent", "control character"])
def test_an_out_that_is_not_a_place_for_a_report_is_refused(tmp_path, capsys, kind):
    results = store_with_run(tmp_path)
    out = {"fifo": tmp_path / "fifo.md", "notes": tmp_path / "notes.md",
           "directory": tmp_path / "dir.md", "dangling parent": tmp_path / "gone" / "r.md",
           "file parent": tmp_path / "file" / "r.md",
           "control character": tmp_path / "a\x1b[31mb.md"}[kind]
    if kind == "fifo":
        os.mkfifo(out)
    elif kind == "notes":
        out.write_text("# my own notes, not a report\n")
    elif kind == "directory":
        out.mkdir()
    elif kind == "dangling parent":
        (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    elif kind == "file parent":
        (tmp_path / "file").write_text("a file\n")
    before = checksum(tmp_path)
    line = refused(capsys, report_args(results, out))
    assert "\x1b" not in line
    assert checksum(tmp_path) == before


def test_a_read_only_place_is_refused_before_anything_is_read(tmp_path, capsys, tmpfs):
    results = store_with_run(tmp_path)
    read_only = tmpfs("ro", "ro,size=1m")
    line = refused(capsys, report_args(results, read_only / "sub" / "r.md"))
    assert "Read-only file system" in line
    assert list(read_only.iterdir()) == []


@pytest.mark.parametrize("figures", [True, False], ids=["figures", "no-figures"])
def test_a_full_disk_leaves_nothing_behind(tmp_path, capsys, tmpfs, figures):
    """ENOSPC half-way: exit 3, one line, and the file system as empty as before (no page,
    no hidden half-written file, no directory the report made)."""
    results = store_with_run(tmp_path)
    full = tmpfs("full", "size=12k")
    line = full_disk(capsys, report_args(results, full / "sub" / "r.md",
                                       *([] if figures else ["--no-figures"])))
    assert "No space left on device" in line
    assert list(full.iterdir()) == []


def test_a_full_disk_keeps_the_previous_report_whole(tmp_path, capsys, tmpfs):
    results = store_with_run(tmp_path)
    disk = tmpfs("disk", "size=160k")
    out = disk / "r.md"
    code, _, err = call(report.main, report_args(results, out, "--no-figures"), capsys)
    assert code == 0, err
    before = checksum(disk)
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f:   # the disk is then full
        try:
            while True:
                f.write(b"x" * 4096)
        except OSError:
            pass
    with_filler = checksum(disk)
    full_disk(capsys, report_args(results, out, "--no-figures"))
    assert checksum(disk) == with_filler
    filler.unlink()
    assert checksum(disk) == before


def test_a_pages_directory_is_replaced_only_while_it_holds_nothing_else(tmp_path, capsys):
    """The marker names the files the report wrote: the next report replaces them; once a
    file of someone else's is added, the report refuses and the file stays."""
    results = store_with_run(tmp_path)
    out = tmp_path / "out" / "r.md"
    for _ in range(2):
        code, _, err = call(report.main, report_args(results, out, "--no-figures"), capsys)
        assert code == 0, err
    pages_dir = out.parent / "r"
    listed = outputs.read_marker(pages_dir, outputs.PAGES)
    assert listed == {p.name for p in pages_dir.iterdir()} - {outputs.MARKER}
    (pages_dir / "mine.txt").write_text("added by hand\n")
    before = checksum(tmp_path)
    line = refused(capsys, report_args(results, out, "--no-figures"))
    assert "mine.txt" in line
    assert checksum(tmp_path) == before


def test_pages_and_figures_written_before_the_marker_are_replaced(tmp_path, capsys):
    """A report of an earlier version (no marker): its pages start with the generated line,
    its figures are PNGs; both are this tool's and are replaced."""
    results = store_with_run(tmp_path)
    out = tmp_path / "out" / "r.md"
    code, _, err = call(report.main, report_args(results, out), capsys)
    assert code == 0, err
    for directory in (out.parent / "r", out.parent / "figures" / RUN):
        (directory / outputs.MARKER).unlink()
        (directory / "stale.png" if "figures" in directory.parts else
         directory / "stale.md").write_bytes(
            outputs.PNG_START if "figures" in directory.parts else
            b"<!-- generated by scripts/report.py: do not edit, regenerate -->\n")
    code, _, err = call(report.main, report_args(results, out), capsys)
    assert code == 0, err
    assert not (out.parent / "r" / "stale.md").exists()
    assert not (out.parent / "figures" / RUN / "stale.png").exists()
    assert outputs.read_marker(out.parent / "figures" / RUN, outputs.FIGURES)


def test_removal_takes_only_what_the_marker_lists(tmp_path):
    directory = tmp_path / "pages"
    directory.mkdir()
    (directory / "a.md").write_text("page")
    (directory / outputs.MARKER).write_text(outputs.marker_text(outputs.PAGES, ["a.md"]))
    (directory / "late.txt").write_text("appeared after the check")
    assert outputs.remove_owned(directory, outputs.PAGES) is False
    assert sorted(p.name for p in directory.iterdir()) == ["late.txt"]


@pytest.mark.parametrize("name", ["my report.md", "a](javascript:x).md", "#1.md",
                                  "-r.md", ".hidden.md", "x" * 81 + ".md"])
def test_a_report_name_is_a_plain_name_it_is_linked_by(tmp_path, capsys, name):
    """The pages link the main page and its directory by the name of --out: a name that
    would need escaping there is refused (and the markup never holds it raw)."""
    results = store_with_run(tmp_path)
    before = checksum(tmp_path)
    line = refused(capsys, report_args(results, tmp_path / name, "--no-figures"))
    assert "plain name" in line
    assert checksum(tmp_path) == before


def test_the_out_path_is_printed_escaped(tmp_path, capsys):
    results = store_with_run(tmp_path)
    out = tmp_path / "dir\x1b[31m\u202e" / "r.md"
    code, printed, err = call(report.main, report_args(results, out, "--no-figures"), capsys)
    assert code == 0, err
    assert "\x1b" not in printed + err and "\u202e" not in printed + err
    assert "\\x1b[31m\\u202e" in printed
    assert "](r/lutz2009.md" in out.read_text()


# -- 2. write_outputs: all or nothing ------------------------------------------------------

def test_write_outputs_is_all_or_nothing_on_a_full_disk(tmp_path, tmpfs):
    disk = tmpfs("disk", "size=64k")
    first = disk / "a" / "first.md"
    first.parent.mkdir()
    first.write_text("the old first file\n")
    before = checksum(disk)
    with pytest.raises(cli.MachineFailure, match="No space left on device"):
        outputs.write_outputs({first: "new first\n", disk / "b" / "c" / "big.md":
                               "x" * 200_000}, "--out-dir")
    assert checksum(disk) == before


def test_write_outputs_refuses_before_writing_anything(tmp_path):
    ok, link = tmp_path / "ok.md", tmp_path / "link.md"
    link.symlink_to(tmp_path / "target.md")
    with pytest.raises(cli.BadInput, match="symbolic link"):
        outputs.write_outputs({ok: "x", link: "y"}, "--out-dir")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.md"]


# -- 3. bisect -----------------------------------------------------------------------------

@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setattr(bisect_points, "python_org_reachable", lambda: False)


@pytest.mark.parametrize("where", ["read-only", "exists", "dangling", "link name"])
def test_bisect_refuses_its_out_before_anything_is_timed(tmp_path, capsys, offline, tmpfs,
                                                         where):
    if where == "read-only":
        out = tmpfs("ro", "ro,size=1m") / "answer.md"
    elif where == "exists":
        out = tmp_path / "answer.md"
        out.write_text("an earlier answer\n")
    elif where == "dangling":
        (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
        out = tmp_path / "gone" / "answer.md"
    else:
        out = tmp_path / "a\u202eb.md"
    before = checksum(tmp_path)
    line = refused(capsys, ["mmapio_find_mmap", "--between", "3.12", "3.13", "--profile",
                            "smoke", "--results-dir", tmp_path / "results", "--out", out],
                   main=lambda argv: bisect.main(argv, log=lambda *a: None))
    assert "--out" in line and "\u202e" not in line
    assert checksum(tmp_path) == before and not (tmp_path / "results").exists()


@pytest.mark.parametrize("op", ["../x", "<script>", "a b", "read\x1b[31m"])
def test_bisect_refuses_an_op_that_is_no_name_before_anything(tmp_path, capsys, op):
    before = checksum(tmp_path)
    line = refused(capsys, [op, "--between", "3.12", "3.13", "--results-dir",
                            tmp_path / "results", "--out", tmp_path / "a.md"],
                   main=lambda argv: bisect.main(argv, log=lambda *a: None))
    assert "OP" in line and "\x1b" not in line
    assert checksum(tmp_path) == before


OP_CHARACTERS = "abzABZ019_.+[]-"


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(op=st.text(OP_CHARACTERS, min_size=1, max_size=cli.MAX_NAME_LENGTH)
       .filter(lambda op: cli.name_problem(op, "op") is None))
def test_bisects_default_run_id_is_a_run_id_for_every_valid_op(op):
    run_id = bisect.default_run_id(op, "3.12.1", "3.15.0rc2")
    assert cli.name_problem(run_id, "run id") is None
    assert len(run_id) <= cli.MAX_NAME_LENGTH - 3     # room for a bisection's -N


def test_bisects_default_run_id_of_an_op_with_brackets():
    run_id = bisect.default_run_id("read_byBlocks_binaryMode[large.bin]", "3.12.1", "3.13.0")
    assert run_id.startswith("bisect-read_byBlocks_binaryMode-large.bin-3.12.1-3.13.0-")


def test_bisect_refuses_a_run_that_exists_without_a_lock_left(tmp_path, capsys, offline,
                                                              machine_interpreters):
    need(machine_interpreters, "3.12")
    need(machine_interpreters, "3.13")
    results = tmp_path / "results"
    (results / "b").mkdir(parents=True)
    (results / "b" / "mine.txt").write_text("a run directory of someone else's\n")
    before = checksum(tmp_path)
    line = refused(capsys, ["mmapio_find_mmap", "--between", "3.12", "3.13", "--profile",
                            "smoke", "--no-build", "--results-dir", results, "--run-id", "b",
                            "--out", tmp_path / "answer.md"],
                   main=lambda argv: bisect.main(argv, log=lambda *a: None))
    assert "run b exists" in line
    assert checksum(tmp_path) == before


def test_bisect_with_an_interpreter_reporting_a_version_without_patch_is_exit_2(
        tmp_path, capsys, offline, monkeypatch, machine_interpreters):
    """A real interpreter whose platform.python_version() says "3.13" (a sitecustomize
    says so), declared in IOMATRIX_PYTHONS: bisect names it, exit 2, never exit 3."""
    real = need(machine_interpreters, "3.13")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import platform\nplatform.python_version = lambda: '3.13'\n")
    wrapper = tmp_path / "python-says-3.13"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={site} exec {real.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("IOMATRIX_PYTHONS", f"says313={wrapper}")
    monkeypatch.setenv("IOMATRIX_PROBE_CACHE", str(tmp_path / "probes.json"))
    # discovery's probe refuses the answer (not platform.python_version()'s X.Y.Z form): one
    # warning line names the interpreter unusable, then bisect's one error line
    code, _, err = call(lambda argv: bisect.main(argv, log=lambda *a: None),
                        [str(a) for a in ["mmapio_find_mmap", "--between", "says313", "3.13",
                                          "--profile", "smoke", "--no-build", "--results-dir",
                                          tmp_path / "results", "--out", tmp_path / "answer.md"]],
                        capsys)
    assert code == cli.EXIT_BAD_INPUT, err
    warning, line = [line for line in err.splitlines() if line.strip()]
    assert warning.startswith("iomatrix: declared interpreter says313") and "3.13.0" in warning
    assert line.startswith("error: ") and "says313" in line
    assert not (tmp_path / "results").exists() and not (tmp_path / "answer.md").exists()


# -- 4. release --------------------------------------------------------------------------

def test_release_refuses_an_out_that_is_not_its_comment_before_anything_runs(tmp_path, capsys):
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes\n")
    before = checksum(tmp_path)
    line = refused(capsys, ["3.13", "--out", notes, "--results-dir", tmp_path / "results"],
                   main=lambda argv: release.main(argv, log=lambda *a: None))
    assert "not a file this tool wrote" in line
    assert checksum(tmp_path) == before
    assert release.is_release_comment(notes) is False
    notes.write_text("## Release check: `3.13` (3.13.0) against `3.12` (3.12.1)\n")
    assert release.is_release_comment(notes) is True


# -- 5. preview --------------------------------------------------------------------------

def page_with_image(tmp_path: Path, image: Path) -> Path:
    pages_dir = tmp_path / "pages"
    (pages_dir / "figures").mkdir(parents=True)
    os.link(image, pages_dir / "figures" / "plot.png")
    page = pages_dir / "page.md"
    page.write_text("# a page\n\n![the plot](figures/plot.png)\n")
    return page


def test_preview_never_copies_a_hard_linked_image(tmp_path, capsys):
    secret = tmp_path / "secret.png"
    secret.write_bytes(outputs.PNG_START + b"not the page's own file")
    page = page_with_image(tmp_path, secret)
    out = tmp_path / "html"
    code, printed, err = call(preview.main, [page, "--out", out], capsys)
    assert code == 0, err
    assert not (out / "figures").exists()
    assert "[image not shown (a hard-linked file): the plot]" in (out / "page.html").read_text()


def test_preview_replaces_only_an_empty_or_its_own_directory(tmp_path, capsys):
    page = tmp_path / "p.md"
    page.write_text("# page\n")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work\n")
    before = checksum(mine)
    refused(capsys, [page, "--out", mine], main=preview.main)
    assert checksum(mine) == before
    out = tmp_path / "html"
    for _ in range(2):   # a preview it wrote is replaced
        code, printed, err = call(preview.main, [page, "--out", out], capsys)
        assert code == 0, err
    assert {p.name for p in out.iterdir()} == {"p.html", outputs.MARKER}
    (out / "added.txt").write_text("by hand\n")
    refused(capsys, [page, "--out", out], main=preview.main)
    assert (out / "added.txt").read_text() == "by hand\n"


def test_preview_prints_its_out_escaped(tmp_path, capsys):
    page = tmp_path / "p.md"
    page.write_text("# page\n")
    out = tmp_path / "x\x1b[2Jy" / "html"
    code, printed, err = call(preview.main, [page, "--out", out], capsys)
    assert code == 0, err
    assert "\x1b" not in printed + err and "\\x1b[2Jy" in printed


def test_a_preview_on_a_full_disk_leaves_nothing(tmp_path, capsys, tmpfs):
    page = tmp_path / "p.md"
    page.write_text("# page\n\n" + "a long paragraph " * 4000 + "\n")
    full = tmpfs("full", "size=16k")
    line = full_disk(capsys, [page, "--out", full / "html"], main=preview.main)
    assert "No space left on device" in line
    assert list(full.iterdir()) == []


# -- 6. the newest run ---------------------------------------------------------------------

@pytest.mark.parametrize("started", ["zzzz", "9999-12-31T23:59:59+00:00", "2099-01-01",
                                     "2026-13-45T00:00:00+00:00"])
def test_a_free_text_started_never_makes_a_run_the_newest(tmp_path, started):
    results = tmp_path / "results"
    for run_id, when in (("20260101T000000Z-old", started),
                         ("20260105T000000Z-new", "2026-01-05T00:00:00+00:00")):
        make_run(results, run_id)
        manifest = results / run_id / store.MANIFEST
        document = json.loads(manifest.read_text())
        document["started"] = when
        manifest.write_text(json.dumps(document))
    assert store.newest_run(results).run_id == "20260105T000000Z-new"


def test_the_started_time_orders_runs_whose_ids_carry_no_time(tmp_path):
    results = tmp_path / "results"
    for run_id, started in (("b", "2026-01-02T00:00:00+00:00"), ("a", "2026-01-03T00:00:00+01:00")):
        make_run(results, run_id)
        manifest = results / run_id / store.MANIFEST
        document = json.loads(manifest.read_text())
        document["started"] = started
        manifest.write_text(json.dumps(document))
    assert [r.run_id for r in store.scan_runs(results)[0]] == ["b", "a"]


if __name__ == "__main__":   # pragma: no cover
    sys.exit(pytest.main([__file__, *sys.argv[1:]]))


def test_published_text_names_no_home_directory(tmp_path):
    # Build flags and executables name paths under the machine's home directory (pyenv's
    # prefix, the iomatrix cache): a page written by the tool says "~" instead (issue 46).
    import os
    from iomatrix.storing import outputs
    home = os.path.expanduser("~")
    text = f"--prefix={home}/.pyenv/versions/3.11.7 -Wl,-rpath,{home}/.cache/x '{home}' {home}fs"
    assert outputs.published(text) == \
        f"--prefix=~/.pyenv/versions/3.11.7 -Wl,-rpath,~/.cache/x '~' {home}fs"
    out = tmp_path / "comment.md"
    outputs.write_outputs({out: text}, "--out")
    assert home + "/" not in out.read_text()
