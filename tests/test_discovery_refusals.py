"""A discovery that cannot be made (a cache that is no directory, a bad declaration) is bad
input in every tool that discovers: exit 2, one error line, no traceback, nothing written,
whether the tool catches discovery's error itself or not (provision's newest plan did not,
and printed a traceback with exit 3). Real commands in subprocesses, real files."""
from __future__ import annotations

import pytest

from iomatrix import cli
from iomatrix.interpreters import discovery
from test_hostile_cache import one_error_line, run


def test_discovery_s_error_is_bad_input():
    assert issubclass(discovery.DiscoveryError, cli.BadInput)


@pytest.mark.parametrize("argv", [
    ("provision", "--list"),                         # the newest plan discovers
    ("bisect_releases", "read_byLines_textMode", "--between", "3.13.5", "3.14.7",
     "--no-build", "--results-dir", "results"),
])
@pytest.mark.parametrize("kind", ["root-file", "root-loop"])
def test_a_cache_that_is_no_directory_is_exit_2_in_one_line(tmp_path, argv, kind):
    root = tmp_path / "c"
    if kind == "root-file":
        root.write_text("x")
    else:
        root.symlink_to("c")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    line = one_error_line(run(*argv, env={"IOMATRIX_CACHE": str(root)}, cwd=tmp_path))
    assert "IOMATRIX_CACHE" in line
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
