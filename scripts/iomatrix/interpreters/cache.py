"""The build cache of provisioned CPythons and the recipes they are built by.

``~/.cache/iomatrix/pythons/<version><suffix>/`` (or ``$IOMATRIX_CACHE``) holds one finished
build per directory with its facts in ``iomatrix-build.json``; discovery lists them and
provision adds to them. The same root holds the source tarballs (``tarballs/``, with the
changelogs read from them) and the counting pass's counts (``counts/``,
iomatrix.measuring.countcache). Apart from the builder (interpreters.provision) so that discovery
can read the cache without importing it.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

from iomatrix.interpreters import sources
from iomatrix.interpreters.sources import UsageError, parse_version

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

def cache_root() -> Path:
    """$IOMATRIX_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/iomatrix."""
    if os.environ.get("IOMATRIX_CACHE"):
        return Path(os.environ["IOMATRIX_CACHE"]).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(xdg).expanduser() / "iomatrix").absolute()


_cache_root = cache_root  # list_builds() has a parameter of that name


def read_build(prefix: Path) -> dict | None:
    """The iomatrix-build.json of a finished build, plus "prefix", "python" and "recipe"."""
    try:
        info = json.loads((prefix / BUILD_INFO).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    info["prefix"] = str(prefix)
    info["python"] = str(prefix / "bin" / "python3")
    info["recipe"] = recipe_of_build(info)
    return info


def build_suffix(info: dict) -> str:
    """The recipe suffix of a build's cache directory: "" (the lineage's), "-pgo", "-static"."""
    match = BUILD_DIR_RE.fullmatch(Path(info["prefix"]).name)
    return (match["suffix"] or "") if match else ""


def list_builds(cache_root: Path | None = None) -> list[dict]:
    """Every finished build in the cache, oldest version first, the lineage's recipe first."""
    root = Path(cache_root) if cache_root is not None else _cache_root()
    pythons = root / "pythons"
    if not pythons.is_dir():
        return []
    builds = []
    for prefix in pythons.iterdir():
        match = BUILD_DIR_RE.fullmatch(prefix.name)
        if match is None or not prefix.is_dir():
            continue
        info = read_build(prefix)
        if info is not None:
            builds.append((parse_version(match["version"]).sort_key, match["suffix"] or "", info))
    return [info for *_, info in sorted(builds, key=lambda entry: entry[:2])]
