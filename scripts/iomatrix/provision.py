#!/usr/bin/env python3
"""Build CPython interpreters from source into the iomatrix cache.

    nox -s provision -- 3.14.7 3.14.7t 3.15.0rc2
    python scripts/provision.py [--optimized] [--jobs N] VERSION [VERSION...]

VERSION is X.Y.Z with an optional pre-release (3.15.0rc2) and an optional
trailing "t" for a free-threaded build (3.14.7t, configured --disable-gil).

Cache layout; the root is $IOMATRIX_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/iomatrix:

    tarballs/                 source tarballs, looked up before any download
    pythons/<version>/        a finished build: bin/python3, iomatrix-build.json
    pythons/logs/             one log per build attempt, kept when it fails

A build is configured with --prefix=pythons/<version> and installed with
DESTDIR into a hidden pythons/.<version>.partial-<pid>/ staging directory.
iomatrix-build.json is written into the staged tree, which is then renamed into
place: discovery only looks at directories holding that file, so it never sees
half a build. A failed or interrupted build removes its staging directory and
keeps its log. A version that is already built is left alone.

Where the tarball comes from (first match wins):
  1. --tarball PATH, or --url URL (downloaded into tarballs/);
  2. tarballs/Python-<version>.tar.xz, or Debian's
     tarballs/python3.Y_<debian version>.orig.tar.xz (3.15.0rc2 is 3.15.0~rc2),
     which is the unmodified upstream tarball; a .dsc beside it is used to
     verify the checksum;
  3. with --debian-source: apt (below), into tarballs/;
  4. https://www.python.org/ftp/python/X.Y.Z/Python-<version>.tar.xz, with a
     short timeout, so an offline machine fails fast.

Machines that reach only Debian's archive get tarballs with --debian-source,
or by hand. Add a deb-src entry modelled on the deb entry in
/etc/apt/sources.list.d/debian.sources (same URIs and Signed-By) as
/etc/apt/sources.list.d/debian-src.sources:

    Types: deb-src
    URIs: <the URIs of the existing entry>
    Suites: trixie sid experimental
    Components: main
    Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

then:

    apt-get update
    apt-cache showsrc python3.14 | grep ^Version
    mkdir -p ~/.cache/iomatrix/tarballs && cd ~/.cache/iomatrix/tarballs
    apt-get source --download-only python3.14=3.14.10-1

The archive's pool lags or leads its index: a version the index no longer
lists may still be in the pool, and one it lists may not be there yet (404).
--debian-source then fetches the orig tarball, and the first revision's .dsc
that vouches for its sha256 when the pool has one, with apt's own downloader:

    MIRROR=$(apt-get indextargets --format '$(REPO_URI)' 'Created-By: Sources' | head -n1)
    POOL=${MIRROR}pool/main/p/python3.14
    /usr/lib/apt/apt-helper download-file $POOL/python3.14_3.14.7-1.dsc python3.14_3.14.7-1.dsc
    /usr/lib/apt/apt-helper download-file \\
        $POOL/python3.14_3.14.7.orig.tar.xz python3.14_3.14.7.orig.tar.xz

Only the orig tarball (and its .dsc) is needed; nothing is unpacked there.

Online machines can skip building: `nox --download-python always` and
`uv python install 3.14` provide python-build-standalone interpreters (--uv
here runs the latter; those live in uv's directory, not in this cache).

Exit status: 0 done, 1 a download or build failed, 2 usage error (including a
VERSION that is not a version), 130 interrupted.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import lzma
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

BUILD_INFO = "iomatrix-build.json"
OFFICIAL_URL = "https://www.python.org/ftp/python/{release}/Python-{python_version}.tar.xz"
DOWNLOAD_TIMEOUT = 15  # seconds without an answer before a download gives up
APT_TIMEOUT = 600  # a whole apt download of a ~25 MB tarball
UV_TIMEOUT = 15  # uv's own HTTP timeout; an offline uv fails within it
UV_INSTALL_TIMEOUT = 600
HEARTBEAT_SECONDS = 30.0
OPTIMIZED_ARGS = ["--enable-optimizations", "--with-lto"]
FREE_THREADED_ARGS = ["--disable-gil"]

VERSION_RE = re.compile(
    r"(?P<release>(?P<major>\d+)\.(?P<minor>\d+)\.\d+)(?P<pre>(?:a|b|rc)\d+)?(?P<t>t)?"
)

# Run by the new interpreter before it is moved into place: the build must be
# the version and the kind (free-threaded or not) that was asked for.
PROBE = (
    "import json, platform, sys, sysconfig; print(json.dumps({"
    "'python_version': platform.python_version(), "
    "'free_threaded': bool(sysconfig.get_config_var('Py_GIL_DISABLED')), "
    "'sys_version': sys.version}))"
)

Say = Callable[[str], None]

# Headings of the lists that CPython's make prints of stdlib extension modules
# it did not build; an interpreter without _decimal or _zstd measures something
# else, so the build info records them.
MODULE_LIST_HEADINGS = (
    "The necessary bits to build these optional modules were not found:",
    "Failed to build these modules:",
    "Following modules built successfully but were removed because they could not be imported:",
)


class ProvisionError(Exception):
    """A download or build failed; exit status 1."""


class UsageError(ProvisionError):
    """The command line asked for something that cannot be; exit status 2."""


class StageError(ProvisionError):
    def __init__(self, stage: str, log: Path, detail: str):
        super().__init__(f"{stage} failed: {detail}; see the log: {log}")
        self.stage = stage
        self.log = log


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
        return [
            f"Python-{self.python_version}.tar.xz",
            f"{self.debian_source}_{self.debian_upstream}.orig.tar.xz",
        ]

    @property
    def sort_key(self) -> tuple:
        """Orders 3.14.7 < 3.14.7t < 3.14.10 and 3.15.0a1 < 3.15.0rc2 < 3.15.0."""
        kind, serial = re.fullmatch(r"([a-z]*)(\d*)", self.pre).groups()
        pre = ({"a": 0, "b": 1, "rc": 2}[kind], int(serial)) if kind else (3, 0)
        return (*map(int, self.release.split(".")), *pre, self.free_threaded)

    def __str__(self) -> str:
        return self.text


def parse_version(text: str) -> Version:
    match = VERSION_RE.fullmatch(text)
    if match is None:
        raise UsageError(
            f"{text!r} is not a version: expected X.Y.Z, optionally with a pre-release"
            " and a trailing t, e.g. 3.14.7, 3.14.7t, 3.15.0rc2"
        )
    return Version(
        text=text,
        release=match["release"],
        pre=match["pre"] or "",
        series=f"{match['major']}.{match['minor']}",
        free_threaded=bool(match["t"]),
    )


def cache_root() -> Path:
    """$IOMATRIX_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/iomatrix."""
    if os.environ.get("IOMATRIX_CACHE"):
        return Path(os.environ["IOMATRIX_CACHE"]).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(xdg).expanduser() / "iomatrix").absolute()


_cache_root = cache_root  # list_builds() has a parameter of that name


def read_build(prefix: Path) -> dict | None:
    """The iomatrix-build.json of a finished build, plus "prefix" and "python"."""
    try:
        info = json.loads((prefix / BUILD_INFO).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    info["prefix"] = str(prefix)
    info["python"] = str(prefix / "bin" / "python3")
    return info


def list_builds(cache_root: Path | None = None) -> list[dict]:
    """Every finished build in the cache, oldest version first."""
    root = Path(cache_root) if cache_root is not None else _cache_root()
    pythons = root / "pythons"
    if not pythons.is_dir():
        return []
    builds = []
    for prefix in pythons.iterdir():
        if not VERSION_RE.fullmatch(prefix.name) or not prefix.is_dir():
            continue
        info = read_build(prefix)
        if info is not None:
            builds.append(info)
    return sorted(builds, key=lambda info: parse_version(Path(info["prefix"]).name).sort_key)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def dsc_sha256(tarball: Path) -> tuple[str | None, Path | None]:
    """The tarball's sha256 from a Debian .dsc beside it, and that .dsc."""
    source = tarball.name.split("_", 1)[0]
    for dsc in sorted(tarball.parent.glob(f"{source}_*.dsc")):
        in_checksums = False
        for line in dsc.read_text(errors="replace").splitlines():
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
            raise ProvisionError(
                f"checksum mismatch for {tarball}: expected sha256 {digest.lower()}"
                f" (from {origin}), got {actual}"
            )
    return actual


def inspect_tarball(tarball: Path) -> str:
    """The tarball's single top directory, after reading it through once."""
    tops = set()
    try:
        with tarfile.open(tarball, "r:*") as tar:
            names = [member.name for member in tar]
    except (tarfile.TarError, lzma.LZMAError, zlib.error, EOFError, OSError) as exc:
        raise ProvisionError(f"{tarball} is not a readable source tarball: {exc}") from exc
    for name in names:
        parts = Path(name).parts
        if not parts or name.startswith("/") or ".." in parts:
            raise ProvisionError(f"{tarball} has an unsafe member {name!r}")
        tops.add(parts[0])
    if len(tops) != 1:
        raise ProvisionError(f"{tarball} is not a CPython source tarball: top entries {sorted(tops)[:5]}")
    top = tops.pop()
    if f"{top}/configure" not in names:
        raise ProvisionError(f"{tarball} is not a CPython source tarball: no {top}/configure")
    return top


def download(url: str, dest: Path, say: Say, timeout: float = DOWNLOAD_TIMEOUT) -> Path:
    """Fetch url to dest via dest.part; nothing is left behind on failure."""
    new_dirs = [d for d in (dest.parent, *dest.parent.parents) if not d.exists()]
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + f".part-{os.getpid()}")
    say(f"downloading {url} (timeout {timeout:g}s)")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(part, "wb") as out:
            shutil.copyfileobj(response, out, 1 << 20)
        os.replace(part, dest)
    except (OSError, ValueError) as exc:  # URLError and socket.timeout are OSErrors
        part.unlink(missing_ok=True)
        for directory in new_dirs:  # deepest first: leave the cache as it was
            try:
                directory.rmdir()
            except OSError:
                break
        raise ProvisionError(
            f"download of {url} failed: {getattr(exc, 'reason', exc)}. This machine may be"
            " offline: pass --tarball PATH, put the tarball in the cache's tarballs/"
            " directory, or use --debian-source (see --help)"
        ) from exc
    finally:
        part.unlink(missing_ok=True)
    return dest


def _apt_source_versions(package: str) -> list[str]:
    proc = subprocess.run(
        ["apt-cache", "showsrc", package], capture_output=True, text=True, timeout=60
    )
    return [line.split(":", 1)[1].strip() for line in proc.stdout.splitlines() if line.startswith("Version:")]


def _upstream_of(debian_version: str) -> str:
    version = debian_version.split(":", 1)[-1]
    return version.rsplit("-", 1)[0] if "-" in version else version


def _apt_source_mirrors() -> list[str]:
    proc = subprocess.run(
        ["apt-get", "indextargets", "--format", "$(REPO_URI)", "Created-By: Sources"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return list(dict.fromkeys(uri if uri.endswith("/") else uri + "/" for uri in proc.stdout.split()))


def debian_fetch(version: Version, tarballs: Path, say: Say) -> Path:
    """Get Debian's orig tarball of version into tarballs/ with apt."""
    if shutil.which("apt-get") is None:
        raise ProvisionError("--debian-source needs apt-get, which is not installed here")
    tarballs.mkdir(parents=True, exist_ok=True)
    package, upstream = version.debian_source, version.debian_upstream
    dest = tarballs / f"{package}_{upstream}.orig.tar.xz"
    listed = [v for v in _apt_source_versions(package) if _upstream_of(v) == upstream]
    tried = []
    if listed:
        cmd = ["apt-get", "source", "--download-only", f"{package}={listed[-1]}"]
        say(f"in {tarballs}: {' '.join(cmd)}")
        proc = subprocess.run(cmd, cwd=tarballs, capture_output=True, text=True, timeout=APT_TIMEOUT)
        # Only the orig tarball and the .dsc (its checksum) are wanted.
        for extra in tarballs.glob(f"{package}_{upstream}-*.debian.tar.*"):
            extra.unlink()
        if proc.returncode == 0 and dest.exists():
            return dest
        tried.append(f"{' '.join(cmd)}: {_tail(proc.stderr)}")
    # The pool keeps versions its index no longer lists (and may not yet hold
    # ones it does): ask for the orig tarball by its pool path.
    helper = Path("/usr/lib/apt/apt-helper")
    for mirror in _apt_source_mirrors() if helper.exists() else []:
        pool = f"{mirror}pool/main/{package[0]}/{package}/"
        # The first Debian revision's .dsc, when the pool has it, carries the
        # orig tarball's sha256 (checked by resolve_tarball).
        dsc = f"{package}_{upstream}-1.dsc"
        if _apt_helper_fetch(helper, pool + dsc, tarballs / dsc, say) is None:
            say(f"note: {dest.name} is not in the apt index; its sha256 is checked against {dsc}")
        else:
            say(f"note: {dest.name} is not in the apt index and has no {dsc}: unverified")
        error = _apt_helper_fetch(helper, pool + dest.name, dest, say)
        if error is None:
            return dest
        tried.append(f"{pool + dest.name}: {error}")
    if not tried:
        raise ProvisionError(
            f"no deb-src entry lists {package} (apt-cache showsrc {package}); add one and run"
            " apt-get update (see --help)"
        )
    raise ProvisionError(f"could not fetch {dest.name} with apt:\n  " + "\n  ".join(tried))


def _apt_helper_fetch(helper: Path, url: str, dest: Path, say: Say) -> str | None:
    """Download url to dest with apt's downloader; the error, or None if it worked."""
    part = dest.with_name(dest.name + f".part-{os.getpid()}")
    say(f"{helper} download-file {url} {dest.name}")
    try:
        proc = subprocess.run(
            [str(helper), "download-file", url, str(part)],
            capture_output=True, text=True, timeout=APT_TIMEOUT,
        )
        if proc.returncode == 0 and part.exists():
            os.replace(part, dest)
            return None
        return _tail(proc.stdout + proc.stderr)
    finally:
        part.unlink(missing_ok=True)


def _tail(text: str, lines: int = 5) -> str:
    return " | ".join(text.strip().splitlines()[-lines:]) or "(no output)"


@dataclass
class Tarball:
    path: Path
    sha256: str
    url: str | None  # set when it was downloaded by this call
    downloaded: bool


def resolve_tarball(
    version: Version,
    root: Path,
    *,
    tarball: Path | None = None,
    url: str | None = None,
    sha256: str | None = None,
    debian_source: bool = False,
    say: Say = print,
) -> Tarball:
    """Find or fetch the source tarball and check it; see the module docstring."""
    tarballs = root / "tarballs"
    downloaded = False
    if tarball is not None:
        path = Path(tarball).absolute()
        if not path.is_file():
            raise UsageError(f"--tarball {tarball}: no such file")
    elif url is not None:
        name = url.rstrip("/").rsplit("/", 1)[-1] or f"Python-{version.python_version}.tar.xz"
        path = download(url, tarballs / name, say)
        downloaded = True
    else:
        found = [tarballs / name for name in version.tarball_names if (tarballs / name).is_file()]
        if found:
            path = found[0]
        elif debian_source:
            path = debian_fetch(version, tarballs, say)
            downloaded = True
        else:
            url = version.official_url
            path = download(url, tarballs / version.tarball_names[0], say)
            downloaded = True
    try:
        digest = check_sha256(path, sha256)
        inspect_tarball(path)
    except ProvisionError:
        if downloaded:  # leave the cache as it was
            path.unlink(missing_ok=True)
        raise
    return Tarball(path=path, sha256=digest, url=url, downloaded=downloaded)


def missing_modules(log_text: str) -> list[str]:
    """The stdlib extension modules that make reported as not built."""
    missing: dict[str, None] = {}
    in_list = False
    for line in log_text.splitlines():
        if line.strip() in MODULE_LIST_HEADINGS:
            in_list = True
        elif in_list and line.strip() and not line.startswith("To find"):
            missing.update(dict.fromkeys(line.split()))
        else:
            in_list = False
    return list(missing)


def _elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"


def _new_log(logs: Path, version: Version) -> Path:
    logs.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1, 1000):
        log = logs / (f"{version}-{stamp}.log" if n == 1 else f"{version}-{stamp}-{n}.log")
        try:
            with open(log, "x"):
                return log
        except FileExistsError:
            continue
    raise ProvisionError(f"cannot create a log file in {logs}")


def _clean_env() -> dict[str, str]:
    # Settings meant for the host's interpreter would leak into the new one
    # that make install runs (ensurepip, compileall).
    env = dict(os.environ)
    for name in ("PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONNOUSERSITE"):
        env.pop(name, None)
    return env


def _remove_stale_partials(pythons: Path, version: Version, say: Say) -> None:
    for partial in pythons.glob(f".{version}.partial-*"):
        pid = partial.name.rsplit("-", 1)[-1]
        if pid.isdigit() and _alive(int(pid)):
            continue
        say(f"removing {partial}, left by an earlier build that was killed")
        shutil.rmtree(partial, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stop_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


class _Builder:
    """The stages of one build, each logged to one file."""

    def __init__(self, version: Version, log: Path, say: Say):
        self.version = version
        self.log = log
        self.say = say
        self.start = time.monotonic()
        self.stage_seconds: dict[str, float] = {}

    def write(self, text: str) -> None:
        with open(self.log, "a") as f:
            f.write(text)

    def stage(self, name: str, func: Callable[[], None]) -> None:
        begun = time.monotonic()
        self.say(f"{name} ... (total {_elapsed(begun - self.start)})")
        self.write(f"\n=== {name} ===\n")
        try:
            func()
        except StageError:
            raise
        except (OSError, ValueError, KeyError, subprocess.SubprocessError, ProvisionError) as exc:
            self.write(f"{exc}\n")
            raise StageError(name, self.log, str(exc)) from exc
        self.stage_seconds[name] = round(time.monotonic() - begun, 3)
        self.say(f"{name} done in {_elapsed(self.stage_seconds[name])}")

    def run(self, name: str, cmd: list[str], cwd: Path) -> None:
        def go() -> None:
            self.write(f"$ cd {cwd} && {' '.join(cmd)}\n")
            begun = time.monotonic()
            with open(self.log, "ab") as out:
                # A session of its own, so that an interrupt can stop make
                # and every compiler it started.
                proc = subprocess.Popen(
                    cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                    env=_clean_env(), start_new_session=True,
                )
                try:
                    while True:
                        try:
                            code = proc.wait(timeout=HEARTBEAT_SECONDS)
                            break
                        except subprocess.TimeoutExpired:
                            now = time.monotonic()
                            self.say(
                                f"{name}: still running, {_elapsed(now - begun)} in this stage,"
                                f" {_elapsed(now - self.start)} in all (log: {self.log})"
                            )
                finally:
                    if proc.poll() is None:  # interrupted: do not leave make running
                        _stop_group(proc)
            if code != 0:
                raise StageError(name, self.log, f"{cmd[0]} exited with status {code}")

        self.stage(name, go)


def build(
    version: Version | str,
    *,
    root: Path | None = None,
    tarball: Path | str | None = None,
    url: str | None = None,
    sha256: str | None = None,
    optimized: bool = False,
    jobs: int | None = None,
    debian_source: bool = False,
    say: Say | None = None,
) -> Path:
    """Build version into root/pythons/<version>/ unless it is there; return that path."""
    version = parse_version(version) if isinstance(version, str) else version
    if say is None:
        def say(text: str) -> None:
            print(f"[{version}] {text}", flush=True)
    root = Path(root).absolute() if root is not None else cache_root()
    pythons = root / "pythons"
    final = pythons / version.text
    if (final / BUILD_INFO).exists():
        say(f"{version} already built at {final}")
        return final
    if final.exists():
        raise ProvisionError(f"{final} exists but holds no {BUILD_INFO}: remove it to build {version}")
    if sha256 is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
        raise UsageError(f"--sha256 {sha256!r} is not a sha256 hex digest")
    jobs = jobs or os.cpu_count() or 1

    source = resolve_tarball(
        version, root, tarball=tarball, url=url, sha256=sha256, debian_source=debian_source, say=say
    )
    say(f"tarball {source.path} (sha256 {source.sha256})")

    pythons.mkdir(parents=True, exist_ok=True)
    _remove_stale_partials(pythons, version, say)
    log = _new_log(pythons / "logs", version)
    say(f"building; log: {log}")
    configure_args = [f"--prefix={final}"]
    configure_args += FREE_THREADED_ARGS if version.free_threaded else []
    configure_args += OPTIMIZED_ARGS if optimized else []
    partial = pythons / f".{version}.partial-{os.getpid()}"
    stage_dir = partial / "stage"
    staged = stage_dir / str(final).lstrip(os.sep)
    builder = _Builder(version, log, say)
    builder.write(
        f"iomatrix provision {version}\ntarball: {source.path}\nsha256: {source.sha256}\n"
        f"configure: {configure_args}\njobs: {jobs}\n"
    )
    src: list[Path] = []
    probe: dict = {}

    def unpack() -> None:
        with tarfile.open(source.path, "r:*") as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(partial / "src", filter="data")
            else:  # member names were checked by inspect_tarball
                tar.extractall(partial / "src")
        src.append(next((partial / "src").iterdir()))

    def check() -> None:
        bin_dir = staged / "bin"
        python3 = bin_dir / "python3"
        if not python3.exists():
            # Not every install target links bin/python3; the contract wants it.
            for name in (f"python{version.series}t", f"python{version.series}"):
                if (bin_dir / name).exists():
                    python3.symlink_to(name)
                    break
            else:
                raise ProvisionError(f"make install left no python3 in {bin_dir}")
        proc = subprocess.run(
            [str(python3), "-c", PROBE], capture_output=True, text=True, timeout=120, env=_clean_env()
        )
        builder.write(f"$ {python3} -c PROBE\n{proc.stdout}{proc.stderr}")
        if proc.returncode != 0:
            raise ProvisionError(f"the new interpreter does not start: {_tail(proc.stderr)}")
        probe.update(json.loads(proc.stdout))
        if probe["python_version"] != version.python_version:
            raise ProvisionError(
                f"the tarball built Python {probe['python_version']}, not {version.python_version}"
            )
        if probe["free_threaded"] != version.free_threaded:
            kind = "free-threaded" if probe["free_threaded"] else "with the GIL"
            raise ProvisionError(f"the build is {kind}, which {version} is not")

    partial.mkdir()
    try:
        builder.stage("unpack", unpack)
        builder.run("configure", [str(src[0] / "configure"), *configure_args], src[0])
        builder.run("make", ["make", f"-j{jobs}"], src[0])
        builder.run("install", ["make", "install", f"DESTDIR={stage_dir}"], src[0])
        builder.stage("check", check)
        missing = missing_modules(log.read_text(errors="replace"))
        if missing:
            say(f"warning: built without {', '.join(missing)} (missing build dependencies; see the log)")
        info = {
            "version": version.text,
            "python_version": version.python_version,
            "free_threaded": version.free_threaded,
            "configure_args": configure_args,
            "optimized": optimized,
            "tarball": source.url or str(source.path),
            "tarball_path": str(source.path),
            "sha256": source.sha256,
            "build_seconds": round(time.monotonic() - builder.start, 3),
            "stage_seconds": builder.stage_seconds,
            "jobs": jobs,
            "built_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "log": str(log),
            "sys_version": probe["sys_version"],
            "missing_modules": missing,
        }
        (staged / BUILD_INFO).write_text(json.dumps(info, indent=2) + "\n")
        if final.exists():
            raise ProvisionError(f"{final} appeared while building (another provision run?)")
        os.rename(staged, final)
    except BaseException as exc:
        shutil.rmtree(partial, ignore_errors=True)
        if isinstance(exc, KeyboardInterrupt):
            builder.write("\n=== interrupted ===\n")
            say(f"interrupted; removed {partial}; log kept: {log}")
        elif not isinstance(exc, StageError):
            builder.write(f"\n=== failed: {exc} ===\n")
            if isinstance(exc, (ProvisionError, OSError)):
                raise ProvisionError(f"{exc}; see the log: {log}") from exc
        raise
    shutil.rmtree(partial, ignore_errors=True)
    say(f"built {version} in {_elapsed(info['build_seconds'])} at {final}: {probe['sys_version']}")
    return final


def uv_install(
    versions: list[Version], http_timeout: float = UV_TIMEOUT, timeout: float = UV_INSTALL_TIMEOUT
) -> None:
    """Run `uv python install VERSION` for each version, failing fast when offline."""
    uv = shutil.which("uv")
    if uv is None:
        raise ProvisionError(
            "--uv: uv is not installed (pip install uv); offline, build from source"
            " instead (drop --uv)"
        )
    env = _clean_env()
    # Without these an offline uv retries for a long while before it gives up.
    env.setdefault("UV_HTTP_TIMEOUT", str(int(http_timeout)))
    env.setdefault("UV_HTTP_RETRIES", "0")
    for version in versions:
        cmd = [uv, "python", "install", version.text]
        print(f"[{version}] {' '.join(cmd)}", flush=True)
        try:
            proc = subprocess.run(
                cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            raise ProvisionError(
                f"uv python install {version} gave no result within {exc.timeout:g}s; the"
                " machine may be offline: build from source instead (drop --uv)"
            ) from exc
        sys.stdout.write(proc.stdout)
        if proc.returncode != 0:
            raise ProvisionError(
                f"uv python install {version} failed (exit {proc.returncode}): {_tail(proc.stderr)};"
                " offline? build from source instead (drop --uv)"
            )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nox -s provision --",
        description="Build CPython from source into the iomatrix cache (see scripts/provision.py).",
        epilog=(
            "Tarballs are looked up in the cache's tarballs/ directory before any download;"
            " --debian-source fetches Debian's orig tarball with apt-get. Online, "
            "`nox --download-python always` or `uv python install 3.14` (--uv) provide"
            " python-build-standalone interpreters instead of building."
        ),
    )
    parser.add_argument("versions", nargs="+", metavar="VERSION", help="e.g. 3.14.7, 3.14.7t, 3.15.0rc2")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--tarball", type=Path, metavar="PATH", help="source tarball to build from")
    source.add_argument("--url", help="download the source tarball from URL")
    source.add_argument("--uv", action="store_true", help="run `uv python install VERSION` instead")
    parser.add_argument("--sha256", metavar="HEX", help="expected sha256 of the tarball")
    parser.add_argument(
        "--debian-source", action="store_true",
        help="fetch Debian's orig tarball with apt-get when tarballs/ lacks it",
    )
    parser.add_argument(
        "--optimized", action="store_true", help=f"configure {' '.join(OPTIMIZED_ARGS)} (slow)"
    )
    parser.add_argument("--jobs", type=int, metavar="N", help="make -jN (default: CPU count)")
    return parser


def main(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        versions = [parse_version(text) for text in args.versions]
        single = {"--tarball": args.tarball, "--url": args.url, "--sha256": args.sha256}
        for option, value in single.items():
            if value is not None and len(versions) > 1:
                raise UsageError(f"{option} applies to one VERSION, not {len(versions)}")
        if args.jobs is not None and args.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        if args.uv:
            uv_install(versions)
            return 0
        failed = []
        for version in versions:
            try:
                build(
                    version, tarball=args.tarball, url=args.url, sha256=args.sha256,
                    optimized=args.optimized, jobs=args.jobs, debian_source=args.debian_source,
                )
            except UsageError:
                raise
            except ProvisionError as exc:
                print(f"error: [{version}] {exc}", file=sys.stderr, flush=True)
                failed.append(version.text)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    except ProvisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    if failed:
        print(f"error: failed to build {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
