"""changelog takes releases only: a word that is no version is exit 2 in one line that
names the form of a release and never offers a build's version (3.14.7t), which it refuses
too (test_hostile_cache). Real command, offline, in a subprocess."""
from __future__ import annotations

import pytest

from test_hostile_cache import one_error_line, run


@pytest.mark.parametrize("version", ["", "3.14", "3.14.7rc", "-3", "3.14.7\n"])
def test_a_word_that_is_no_release_is_exit_2_saying_what_a_release_is(tmp_path, version):
    line = one_error_line(run("changelog", "--offline", "--", version,
                              env={"IOMATRIX_CACHE": str(tmp_path / "c")}))
    assert "is not a release: expected X.Y.Z" in line and "3.14.7t" not in line
    assert not (tmp_path / "c").exists()
