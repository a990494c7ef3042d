"""The build cache of provisioned CPythons and the recipes they are built by.

``~/.cache/iomatrix/pythons/<version><suffix>/`` (or ``$IOMATRIX_CACHE``) holds one finished
build per directory with its facts in ``iomatrix-build.json``; discovery lists them and
provision adds to them. The same root holds the source tarballs (``tarballs/``, with the
changelogs read from them) and the counting pass's counts (``counts/``,
iomatrix.measuring.countcache). Apart from the builder (interpreters.provision) so that discovery
can read the cache without importing it.

The cache is input like a run directory: every file read from it is read by
``cache_files`` (bounded, typed, named by its place in the cache).
"""
from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

from iomatrix import cli
from iomatrix.interpreters import sources
# The cache's file reading lives in cache_files (sources reads the cache's .dsc files with
# it, and this module imports sources); re-exported, as callers know them from here.
from iomatrix.interpreters.cache_files import (  # noqa: F401
    MAX_ENTRY_BYTES, BadCache, BadCacheEntry, cache_directory, cache_root, entry_name,
    read_bytes, read_json)
from iomatrix.interpreters.errors import UsageError
from iomatrix.interpreters.sources import parse_version

BUILD_INFO = "iomatrix-build.json"
OPTIMIZED_ARGS = ["--enable-optimizations", "--with-lto"]


@dataclasses.dataclass(frozen=True)
class Recipe:
    """How a version is built: the configure arguments that change its speed."""
    name: str
    suffix: str  # of the cache directory and the label; "" for the lineage
    configure_args: tuple[str, ...]
    shared: bool  # a shared libpython, found through an rpath to the prefix's lib
    description: str
    reads_as: str  # the recipe discovery reads from such a build with GCC (before -fp)


# pyenv (python-build) configures --enable-shared with an rpath to its prefix's lib and
# leaves OPT to CPython's configure (-DNDEBUG -g -O3 -Wall with GCC), as its builds'
# sysconfig shows (CONFIG_ARGS, OPT). The lineage recipe does the same and so keeps
# CPython's own defaults, including those a release changes: 3.15's configure keeps
# frame pointers by default (gh-149202), so its lineage build reads "shared-O3-fp",
# as pyenv's own 3.15 would.
RECIPES = {recipe.name: recipe for recipe in (
    Recipe("lineage", "", ("--enable-shared",), True,
           "pyenv's recipe: --enable-shared (rpath to the prefix), CPython's own -O3",
           "shared-O3"),
    Recipe("release", "-pgo", tuple(OPTIMIZED_ARGS), False,
           "PGO+LTO (--enable-optimizations --with-lto), as python.org and distributions "
           "ship; slow", "static-O3-pgo-lto"),
    Recipe("static", "-static", (), False,
           "a static libpython, CPython's own -O3 (iomatrix's builds before recipes)",
           "static-O3"),
)}
DEFAULT_RECIPE = "lineage"
SUFFIX_PATTERN = "|".join(re.escape(r.suffix) for r in RECIPES.values() if r.suffix)
BUILD_DIR_RE = re.compile(
    rf"(?P<version>{sources.VERSION_RE.pattern})(?P<suffix>{SUFFIX_PATTERN})?")


def recipe_named(name: str) -> Recipe:
    """The recipe called name; an unknown name is a usage error listing the known ones."""
    if name not in RECIPES:
        raise UsageError(f"unknown recipe {name!r}; known recipes: "
                         + "; ".join(f"{r.name} ({r.description})" for r in RECIPES.values()))
    return RECIPES[name]


def recipe_reading_as(recipe: str | None) -> Recipe | None:
    """The provisioning recipe that builds what discovery reads as ``recipe`` (shared-O3:
    lineage), frame pointers aside (a release's default); None when none does."""
    if not recipe:
        return None
    base = "-".join(part for part in recipe.split("-") if part != "fp")
    return next((r for r in RECIPES.values() if r.reads_as == base), None)


def recipe_of_build(info: dict) -> str:
    """The recipe a build was made with; builds from before recipes were static or release."""
    if info.get("recipe") in RECIPES:
        return info["recipe"]
    return "release" if info.get("optimized") else "static"



# -- the cache -------------------------------------------------------------------------

_cache_root = cache_root  # list_builds() has a parameter of that name


def read_build(prefix: Path) -> dict | None:
    """The iomatrix-build.json of a finished build, plus "prefix", "python" and "recipe";
    None when it has none (a build not finished); BadCacheEntry when it cannot be read."""
    info = read_json(prefix / BUILD_INFO)
    if info is None:
        return None
    if not isinstance(info, dict):
        raise BadCacheEntry(prefix / BUILD_INFO, "not a JSON object")
    info["prefix"] = str(prefix)
    info["python"] = str(prefix / "bin" / "python3")
    info["recipe"] = recipe_of_build(info)
    return info


def build_suffix(info: dict) -> str:
    """The recipe suffix of a build's cache directory: "" (the lineage's), "-pgo", "-static"."""
    match = BUILD_DIR_RE.fullmatch(Path(info["prefix"]).name)
    return (match["suffix"] or "") if match else ""


def warn_line(message: str) -> None:
    print(f"iomatrix: {cli.one_line(message)}", file=sys.stderr)


def list_builds(cache_root: Path | None = None, warn=warn_line) -> list[dict]:
    """Every finished build in the cache, oldest version first, the lineage's recipe first.
    A build whose iomatrix-build.json cannot be read is left out with one ``warn`` line
    naming it: one bad entry never hides the others."""
    pythons = cache_directory("pythons", cache_root)
    try:
        prefixes = sorted(pythons.iterdir()) if pythons.is_dir() else []
    except OSError as exc:
        raise BadCache(f"the cache's pythons/ cannot be read ({exc.strerror or exc})")
    builds = []
    for prefix in prefixes:
        match = BUILD_DIR_RE.fullmatch(prefix.name)
        if match is None or not prefix.is_dir():
            continue
        try:
            info = read_build(prefix)
        except BadCacheEntry as exc:
            warn(f"build skipped: {exc}")
            continue
        if info is not None:
            builds.append((parse_version(match["version"]).sort_key, match["suffix"] or "", info))
    return [info for *_, info in sorted(builds, key=lambda entry: entry[:2])]
