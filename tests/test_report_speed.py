"""What makes the main command's report and merge cheaper computes the same answers (issue 46).

No timing here: each test checks that a shortcut gives what the long way gives, on real
files (docs/experiments/many_ops.py's pyperf-format run, result files read from disk).
"""
from __future__ import annotations

import importlib.abc
import json
import random
import re
import sys

from test_report_scaling import generated_run

import iomatrix.storing
from iomatrix.analysing import analysis, changelog
from iomatrix.reporting import pages
from iomatrix.storing import store


def test_pages_built_from_one_analysis_are_those_built_each_from_their_own(tmp_path):
    """report.py analyses the run once for reports/latest.md and its kept copy; the copy's
    pages (other links, the same findings) are those a fresh analysis gives."""
    data = analysis.load_run(generated_run(tmp_path, 20))
    shared = pages.analyse(data, None, pages.DEFAULT_THRESHOLD)
    for stem in ("latest", "20260101T000000Z-manyops"):
        alone = pages.build_pages(analysis.load_run(data.run), pages_link=stem,
                                  main_name=f"{stem}.md", draw=False)
        reused = pages.build_pages(data, pages_link=stem, main_name=f"{stem}.md", draw=False,
                                   analysed=shared)
        assert reused == alone
        assert f"]({stem}/" in reused.main


def depth_by_counting(data: bytes) -> int:
    """nesting_depth as it was first written: strings out, then bracket by bracket."""
    depth = deepest = 0
    for match in re.finditer(rb"[\[\]{}]", re.sub(rb'"(?:[^"\\]|\\.)*"', b'""', data,
                                                     flags=re.DOTALL)):
        depth += 1 if match.group() in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


def test_nesting_depth_is_the_bracket_count_it_was(tmp_path):
    rng = random.Random(46)
    texts = [bytes(rng.choice(b'[]{}"\\a\n') for _ in range(rng.randint(0, 40)))
             for _ in range(5000)]
    texts += [b"", b"]]][[[", b'"\\"[[" [', b'"unterminated [[', b'["\\\\"]', b'{"a\\\\":[1]}',
              json.dumps({"k": [[1, {"s": "[{\"]"}]], "x": "\\"}).encode()]
    for text in texts:
        assert store.nesting_depth(text) == depth_by_counting(text), text


class LookupSpy(importlib.abc.MetaPathFinder):
    """Records every search for a module (and finds none: the next finder does)."""

    def __init__(self):
        self.searched: list[str] = []

    def find_spec(self, name, path=None, target=None):
        self.searched.append(name)
        return None


def test_the_bench_side_asks_for_the_schema_once(tmp_path, monkeypatch):
    """Without pydantic (nox's own Python), a failed import is not remembered by Python:
    each result file read searched and compiled the schema module again (the merge reads
    thousands of part files). It is asked once; the files are still read and checked."""
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({"benchmarks": [], "metadata": {}}))
    spy = LookupSpy()
    store.schema_module.cache_clear()
    try:
        monkeypatch.setitem(sys.modules, "pydantic", None)     # import pydantic fails
        monkeypatch.delitem(sys.modules, "iomatrix.storing.schema", raising=False)
        monkeypatch.delattr(iomatrix.storing, "schema", raising=False)
        monkeypatch.setattr(sys, "meta_path", [spy, *sys.meta_path])
        for _ in range(3):
            assert store.read_json(path, kind="series") == {"benchmarks": [], "metadata": {}}
        assert spy.searched.count("iomatrix.storing.schema") == 1
        assert store.schema_module() is None
    finally:
        monkeypatch.undo()
        store.schema_module.cache_clear()    # the next tests find pydantic again


def test_entries_an_older_release_had_are_left_out_from_each_changelog_of_its_own():
    """_already_in is kept per changelog: another changelog with other entries for the same
    OLD version gets its own answer, and the same one asked again the same answer."""
    text = "Make :class:`io.BufferedReader` faster."

    def log(number):
        return changelog.Changelog([changelog.Release("3.12.0", None, [changelog.Entry(
            number, "3.12.0", None, "Library", text)])], [], "test")
    first, second = log("gh-1"), log("gh-2")
    assert changelog._already_in(first, "3.12.0") == {("gh-1", text)}
    assert changelog._already_in(second, "3.12.0") == {("gh-2", text)}
    assert changelog._already_in(first, "3.12.0") == changelog._already_in(log("gh-1"), "3.12.0")
    assert changelog._already_in(first, "3.11.0") == frozenset()
