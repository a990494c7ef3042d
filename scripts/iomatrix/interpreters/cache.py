"""The build cache of provisioned CPythons and the recipes they are built by.

``~/.cache/iomatrix/pythons/<version><suffix>/`` (or ``$IOMATRIX_CACHE``) holds one finished
build per directory with its facts in ``iomatrix-build.json``; discovery lists them and
provision adds to them. The same root holds the source tarballs (``tarballs/``, with the
changelogs read from them) and the counting pass's counts (``counts/``,
iomatrix.measuring.countcache). Apart from the builder (interpreters.provision) so that discovery
can read the cache without importing it.

The cache is input like a run directory: anything may lie there. Every file read from it
(a build's facts, a count, a changelog's JSON, a .dsc, an environment's marker) is read
by ``read_bytes`` / ``read_json`` here: a regular file only (not followed through a
symlink, opened without blocking so a FIFO is refused, not waited on), at most a bound of
bytes, JSON nested at most store.MAX_DEPTH. One that is not is a ``BadCacheEntry`` naming
it by its place in the cache; a reader that can do without it skips it with one line,
one that needs it says why (exit 2). A root (or a directory of it) that is a file or a
symlink loop is a ``BadCache`` (exit 2, one line).
"""
from __future__ import annotations

import dataclasses
import os
import re
import sys
from pathlib import Path

from iomatrix import cli
from iomatrix.interpreters import sources
from iomatrix.interpreters.sources import UsageError, parse_version
from iomatrix.storing import contract, store

BUILD_INFO = "iomatrix-build.json"
# A build's iomatrix-build.json is about 1 kB, an environment's marker less; a counts entry
# with its call paths some hundred kB; a changelog's JSON 4 MB (3.15's).
MAX_ENTRY_BYTES = 1 << 20
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

class BadCache(UsageError, cli.BadInput):
    """The cache's root or one of its directories cannot be a directory (a file there, a
    symlink loop): exit status 2 in every tool, the line naming it."""


class BadCacheEntry(BadCache):
    """A file in the cache that is not what iomatrix writes there (not a regular file, too
    large, nested too deep, not JSON): named by its place in the cache, never read."""

    def __init__(self, path: Path, why: str):
        super().__init__(f"{entry_name(path)}: {why}")
        self.why = why


def _checked_directory(path: Path, what: str) -> Path:
    """``path`` when it is a directory or does not exist yet (it is made when written to);
    BadCache when a file, a device or a symlink loop is there, or it lies under a file."""
    problem = cli.directory_problem(path)
    if problem is not None:
        raise BadCache(f"{what} {cli.one_line(path)}: {problem}; give a directory (or remove "
                       "it)")
    return path


def _root_path() -> Path:
    if os.environ.get("IOMATRIX_CACHE"):
        return Path(os.environ["IOMATRIX_CACHE"]).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(xdg).expanduser() / "iomatrix").absolute()


def cache_root() -> Path:
    """$IOMATRIX_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/iomatrix; BadCache when that is
    there and no directory."""
    return _checked_directory(_root_path(), "IOMATRIX_CACHE" if os.environ.get(
        "IOMATRIX_CACHE") else "the iomatrix cache")


_cache_root = cache_root  # list_builds() has a parameter of that name


def cache_directory(name: str, root: Path | None = None) -> Path:
    """The cache's directory ``name`` (pythons, tarballs, counts); BadCache as cache_root."""
    root = Path(root) if root is not None else cache_root()
    return _checked_directory(root / name, f"the cache's {name}/")


def entry_name(path: Path) -> str:
    """A cache file as a line names it: its place in the cache (pythons/3.13.0/...), not the
    machine's path to it; its last two parts when it lies elsewhere."""
    path, root = Path(path), _root_path()
    shown = path.relative_to(root) if path.is_relative_to(root) else Path(*path.parts[-2:])
    return cli.one_line(shown)


def read_bytes(path: Path, limit: int = MAX_ENTRY_BYTES) -> bytes | None:
    """The bytes of a cache file; None when there is none; BadCacheEntry when it is not a
    regular file of at most ``limit`` bytes (contract.read_bytes: a symlink not followed,
    a FIFO or device refused without blocking)."""
    try:
        return contract.read_bytes(str(path), limit)
    except FileNotFoundError:
        return None
    except contract.UnsafeFileError as exc:
        why = str(exc)[len(str(path)) + 2:]      # its message without the path it begins with
    except OSError as exc:
        why = f"cannot be read ({exc.strerror or exc})"
    raise BadCacheEntry(path, why)


def read_json(path: Path, limit: int = MAX_ENTRY_BYTES):
    """The JSON of a cache file (read_bytes), nested at most store.MAX_DEPTH, no NaN; None
    when there is none; BadCacheEntry naming it otherwise."""
    data = read_bytes(path, limit)
    if data is None:
        return None
    try:
        return store.parse_json(data)
    except (ValueError, UnicodeDecodeError) as exc:  # store.NotAResult is a ValueError
        why = str(exc) if isinstance(exc, store.NotAResult) else "not valid JSON"
    raise BadCacheEntry(path, why)


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
