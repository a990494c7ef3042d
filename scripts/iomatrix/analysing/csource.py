"""Whether a C function's source changed between two CPython releases, from their tarballs.

A finding's counts name the functions whose instructions moved (``counts.where_instructions_
went``; callgrind gives each function's file, ``.../Python-3.12.1/./Modules/_io/bufferedio.c``).
Where the source tarballs of both sides are in the cache (provisioned builds leave them
there), the file is read from each (from the zip of its C files ``keep_c_files`` left beside
the tarball, else from the tarball's C files read in one streamed, bounded pass: nothing is
extracted),
split into its functions, and the function's text compared: "its source changed
(Modules/_io/bufferedio.c)" or "its source is the same".

The split is CPython's own style (PEP 7): a definition's name starts a line, its body opens
with ``{`` at the start of a line and ends with the first ``}`` at the start of a line:

    static PyObject *
    buffered_iternext(buffered *self)
    {
        ...
    }

That is enough to tell whether a function's text changed; it is not a C parser (a function
written otherwise is simply not found, and the answer is "not compared"). Tarball contents
are untrusted: a member is read only as a regular file whose headers keep to
``sources.read_member``'s bounds, and only up to MAX_SOURCE_BYTES; a file path from the counts is only ever compared with member names,
never opened.
"""
from __future__ import annotations

import functools
import os
import re
import zipfile
from pathlib import Path

from iomatrix.interpreters import sources

# Modules/_io/bufferedio.c is 90 KB, Objects/unicodeobject.c (the largest) 500 KB: a bigger
# member is not one of CPython's C files.
MAX_SOURCE_BYTES = 4 << 20
# Where a build's file path enters CPython's tree: ".../Python-3.12.1/./Modules/_io/x.c"
# (a build from a tarball) or ".../src/Python-3.14.7/Objects/obmalloc.c".
TREE_RE = re.compile(r"/Python-[0-9][0-9A-Za-z.]*/(?:\./)?")
C_SUFFIXES = (".c", ".h")
# A line that starts a definition: an identifier at column 0 followed by "(", on a line that
# does not end a declaration (";"); "static int name(" on one line counts too.
NAME_LINE_RE = re.compile(r"^(?:[A-Za-z_][\w\s\*]*?[\s\*])?([A-Za-z_]\w*)\s*\([^;]*$")
NOT_NAMES = {"if", "for", "while", "switch", "return", "sizeof", "defined"}


def tree_path(file: str) -> str | None:
    """The file's path in CPython's tree ("Modules/_io/bufferedio.c"), or None for a file
    outside it (glibc's, ld.so's) or that is not C source."""
    parts = TREE_RE.split(str(file))
    if len(parts) < 2:
        return None
    inside = parts[-1]
    if not inside.endswith(C_SUFFIXES) or ".." in inside.split("/") or \
            inside.startswith("/"):
        return None
    return inside


def functions_of(text: str) -> dict:
    """{name: its text} of the C functions defined in ``text`` (the module docstring's
    style); a name defined twice (#ifdef branches) keeps both texts, joined."""
    lines = text.splitlines()
    found: dict = {}
    k = 0
    while k < len(lines):
        match = NAME_LINE_RE.match(lines[k])
        if match and match.group(1) not in NOT_NAMES and not lines[k].startswith("#"):
            # the body opens with "{" at column 0 within a few lines (a long parameter list)
            start = k
            j = k
            while j < len(lines) and j - k < 30 and not lines[j].startswith("{"):
                if lines[j].rstrip().endswith(";") or (j > k and NAME_LINE_RE.match(lines[j])
                                                       and not lines[j].startswith((" ", "\t"))):
                    break
                j += 1
            if j < len(lines) and lines[j].startswith("{"):
                end = j
                while end < len(lines) and not lines[end].startswith("}"):
                    end += 1
                body = "\n".join(line.rstrip() for line in lines[start:end + 1])
                name = match.group(1)
                found[name] = found[name] + "\n" + body if name in found else body
                k = end + 1
                continue
        k += 1
    return found


# The C files of one tarball kept in memory at most (CPython's are about 30 MB).
MAX_TREE_BYTES = 128 << 20


def _in_tree(name: str) -> str | None:
    """A member's path below the tarball's top directory ("Python-3.12.1/Modules/x.c")."""
    parts = name.split("/", 1)
    return parts[1] if len(parts) == 2 else None


@functools.lru_cache(maxsize=4)
def _c_files(tarball: str, size: int, mtime_ns: int, limit: int) -> dict | None:
    """{path in the tree: bytes} of a tarball's C files, read in one pass (size and mtime
    in the key: a tarball replaced on disk is read again); None when it is refused."""
    try:
        members = sources.read_members(
            Path(tarball), lambda name: name.endswith(C_SUFFIXES) and _in_tree(name) is not None,
            limit, MAX_TREE_BYTES)
    except sources.TAR_ERRORS:
        return None
    return {_in_tree(name): data for name, data in members.items()}


# The C files of a tarball, kept beside it by the main command's changelog step
# (``keep_c_files``): a report then reads the few files it compares from the zip, where
# each tarball cost it a pass over its whole .tar.xz stream (1.1-1.6 s of CPU for xz alone,
# 5 of a report's 23 s with 3 tarballs, 2026-11-27).
C_FILES_SUFFIX = ".c-files.zip"


def c_files_path(tarball) -> Path:
    return Path(str(tarball) + C_FILES_SUFFIX)


def _fresh_c_files(tarball) -> Path | None:
    """The zip of ``tarball``'s C files when it is a regular file newer than the tarball."""
    path = c_files_path(tarball)
    try:
        kept, source = os.lstat(path), os.stat(tarball)
    except OSError:
        return None
    fresh = kept.st_mtime_ns >= source.st_mtime_ns and path.is_file() and not path.is_symlink()
    return path if fresh else None


def keep_c_files(tarball) -> bool:
    """Write the C files of ``tarball`` that ``member_text`` would read (one pass, the same
    bounds) into a zip beside it, unless a fresh one is there; True when written. A part
    file renamed into place: a reader never sees half of it."""
    tarball = Path(tarball)
    if _fresh_c_files(tarball) is not None:
        return False
    try:
        stat = tarball.stat()
        files = _c_files(str(tarball), stat.st_size, stat.st_mtime_ns, MAX_SOURCE_BYTES)
    except (OSError, *sources.TAR_ERRORS):
        return False
    if files is None:
        return False
    path = c_files_path(tarball)
    part = path.with_name(path.name + f".part-{os.getpid()}")
    try:
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            for name, data in sorted(files.items()):
                archive.writestr(name, data)
        os.replace(part, path)
        return True
    except OSError:
        part.unlink(missing_ok=True)
        return False


def _zipped_member(zipped: Path, path: str) -> bytes | None:
    """``path`` from a zip of keep_c_files, bounded; None when absent (as from the tarball:
    a file over MAX_SOURCE_BYTES was left out); OSError or BadZipFile when unreadable."""
    with zipfile.ZipFile(zipped) as archive:
        try:
            info = archive.getinfo(path)
        except KeyError:
            return None
        if info.file_size > MAX_SOURCE_BYTES:
            return None
        with archive.open(info) as member:
            return member.read(MAX_SOURCE_BYTES)


@functools.lru_cache(maxsize=64)
def member_text(tarball: str, path: str) -> str | None:
    """``<top>/<path>`` of a source tarball, read as a stream and bounded; None when the
    tarball has no such regular member, cannot be read, or is refused: its headers are held
    to sources.read_member's bounds (a long-name or pax header, a member, the members before
    it) before tarfile reads what they announce, and the member to MAX_SOURCE_BYTES. A C
    file comes from the zip ``keep_c_files`` left beside the tarball when it is fresh, else
    from the tarball's C files read in one pass (``_c_files``)."""
    def wanted(name: str) -> bool:
        return _in_tree(name) == path
    zipped = _fresh_c_files(tarball) if path.endswith(C_SUFFIXES) else None
    if zipped is not None:
        try:
            data = _zipped_member(zipped, path)
            return data.decode("utf-8", "replace") if data is not None else None
        except (OSError, zipfile.BadZipFile, ValueError, EOFError):
            pass     # a damaged zip: the tarball itself, as without it
    try:
        if path.endswith(C_SUFFIXES):
            stat = Path(tarball).stat()
            files = _c_files(str(tarball), stat.st_size, stat.st_mtime_ns, MAX_SOURCE_BYTES)
            data = files.get(path) if files is not None else None
        else:
            data = sources.read_member(Path(tarball), wanted, MAX_SOURCE_BYTES)
    except sources.TAR_ERRORS:
        return None
    return data.decode("utf-8", "replace") if data is not None else None


def bare_name(name: str) -> str:
    """A function's name as its source defines it: callgrind's clones and local copies
    ("buffered_iternext.lto_priv.0", "f'2", "f.isra.0") without their suffixes."""
    return re.split(r"[.'\s]", str(name), maxsplit=1)[0]


def function_changed(tarball_a, tarball_b, path: str, names) -> bool | None:
    """Whether the function (any of ``names``, as callgrind gave them) is defined differently
    in ``path`` of the two tarballs; None when a side lacks the file or the function (not
    compared: a function moved to another file, or defined in a style functions_of does not
    read)."""
    texts = [member_text(str(t), path) for t in (tarball_a, tarball_b)]
    if None in texts:
        return None
    a, b = functions_of(texts[0]), functions_of(texts[1])
    for name in dict.fromkeys(bare_name(n) for n in names):
        if name in a and name in b:
            return a[name] != b[name]
    return None
