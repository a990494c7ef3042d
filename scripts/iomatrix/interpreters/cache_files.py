"""Reading the iomatrix cache: its root and directories, and every file read from it.

The cache is input like a run directory: anything may lie there. Every file read from it
(a build's facts, a count, a changelog's JSON, a .dsc, an environment's marker) is read
by ``read_bytes`` / ``read_json`` here: a regular file only (not followed through a
symlink, opened without blocking so a FIFO is refused, not waited on), at most a bound of
bytes, JSON nested at most store.MAX_DEPTH. One that is not is a ``BadCacheEntry`` naming
it by its place in the cache; a reader that can do without it skips it with one line,
one that needs it says why (exit 2). A root (or a directory of it) that is a file or a
symlink loop is a ``BadCache`` (exit 2, one line). Apart from interpreters.cache (the
builds and recipes) so that interpreters.sources, which cache imports, can read with it.
"""
from __future__ import annotations

import os
from pathlib import Path

from iomatrix import cli
from iomatrix.interpreters.errors import UsageError
from iomatrix.storing import contract, store

# A build's iomatrix-build.json is about 1 kB, an environment's marker less; a counts entry
# with its call paths some hundred kB; a changelog's JSON 4 MB (3.15's).
MAX_ENTRY_BYTES = 1 << 20


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
