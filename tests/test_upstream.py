"""upstream: a standalone reproducer and an issue text for a finding."""
from __future__ import annotations

import importlib
import subprocess

import pytest

from iomatrix.commands import upstream
from conftest import need

QUIET = dict(log=lambda *a: None)
# upstream names the candidates of its NEW release's changelog: none is downloaded here
# (conftest.no_changelog_download)
pytestmark = pytest.mark.usefixtures("no_changelog_download")


def test_the_reproducer_runs_under_2_7_and_3_x_and_prints_a_ratio(tmp_path, capsys,
                                                                  machine_interpreters):
    old, new = need(machine_interpreters, "2.7"), need(machine_interpreters, "3.13")
    out_dir = tmp_path / "upstream"
    # A lutz2009 op: its fixture (the suites' ASCII text) is made in a fraction of a second
    # by each of the reproducer's processes, mmapio's 4 MiB in seconds under 2.7. Every
    # template's script compiles under 2.7 below.
    status = upstream.main(["read_byLines_textMode", "--between", "3.13.15", "3.14.7",
                            "--results-dir", str(tmp_path / "results"), "--out-dir",
                            str(out_dir), "--run-repro", old.executable, new.executable,
                            "--repeat", "2"], **QUIET)
    assert status == 0
    issue = (out_dir / "ISSUE.md").read_text()
    assert "ratio NEW/OLD: " in issue and "nox -s bisect -- read_byLines_textMode" in issue
    script = out_dir / "repro_read_byLines_textMode.py"
    imports = [line for line in script.read_text().splitlines()
               if line.lstrip().startswith(("import ", "from "))]
    assert imports and not any("iomatrix" in line or "_api" in line or "_data" in line
                               for line in imports)
    alone = subprocess.run([old.executable, str(script), "--repeat", "1"], capture_output=True,
                           text=True, check=True)
    assert "ms per call" in alone.stdout and "bytes moved per call" in alone.stdout


@pytest.mark.parametrize("op", ["mmapio_find_mmap", "read_byLines_textMode",
                                "read_byBlocks_binaryMode[large.bin]", "write_byBlocks_textMode",
                                "chunks_read_64KiB", "copies_copyfileobj_default"])
def test_every_template_makes_a_script_that_compiles_under_2_7(tmp_path, op,
                                                               machine_interpreters):
    old = need(machine_interpreters, "2.7")
    script = tmp_path / "repro.py"
    script.write_text(upstream.reproducer(op, "3.13.15", "3.14.7"))
    subprocess.run([old.executable, "-m", "py_compile", str(script)], check=True)


@pytest.mark.parametrize("posargs, message", [
    (["mmapio_find_mmap", "--between", "3.14.7", "3.13.15"], "is not older than"),
    (["mmapio_find_mmap", "--between", "3.13.15", "3.14.99"], "unknown release '3.14.99'"),
])
def test_bad_input_is_exit_2_and_writes_nothing(tmp_path, capsys, posargs, message):
    status = upstream.main([*posargs, "--out-dir", str(tmp_path / "u")], **QUIET)
    assert status == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "u").exists()


def test_an_existing_directory_is_never_written_over(tmp_path, capsys):
    (tmp_path / "u").mkdir()
    (tmp_path / "u" / "ISSUE.md").write_text("kept")
    status = upstream.main(["mmapio_find_mmap", "--between", "3.10.13", "3.11.7", "--out-dir",
                            str(tmp_path / "u")], **QUIET)
    assert status == 2 and "exists" in capsys.readouterr().err
    assert (tmp_path / "u" / "ISSUE.md").read_text() == "kept"


@pytest.mark.parametrize("op, suite, index", [("mmapio_slices_seek_read", "mmapio", 0),
                                              ("read_byLines_textMode", "lutz2009", 0),
                                              ("read_allAtOnce_binaryMode[large.bin]",
                                               "lutz2009", 1)])
def test_the_reproducers_file_has_the_suites_fixture_size(tmp_path, op, suite, index):
    """The fixture is made inline in a few lines (its exact bytes do not matter to the op),
    with the size of the suite's fixture in the quick profile."""
    import importlib.util
    import sys
    from iomatrix.paths import SUITES_DIR
    script = tmp_path / "repro.py"
    script.write_text(upstream.reproducer(op, "3.13.15", "3.14.7"))
    spec = importlib.util.spec_from_file_location("repro", script)
    repro = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(repro)
    sys.path.insert(0, str(SUITES_DIR))
    try:
        module = importlib.import_module(suite)
    finally:
        sys.path.remove(str(SUITES_DIR))
    repro.make_fixture(str(tmp_path / "made"))
    module.fixtures("quick")[index].make(str(tmp_path / "fixture"))
    assert (tmp_path / "made").stat().st_size == (tmp_path / "fixture").stat().st_size
