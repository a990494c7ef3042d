"""The lineage of one recipe (issue 25): which build stands for each minor version, the
steps between two recipes kept out of the findings, and the recipe twins.

Runs are small hand-made pyperf files with a manifest whose interpreter entries carry
the build facts discovery records (recipe, configure_args, version)."""
from __future__ import annotations

import json

from iomatrix.analysing import analysis, comparisons
from iomatrix.storing import store
from conftest import write_pyperf_file

OP_SLOWER = "read_byLines_textMode"
OP_STEADY = "write_byLines_textMode"


def processes(base, factor, n=6, jitter=0.01):
    """n processes of 3 values around base*factor, with a deterministic small jitter."""
    return [[base * factor * (1 + jitter * ((i * 7 + j) % 5 - 2) / 2) for j in range(3)]
            for i in range(n)]


def entry(version: str, recipe: str | None, source: str = "pyenv", **extra) -> dict:
    numbers = [int(part) for part in version.split("rc")[0].split(".")]
    args = "'--enable-shared'" if recipe and recipe.startswith("shared") else "''"
    info = {"implementation": "cpython", "version": version, "version_info": numbers,
            "source": source, "status": "ok", "configure_args": args, "recipe": recipe,
            "frame_pointers": bool(recipe and recipe.endswith("-fp"))}
    if recipe is None:  # a run from before build facts
        for key in ("recipe", "frame_pointers", "configure_args"):
            info.pop(key)
    return {**info, **extra}


def make_run(tmp_path, series: dict) -> store.Run:
    """series: {label: (manifest entry, factor of OP_SLOWER)}; OP_STEADY stays put."""
    run_dir = tmp_path / "R"
    run_dir.mkdir()
    manifest = {"run_id": "R", "host": "testhost", "profile": "quick", "cache": "warm",
                "suites": ["lutz2009"], "io": ["c"], "started": "2026-01-01T00:00:00+00:00",
                "interpreters": {}}
    for label, (info, factor) in series.items():
        write_pyperf_file(run_dir / f"{label}.json",
                          {OP_SLOWER: processes(0.010, factor), OP_STEADY: processes(0.1, 1.0)})
        manifest["interpreters"][label] = {"label": label, **info}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return store.Run(tmp_path, "R")


def mixed_run(tmp_path) -> store.Run:
    """pyenv's shared 3.12 and 3.13.0, the lineage's 3.13.15 and a static one, a static
    3.14 only, and a shared 3.15 (frame pointers by CPython's default)."""
    return make_run(tmp_path, {
        "3.12": (entry("3.12.1", "shared-O3"), 1.0),
        "3.13": (entry("3.13.0", "shared-O3"), 1.0),
        "3.13.15": (entry("3.13.15", "shared-O3", "provisioned"), 1.5),
        "3.13.15-static": (entry("3.13.15", "static-O3", "provisioned"), 1.2),
        "3.14": (entry("3.14.7", "static-O3", "provisioned"), 3.0),
        "3.15": (entry("3.15.0rc2", "shared-O3-fp", "provisioned"), 1.5),
    })


def test_the_lineage_takes_the_newest_patch_release_of_its_recipe(tmp_path):
    data = analysis.load_run(mixed_run(tmp_path))
    lin = analysis.lineage(data, analysis.ordered_series(data))
    assert lin.recipe == "shared-O3"
    assert lin.releases == ["3.12", "3.13.15", "3.14", "3.15"]
    assert lin.passed_over == {"3.13.15": ["3.13", "3.13.15-static"]}
    kinds = {v.series: (v.kind, v.twin) for v in lin.variants}
    assert kinds["3.13.15-static"] == ("recipe", "3.13.15")  # the recipe alone
    assert kinds["3.13"] == ("patch", "3.13.15")


def test_steps_between_two_recipes_are_flagged_and_are_not_findings(tmp_path):
    data = analysis.load_run(mixed_run(tmp_path))
    an = comparisons.analyse(data, None, 0.05)
    assert an.lin.recipe_differs == {("3.13.15", "3.14"): "shared-O3 → static-O3",
                                     ("3.14", "3.15"): "static-O3 → shared-O3-fp"}
    # Both mixed steps changed OP_SLOWER by 2x and are compared, but are no finding ...
    assert an.step_cmp[(OP_SLOWER, "3.13.15", "3.14")].significant
    assert an.step_cmp[(OP_SLOWER, "3.14", "3.15")].significant
    found = {(f.op, f.a, f.b) for f in an.findings()}
    assert found == {(OP_SLOWER, "3.12", "3.13.15")}  # ... the step of one recipe is
    assert analysis.step_recipe_note(an.lin, "3.13.15", "3.14") == (
        "build differs: shared-O3 → static-O3")
    assert analysis.step_recipe_note(an.lin, "3.12", "3.13.15") is None
    # The recipe twin is compared: how much static-O3 alone moves each op.
    assert an.twin_cmp[(OP_SLOWER, "3.13.15-static")].ratio < 1
    lines = analysis.lineage_recipe_lines(data, an.lin)
    assert lines[0].startswith("The lineage is built by one recipe, `shared-O3`")
    assert any("`3.13.15` (3.13.15, shared-O3) stands for its minor version" in line
               for line in lines)
    assert any("`3.13.15` → `3.14` is between two recipes" in line for line in lines)


def test_frame_pointers_by_cpythons_default_are_not_a_recipe_change(tmp_path):
    run = make_run(tmp_path, {
        "3.14": (entry("3.14.7", "shared-O3", "provisioned"), 1.0),
        "3.15": (entry("3.15.0rc2", "shared-O3-fp", "provisioned"), 2.0),
    })
    data = analysis.load_run(run)
    an = comparisons.analyse(data, None, 0.05)
    assert an.lin.recipe_differs == {}
    assert "gh-149202" in analysis.step_recipe_note(an.lin, "3.14", "3.15")
    assert {(f.a, f.b) for f in an.findings()} == {("3.14", "3.15")}


def test_frame_pointers_a_builder_added_are_a_recipe_change(tmp_path):
    run = make_run(tmp_path, {
        "3.13": (entry("3.13.15", "shared-O3"), 1.0),
        "3.14": (entry("3.14.7", "shared-O3-fp", configure_args=(
            "'--enable-shared' 'CFLAGS=-fno-omit-frame-pointer'")), 1.0),
    })
    data = analysis.load_run(run)
    lin = analysis.lineage(data, analysis.ordered_series(data))
    assert lin.recipe_differs == {("3.13", "3.14"): "shared-O3 → shared-O3-fp"}


def test_a_run_without_build_facts_keeps_the_old_choice_and_says_it_may_mix(tmp_path):
    run = make_run(tmp_path, {
        "3.13": (entry("3.13.0", None), 1.0),
        "3.13.15": (entry("3.13.15", None, "provisioned"), 1.0),
        "3.14": (entry("3.14.7", None, "provisioned"), 2.0),
    })
    data = analysis.load_run(run)
    an = comparisons.analyse(data, None, 0.05)
    assert an.lin.recipe is None
    assert an.lin.releases == ["3.13", "3.14"]
    assert an.lin.recipe_differs == {}
    assert {(f.a, f.b) for f in an.findings()} == {("3.13", "3.14")}
    assert "may mix" in analysis.lineage_recipe_lines(data, an.lin)[0]
    kinds = {v.series: v.kind for v in an.lin.variants}
    assert kinds["3.13.15"] == "build"  # no recipes: not called a patch release twin


def test_a_distributions_build_does_not_set_the_lineage_recipe(tmp_path):
    run = make_run(tmp_path, {
        "3.11-debian": (entry("3.11.2", "debian-O2", "debian"), 1.0),
        "3.11": (entry("3.11.7", "shared-O3"), 1.0),
        "3.12": (entry("3.12.1", "shared-O3"), 1.0),
    })
    data = analysis.load_run(run)
    lin = analysis.lineage(data, analysis.ordered_series(data))
    assert lin.recipe == "shared-O3"
    assert lin.releases == ["3.11", "3.12"]
    assert {v.series: v.kind for v in lin.variants} == {"3.11-debian": "build"}
