"""CPython source tarballs for provisioning: find, fetch and verify them.

Where the tarball of a VERSION comes from (first match wins):

1. ``--tarball PATH``, or ``--url URL`` (downloaded into ``tarballs/``);
2. ``tarballs/Python-<version>.tar.xz``, or Debian's unmodified upstream tarball
   ``tarballs/python3.Y_<debian version>.orig.tar.xz`` (3.15.0rc2 is 3.15.0~rc2);
3. with ``--debian-source``: apt's source entries, into ``tarballs/``;
4. python.org's URL, with a short timeout, so an offline machine fails fast.

Every tarball is checked before it is built: its sha256 against ``--sha256`` and
against a Debian .dsc beside it, and its members (one top directory holding
``configure``, no absolute or ``..`` paths). A tarball this call downloaded and
that fails a check is removed again. How to enable Debian's source entries is in
the README's provisioning section.
"""
from __future__ import annotations

import functools
import hashlib
import lzma
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from iomatrix import procs
from iomatrix.interpreters import cache_files
from iomatrix.interpreters.errors import ProvisionError, UsageError  # noqa: F401 (known from here)

OFFICIAL_URL = "https://www.python.org/ftp/python/{release}/Python-{python_version}.tar.xz"
DOWNLOAD_TIMEOUT = 15  # seconds without an answer before a download gives up
APT_TIMEOUT = 600  # a whole apt download of a ~25 MB tarball
APT_QUERY_TIMEOUT = 60
APT_HELPER = Path("/usr/lib/apt/apt-helper")
COPY_BLOCK = 1 << 20
# ASCII digits only: \d would take Arabic-Indic and other Unicode digits, which no
# release is named with and which would reach file names and URLs.
VERSION_RE = re.compile(
    r"(?P<release>(?P<major>[0-9]+)\.(?P<minor>[0-9]+)\.[0-9]+)(?P<pre>(?:a|b|rc)[0-9]+)?"
    r"(?P<t>t)?")
# Limits a tarball is held to before anything is extracted. CPython's own are far inside
# them: 3.13.15's orig tarball has 5,267 members (files and directories only), the
# largest 4.3 MB, 110 MB in all.
MAX_MEMBER_BYTES = 64 << 20
MAX_TOTAL_BYTES = 1 << 30
MAX_MEMBERS = 100_000
# A header that carries data of its own (a GNU long name or link, a pax extended or global
# header) is read whole into memory by tarfile before anything else: at most this much. A
# path is at most 4,096 bytes (PATH_MAX); CPython's tarballs carry a 52-byte pax comment.
MAX_HEADER_BYTES = 8 << 10
# A download (python.org, --url) larger than this is not a source tarball (~20-30 MB).
MAX_DOWNLOAD_BYTES = 256 << 20
# A Debian .dsc is a few kB (python3.13's: 3 kB).
MAX_DSC_BYTES = 1 << 20

Say = Callable[[str], None]


class BadTarball(UsageError):
    """A tarball that is refused before anything is extracted (unreadable, not CPython's,
    a checksum that does not match, an unsafe member); exit status 2."""


class TarLimit(tarfile.TarError):
    """A tar header beyond the limits (BoundedTarInfo), refused before its data is read.
    Not a tarfile.HeaderError, which tarfile would take for the end of the archive."""


# -- versions ------------------------------------------------------------------------

@dataclass(frozen=True)
class Version:
    text: str  # as asked for: "3.15.0rc2t"
    release: str  # "3.15.0"
    pre: str  # "rc2" or ""
    series: str  # "3.15"
    free_threaded: bool

    @property
    def python_version(self) -> str:
        return self.release + self.pre

    @property
    def debian_source(self) -> str:
        return f"python{self.series}"

    @property
    def debian_upstream(self) -> str:
        return self.release + (f"~{self.pre}" if self.pre else "")

    @property
    def official_url(self) -> str:
        return OFFICIAL_URL.format(release=self.release, python_version=self.python_version)

    @property
    def tarball_names(self) -> list[str]:
        return [f"Python-{self.python_version}.tar.xz",
                f"{self.debian_source}_{self.debian_upstream}.orig.tar.xz"]

    @property
    def sort_key(self) -> tuple:
        """Orders 3.14.7 < 3.14.7t < 3.14.10 and 3.15.0a1 < 3.15.0rc2 < 3.15.0."""
        kind, serial = re.fullmatch(r"([a-z]*)([0-9]*)", self.pre).groups()
        pre = ({"a": 0, "b": 1, "rc": 2}[kind], int(serial)) if kind else (3, 0)
        return (*map(int, self.release.split(".")), *pre, self.free_threaded)

    def __str__(self) -> str:
        return self.text


def parse_version(text: str) -> Version:
    match = VERSION_RE.fullmatch(text)
    if match is None:
        raise UsageError(f"{text!r} is not a version: expected X.Y.Z, optionally with a "
                         "pre-release and a trailing t, e.g. 3.14.7, 3.14.7t, 3.15.0rc2")
    return Version(text=text, release=match["release"], pre=match["pre"] or "",
                   series=f"{match['major']}.{match['minor']}", free_threaded=bool(match["t"]))


def brief(text: str, lines: int = 5) -> str:
    """The last lines of a command's output, on one line, for an error message."""
    return procs.tail(text, lines, " | ") or "(no output)"


# -- checking a tarball ----------------------------------------------------------------

def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(COPY_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def dsc_sha256(tarball: Path) -> tuple[str | None, Path | None]:
    """The tarball's sha256 from a Debian .dsc beside it, and that .dsc (read as every cache
    file is: cache_files.BadCacheEntry, a UsageError, for one that is not a small regular file)."""
    source = tarball.name.split("_", 1)[0]
    for dsc in sorted(tarball.parent.glob(f"{source}_*.dsc")):
        in_checksums = False
        text = (cache_files.read_bytes(dsc, MAX_DSC_BYTES) or b"").decode("utf-8", "replace")
        for line in text.splitlines():
            if not line.startswith(" "):
                in_checksums = line.startswith("Checksums-Sha256:")
            elif in_checksums:
                fields = line.split()
                if len(fields) == 3 and fields[2] == tarball.name:
                    return fields[0].lower(), dsc
    return None, None


def check_sha256(tarball: Path, expected: str | None) -> str:
    """The tarball's sha256, checked against --sha256 and any Debian .dsc."""
    actual = sha256_of(tarball)
    from_dsc, dsc = dsc_sha256(tarball)
    for digest, origin in ((expected, "--sha256"), (from_dsc, str(dsc))):
        if digest is not None and actual != digest.lower():
            raise BadTarball(f"checksum mismatch for {tarball}: expected sha256 "
                                 f"{digest.lower()} (from {origin}), got {actual}")
    return actual


HEADER_TYPES = {tarfile.GNUTYPE_LONGNAME: "GNU long name", tarfile.GNUTYPE_LONGLINK:
                "GNU long link", tarfile.XHDTYPE: "pax extended", tarfile.XGLTYPE: "pax global",
                tarfile.SOLARIS_XHDTYPE: "Solaris extended"}


def shown_name(name: str, limit: int = 80) -> str:
    """A member's name for a message: quoted, cut to ``limit`` characters."""
    return repr(name[:limit]) + ("..." if len(name) > limit else "")


class BoundedTarInfo(tarfile.TarInfo):
    """tarfile's member header (``tarfile.open(..., tarinfo=BoundedTarInfo)``), held to the
    limits before tarfile reads what a header announces: tarfile reads a GNU long name or a
    pax header whole into memory (a header claiming 1 GiB costs 1 GiB), and a stream skips
    a member by reading it (a 100 GiB member claimed in a header is 100 GiB decompressed).
    So a header with data of its own over MAX_HEADER_BYTES, a member over MAX_MEMBER_BYTES
    (its header's size, or a pax header's) and a GNU sparse member (its map is read block by
    block, without a bound) are TarLimit, raised from the header alone."""

    def _proc_member(self, tarfile_):
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise TarLimit(f"member {shown_name(self.name)} is a GNU sparse file; a source "
                           "tarball holds none")
        if self.type in HEADER_TYPES and self.size > MAX_HEADER_BYTES:
            raise TarLimit(f"a {HEADER_TYPES[self.type]} header of {self.size:,} bytes; at most "
                           f"{MAX_HEADER_BYTES:,}")
        member = super()._proc_member(tarfile_)
        if member.size > MAX_MEMBER_BYTES:
            raise TarLimit(f"member {shown_name(member.name)} is {member.size:,} bytes; at most "
                           f"{MAX_MEMBER_BYTES >> 20} MiB a member")
        return member

    def _proc_gnusparse_10(self, next, pax_headers, tarfile_):
        # GNU sparse 1.0 (announced in a pax header): its map is read from the data until
        # the counts it states are met
        raise TarLimit(f"member {shown_name(next.name)} is a GNU sparse file; a source "
                       "tarball holds none")


# What reading a tarball may raise: tarfile's own errors (TarLimit among them), the
# decompressors', the file's, and a chain of headers deeper than the interpreter recurses.
TAR_ERRORS = (tarfile.TarError, lzma.LZMAError, zlib.error, EOFError, OSError, RecursionError)


def bounded_members(archive, where: str):
    """The members of an open tar stream, each counted against MAX_MEMBERS and its size
    against MAX_TOTAL_BYTES in all: TarLimit ("... GiB ``where``") beyond either."""
    total = 0
    for count, member in enumerate(archive, 1):
        total += member.size
        if count > MAX_MEMBERS or total > MAX_TOTAL_BYTES:
            raise TarLimit(f"more than {MAX_MEMBERS:,} members or "
                           f"{MAX_TOTAL_BYTES >> 30} GiB {where}")
        yield member


def read_member(tarball: Path, wanted, limit: int) -> bytes | None:
    """The data of the first regular member whose name ``wanted(name)`` accepts, read as a
    stream (nothing extracted), at most ``limit`` bytes; None when no member is wanted.
    Every header on the way is held to BoundedTarInfo's limits, and the members skipped to
    MAX_MEMBERS and MAX_TOTAL_BYTES: TarLimit (or another of TAR_ERRORS) otherwise."""
    with tarfile.open(tarball, "r|*", tarinfo=BoundedTarInfo) as archive:
        for member in bounded_members(archive, "before the one wanted"):
            if member.isreg() and wanted(member.name):
                if member.size > limit:
                    raise TarLimit(f"member {shown_name(member.name)} is {member.size:,} "
                                   f"bytes; at most {limit:,}")
                handle = archive.extractfile(member)
                return handle.read(limit) if handle is not None else None
    return None


def read_members(tarball: Path, wanted, limit: int, keep: int) -> dict:
    """{name: data} of every regular member ``wanted(name)`` accepts, in one pass over the
    stream (``read_member`` reads the whole stream up to its one member: 20 members of four
    tarballs took 20 passes, half of a report's time). A wanted member over ``limit`` bytes
    is left out (as read_member refuses it), and so is every one after ``keep`` bytes in
    all; the headers and the members on the way keep read_member's bounds (TarLimit)."""
    found: dict = {}
    kept = 0
    with tarfile.open(tarball, "r|*", tarinfo=BoundedTarInfo) as archive:
        for member in bounded_members(archive, "in the tarball"):
            if member.isreg() and wanted(member.name) and member.size <= limit \
                    and kept + member.size <= keep:
                handle = archive.extractfile(member)
                if handle is not None:
                    found[member.name] = handle.read(limit)
                    kept += len(found[member.name])
    return found


def check_member(member: tarfile.TarInfo, tarball: Path) -> None:
    """Refuse a member that extraction could turn against the machine: anything but a
    regular file or a directory (symlinks, hard links, devices, fifos), an absolute or
    ``..`` path, or a file over MAX_MEMBER_BYTES. Read from its header, before its data."""
    name = member.name
    def refuse(why: str) -> None:
        raise BadTarball(f"{tarball}: member {shown_name(name)} {why}; refused before "
                         "extraction")
    parts = Path(name).parts
    if not parts or name.startswith("/") or ".." in parts or "\0" in name:
        refuse("has an unsafe path (absolute, .. or empty)")
    if not (member.isreg() or member.isdir()):
        kind = ("a symbolic link" if member.issym() else "a hard link" if member.islnk()
                else "a fifo" if member.isfifo() else "a device" if member.isdev()
                else f"of tar type {member.type!r}")
        refuse(f"is {kind}; a source tarball holds only files and directories")
    if member.size > MAX_MEMBER_BYTES:
        refuse(f"is {member.size:,} bytes; at most {MAX_MEMBER_BYTES >> 20} MiB a member")


def extract(tarball: Path, dest: Path) -> None:
    """Unpack a tarball that inspect_tarball passed into dest, checking every member again
    as it goes (the file is read a second time), with tarfile's own data filter on top
    where this Python has it (3.12, and 3.11.4 on)."""
    total = 0

    def checked(member: tarfile.TarInfo) -> tarfile.TarInfo:
        nonlocal total
        check_member(member, tarball)
        total += member.size
        if total > MAX_TOTAL_BYTES:
            raise BadTarball(f"{tarball}: its members add up to more than "
                             f"{MAX_TOTAL_BYTES >> 30} GiB; extraction stopped")
        return member

    with tarfile.open(tarball, "r:*", tarinfo=BoundedTarInfo) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter=lambda member, path: tarfile.data_filter(
                checked(member), path))
        else:
            tar.extractall(dest, members=(checked(member) for member in tar))


def inspect_tarball(tarball: Path) -> str:
    """The tarball's single top directory, after reading it through once and checking every
    member's header (check_member) and the total size; the first unsafe member stops the
    read, so an oversized member is never decompressed."""
    tops = set()
    names = set()
    total = 0
    try:
        with tarfile.open(tarball, "r:*", tarinfo=BoundedTarInfo) as tar:
            for member in tar:
                check_member(member, tarball)
                total += member.size
                if total > MAX_TOTAL_BYTES:
                    raise BadTarball(f"{tarball}: its members add up to more than "
                                     f"{MAX_TOTAL_BYTES >> 30} GiB (at "
                                     f"{shown_name(member.name)}); refused before extraction")
                if len(names) >= MAX_MEMBERS:
                    raise BadTarball(f"{tarball}: more than {MAX_MEMBERS:,} members; refused "
                                     "before extraction")
                names.add(member.name)
                tops.add(Path(member.name).parts[0])
    except TAR_ERRORS as exc:
        raise BadTarball(f"{tarball} is not a readable source tarball: "
                         f"{str(exc)[:200] or type(exc).__name__}") from exc
    if len(tops) != 1:
        raise BadTarball(f"{tarball} is not a CPython source tarball: top entries "
                         f"{sorted(tops)[:5]}")
    top = tops.pop()
    if f"{top}/configure" not in names:
        raise BadTarball(f"{tarball} is not a CPython source tarball: no {top}/configure")
    return top


# -- fetching --------------------------------------------------------------------------

def new_directories(directory: Path) -> list[Path]:
    """``directory`` and those above it that do not exist yet, deepest first: what making it
    makes, and what ``remove_new`` removes again when nothing is kept."""
    return [d for d in (directory, *directory.parents) if not d.exists()]


def remove_new(directories: list[Path]) -> None:
    """Remove the directories new_directories listed, deepest first, while they are empty:
    a refusal or a failure leaves the cache as it was."""
    for directory in directories:
        try:
            directory.rmdir()
        except OSError:
            break


# Set to anything but "" or "0": nothing is asked of any network (a machine that must not
# reach out; the tests' runs). Every door to the network below (download, debian_fetch,
# _apt_helper_fetch) and the probes of other modules (newest, bisect_points) ask offline().
OFFLINE_ENV = "IOMATRIX_OFFLINE"


def offline() -> bool:
    return os.environ.get(OFFLINE_ENV, "") not in ("", "0")


def refuse_if_offline(what: str) -> None:
    if offline():
        raise ProvisionError(f"{what}: not fetched, {OFFLINE_ENV} is set (unset it, pass "
                             "--tarball PATH or put the tarball in the cache's tarballs/)")


def download(url: str, dest: Path, say: Say, timeout: float = DOWNLOAD_TIMEOUT) -> Path:
    """Fetch url to dest via dest.part; nothing is left behind on failure. A file: URL is
    no network: it is read offline too."""
    if urllib.parse.urlsplit(url).scheme != "file":
        refuse_if_offline(url)
    new_dirs = new_directories(dest.parent)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + f".part-{os.getpid()}")
    say(f"downloading {url} (timeout {timeout:g}s)")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(part, "wb") as out:
            copied = 0
            while block := response.read(COPY_BLOCK):
                copied += len(block)
                if copied > MAX_DOWNLOAD_BYTES:   # no tarball is that large: not one
                    raise ValueError(f"more than {MAX_DOWNLOAD_BYTES >> 20} MiB")
                out.write(block)
        os.replace(part, dest)
    except (OSError, ValueError) as exc:  # URLError and socket.timeout are OSErrors
        part.unlink(missing_ok=True)
        remove_new(new_dirs)
        raise ProvisionError(
            f"download of {url} failed: {getattr(exc, 'reason', exc)}. This machine may be "
            "offline: pass --tarball PATH, put the tarball in the cache's tarballs/ directory, "
            "or use --debian-source (see --help)") from exc
    finally:
        part.unlink(missing_ok=True)
    return dest


def _apt(cmd: list[str], timeout: float, cwd=None):
    """An apt command; a missing program or a timeout is a ProvisionError, not a traceback."""
    try:
        return procs.run(cmd, timeout=timeout, cwd=cwd)
    except OSError as exc:
        raise ProvisionError(f"{cmd[0]}: cannot run it: {exc.strerror or exc}")
    except subprocess.TimeoutExpired:
        raise ProvisionError(f"{' '.join(cmd)}: no answer within {timeout:g} s (network?)")


def _apt_source_versions(package: str) -> list[str]:
    proc = _apt(["apt-cache", "showsrc", package], timeout=APT_QUERY_TIMEOUT)
    return [line.split(":", 1)[1].strip() for line in proc.stdout.splitlines()
            if line.startswith("Version:")]


def _upstream_of(debian_version: str) -> str:
    version = debian_version.split(":", 1)[-1]
    return version.rsplit("-", 1)[0] if "-" in version else version


def debian_mirrors() -> list[str]:
    """The archive URIs of apt's own entries, deb-src ones first, then deb ones, each ending
    in "/" (the pool is ``<uri>pool/main/p/python3.Y/``): the mirror is read from the
    system's configuration, never written here, so a machine set up with another mirror, a
    proxy or a local archive is followed. ``apt-get indextargets --no-release-info`` reads
    the entries as apt does (sources.list and sources.list.d, or what APT_CONFIG names),
    whether or not ``apt-get update`` has run. Only http(s) URIs: urllib asks them too
    (newest.probe_pool). [] where apt is not installed or lists none."""
    if shutil.which("apt-get") is None:
        return []
    try:
        proc = _apt(["apt-get", "indextargets", "--no-release-info", "--format",
                     "$(TARGET_OF) $(REPO_URI)"], timeout=APT_QUERY_TIMEOUT)
    except ProvisionError:
        return []
    if proc.returncode != 0:
        return []
    found = {"deb-src": [], "deb": []}
    for line in proc.stdout.splitlines():
        kind, _, uri = line.strip().partition(" ")
        if kind in found and uri.startswith(("http://", "https://")) and " " not in uri:
            found[kind].append(uri if uri.endswith("/") else uri + "/")
    return list(dict.fromkeys(found["deb-src"] + found["deb"]))


def _apt_config(*names: str) -> dict:
    """{name: value} of apt's configuration (``apt-config shell``), unset names left out."""
    pairs = [part for k, name in enumerate(names) for part in (f"V{k}", name)]
    try:
        proc = _apt(["apt-config", "shell", *pairs], timeout=APT_QUERY_TIMEOUT)
    except ProvisionError:
        return {}
    values = {}
    for line in proc.stdout.splitlines():
        try:
            (word,) = shlex.split(line)
        except ValueError:
            continue
        var, _, value = word.partition("=")
        if var.startswith("V") and var[1:].isdigit() and int(var[1:]) < len(names):
            values[names[int(var[1:])]] = value
    return values


def apt_opener(url: str) -> urllib.request.OpenerDirector:
    """A urllib opener that reaches ``url``'s host as apt's downloader does: through apt's
    proxy (``Acquire::http::Proxy``, its per-host form, https falling back to http's),
    directly where apt says DIRECT, else as the environment says (http_proxy, which apt
    honours too). A request urllib makes to a mirror (newest.probe_pool's HEAD requests)
    then takes the way the tarball fetch (apt-helper) takes."""
    parts = urllib.parse.urlsplit(url)
    return _apt_opener(parts.scheme, parts.hostname or "", os.environ.get("APT_CONFIG"))


@functools.lru_cache(maxsize=None)
def _apt_opener(scheme: str, host: str, apt_config: str | None) -> urllib.request.OpenerDirector:
    # once per scheme, host and apt configuration: probe_pool asks 55 URLs of one host
    schemes = ("https", "http") if scheme == "https" else ("http",)
    names = [name for scheme in schemes for name in
             (f"Acquire::{scheme}::Proxy::{host}", f"Acquire::{scheme}::Proxy")]
    config = _apt_config(*names) if shutil.which("apt-config") else {}
    proxy = next((config[name] for name in names if config.get(name)), None)
    if proxy is None:
        return urllib.request.build_opener()
    if proxy.upper() == "DIRECT":
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener(urllib.request.ProxyHandler({scheme: proxy}))


def debian_fetch(version: Version, tarballs: Path, say: Say) -> Path:
    """Get Debian's orig tarball of version into tarballs/ with apt."""
    refuse_if_offline(f"Debian's source of {version}")
    if shutil.which("apt-get") is None:
        raise ProvisionError("--debian-source needs apt-get, which is not installed here")
    new_dirs = new_directories(tarballs)
    try:
        tarballs.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"the cache's tarballs/ cannot be made ({exc.strerror or exc})")
    before = set(tarballs.iterdir())
    try:
        return _debian_fetch(version, tarballs, say)
    except ProvisionError:
        # what this call fetched (a .dsc whose tarball then failed) goes with it
        for added in set(tarballs.iterdir()) - before:
            added.unlink(missing_ok=True)
        remove_new(new_dirs)
        raise


def _debian_fetch(version: Version, tarballs: Path, say: Say) -> Path:
    package, upstream = version.debian_source, version.debian_upstream
    dest = tarballs / f"{package}_{upstream}.orig.tar.xz"
    listed = [v for v in _apt_source_versions(package) if _upstream_of(v) == upstream]
    tried = []
    if listed:
        cmd = ["apt-get", "source", "--download-only", f"{package}={listed[-1]}"]
        say(f"in {tarballs}: {' '.join(cmd)}")
        debian_parts = f"{package}_{upstream}-*.debian.tar.*"
        before = set(tarballs.glob(debian_parts))
        proc = _apt(cmd, cwd=tarballs, timeout=APT_TIMEOUT)
        # Only the orig tarball and the .dsc (its checksum) are wanted; what was there
        # before stays.
        for extra in set(tarballs.glob(debian_parts)) - before:
            extra.unlink()
        if proc.returncode == 0 and dest.exists():
            return dest
        tried.append(f"{' '.join(cmd)}: {brief(proc.stderr)}")
    # The pool keeps versions its index no longer lists (and may not yet hold
    # ones it does): ask for the orig tarball by its pool path, from each archive apt has.
    for mirror in debian_mirrors() if APT_HELPER.exists() else []:
        pool = f"{mirror}pool/main/{package[0]}/{package}/"
        # The first Debian revision's .dsc, when the pool has it, carries the
        # orig tarball's sha256 (checked by resolve_tarball).
        dsc = f"{package}_{upstream}-1.dsc"
        if _apt_helper_fetch(pool + dsc, tarballs / dsc, say) is None:
            say(f"note: {dest.name} is not in the apt index; its sha256 is checked against {dsc}")
        else:
            say(f"note: {dest.name} is not in the apt index and has no {dsc}: unverified")
        error = _apt_helper_fetch(pool + dest.name, dest, say)
        if error is None:
            return dest
        tried.append(f"{pool + dest.name}: {error}")
    if not tried:
        raise ProvisionError(
            f"no deb-src entry lists {package} (apt-cache showsrc {package}) and apt lists no "
            "archive to ask its pool; add one and run apt-get update "
            "(README.md: \"Offline builds from Debian's source tarballs\")")
    raise ProvisionError(f"could not fetch {dest.name} with apt:\n  " + "\n  ".join(tried))


def _apt_helper_fetch(url: str, dest: Path, say: Say) -> str | None:
    """Download url to dest with apt's downloader; the error, or None if it worked."""
    if offline():
        return f"not fetched, {OFFLINE_ENV} is set"
    part = dest.with_name(dest.name + f".part-{os.getpid()}")
    say(f"{APT_HELPER} download-file {url} {dest.name}")
    try:
        proc = _apt([str(APT_HELPER), "download-file", url, str(part)], timeout=APT_TIMEOUT)
        if proc.returncode == 0 and part.exists():
            os.replace(part, dest)
            return None
        return brief(proc.stdout + proc.stderr)
    finally:
        part.unlink(missing_ok=True)


# -- putting it together ---------------------------------------------------------------

@dataclass
class Tarball:
    path: Path
    sha256: str
    url: str | None  # set when it was downloaded by this call
    downloaded: bool


def resolve_tarball(version: Version, root: Path, *, tarball: Path | None = None,
                    url: str | None = None, sha256: str | None = None,
                    debian_source: bool = False, say: Say = print) -> Tarball:
    """Find or fetch the source tarball and check it; see the module docstring. A tarball
    this call fetched that is refused is removed again, with the directories made for it."""
    tarballs = cache_files.cache_directory("tarballs", root)
    new_dirs = new_directories(tarballs)
    downloaded = False
    path = None
    try:
        if tarball is not None:
            path = Path(tarball).absolute()
            if not path.is_file():
                raise UsageError(f"--tarball {tarball}: no such file")
        elif url is not None:
            name = url.rstrip("/").rsplit("/", 1)[-1] or f"Python-{version.python_version}.tar.xz"
            downloaded = True
            path = download(url, tarballs / name, say)
        else:
            found = [tarballs / name for name in version.tarball_names
                     if (tarballs / name).is_file()]
            if found:
                path = found[0]
            elif debian_source:
                downloaded = True
                path = debian_fetch(version, tarballs, say)
            else:
                url = version.official_url
                downloaded = True
                path = download(url, tarballs / version.tarball_names[0], say)
        digest = check_sha256(path, sha256)
        inspect_tarball(path)
    except ProvisionError:
        if downloaded:  # leave the cache as it was
            if path is not None:
                path.unlink(missing_ok=True)
            remove_new(new_dirs)
        raise
    return Tarball(path=path, sha256=digest, url=url, downloaded=downloaded)
