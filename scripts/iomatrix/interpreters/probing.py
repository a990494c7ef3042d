"""What an interpreter is and how it was built: the probe each candidate is run with.

``probe`` runs ``PROBE_SCRIPT`` (2.7-compatible) under an executable and reads back its
version, implementation, free-threading, linkage and build variables; ``probe_all`` probes
side by side (a hung interpreter costs one timeout) and keeps answers in a cache keyed by
the binary's identity. ``build_facts`` reads how a probed CPython was built from those
variables: optimisation flags, shared or static libpython, PGO, LTO, frame pointers, JIT,
and the recipe, the name of the part of these that changes speed (``shared-O3``,
``static-O3-pgo-lto``). What cannot be read (PyPy, a CPython without build variables) is
null, never guessed. Finding the candidates and labelling them is discovery.py's, which
re-exports these names.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from iomatrix import cli, procs
from iomatrix.interpreters import cache as build_cache
from iomatrix.paths import PROBE_CACHE_FILE

# Every nox command discovers (the session list depends on it), so a hung interpreter
# must cost little: probes run side by side, each killed with its group after this long.
# A healthy interpreter answers in well under a second here (PyPy included).
PROBE_TIMEOUT_SECONDS = 10

# Runs under every interpreter (2.7 included): what it is and how it was built.
PROBE_SCRIPT = r"""
import json, platform, re, sys, sysconfig
def var(name):
    try:
        return sysconfig.get_config_var(name)
    except Exception:
        return None
def linkage():
    # What the dynamic linker loaded into this very process: a libpython*.so mapping means
    # the binary links libpython (its dynamic section names it). sysconfig's
    # Py_ENABLE_SHARED only says how the build's own Makefile was configured (Debian's
    # /usr/bin/python3.11 says shared and links no libpython). Without /proc: unknown.
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except (IOError, OSError):
        return None
    return "shared" if re.search(r"/libpython[0-9.]+[a-z]*\.so", maps) else "static"
gil = getattr(sys, "_is_gil_enabled", None)
print(json.dumps({
    "version": platform.python_version(),
    "version_info": list(sys.version_info[:3]),
    "implementation": platform.python_implementation().lower(),
    "executable": sys.executable,
    "sys_version": sys.version,
    "free_threaded": bool(var("Py_GIL_DISABLED")),
    "gil_enabled": gil() if gil else True,
    "debug": bool(var("Py_DEBUG")) or hasattr(sys, "gettotalrefcount"),
    "linkage": linkage(),
    "shared": {"shared": True, "static": False}.get(linkage()),
    "configure_args": var("CONFIG_ARGS") or "",
    "optimized": "--enable-optimizations" in (var("CONFIG_ARGS") or ""),
    "lto": "--with-lto" in (var("CONFIG_ARGS") or ""),
    "compiler": platform.python_compiler(),
    "sysconfig": dict((name, var(name)) for name in (
        "CONFIG_ARGS", "OPT", "CFLAGS", "PY_CFLAGS_NODIST", "CONFIGURE_CFLAGS_NODIST",
        "Py_ENABLE_SHARED", "Py_JIT")),
}))
"""

# -- the answer is untrusted --------------------------------------------------------------
# What an interpreter says about itself decides its label, the order of the session list, the
# versions provision plans and what the manifest and the pages state. Any executable can
# print anything, so an answer is checked before it is used: its keys are the probe's own,
# its version has the form platform.python_version() gives (3.13.0, 3.14.0a6+, 2.7.18) and
# agrees with version_info, whose three integers are bounded, and every string is bounded
# and plain (printable; a line break only where CPython puts one, in sys.version). An
# answer that fails is the interpreter's error: discovery skips it with one warning line
# (a declared one stays listed with that error), never every session.
#
# The check is plain Python, not a pydantic model like storing/schema.py's: it runs in
# nox's own process, which has the standard library only (the bench side never imports
# pydantic; store.schema_module). The bounds are stated once, here.
VERSION_PATTERN = re.compile(r"(?P<major>[0-9]{1,3})\.(?P<minor>[0-9]{1,3})\.(?P<micro>[0-9]{1,4})"
                             r"(?:(?:a|b|rc)[0-9]{1,3})?\+?")
VERSION_INFO_BOUNDS = ((2, 3), (0, 99), (0, 999))   # major, minor, micro
IMPLEMENTATION_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,31}")   # it reaches labels: pypy3.10
TEXT_LIMITS = {"version": 32, "executable": 4096, "sys_version": 512, "compiler": 512,
               "configure_args": 16384}
MAX_SYSCONFIG_TEXT = 16384
MAX_SYSCONFIG_NUMBER = 2 ** 31
BOOLEAN_KEYS = ("free_threaded", "gil_enabled", "debug", "optimized", "lto")
SYSCONFIG_KEYS = ("CONFIG_ARGS", "OPT", "CFLAGS", "PY_CFLAGS_NODIST", "CONFIGURE_CFLAGS_NODIST",
                  "Py_ENABLE_SHARED", "Py_JIT")
ANSWER_KEYS = frozenset({"version", "version_info", "implementation", "executable",
                         "sys_version", "linkage", "shared", "sysconfig", *TEXT_LIMITS,
                         *BOOLEAN_KEYS})
# The probe prints one line of a few kB; the cache holds one such answer per binary.
MAX_ANSWER_CHARACTERS = 1 << 17
MAX_CACHE_BYTES = 1 << 22


def _shown(value) -> str:
    text = repr(value)
    return cli.one_line(text[:40] + ("..." if len(text) > 40 else ""))


def _text_problem(value, limit: int, breaks: str = "\t") -> str | None:
    if not isinstance(value, str):
        return f"{_shown(value)} is not a string"
    if len(value) > limit:
        return f"{len(value)} characters; at most {limit}"
    if not all(c.isprintable() or c in breaks for c in value):
        return f"{_shown(value)} holds a control or format character"
    return None


def answer_problem(info) -> str | None:
    """What makes ``info`` no valid probe answer ("field: why"), or None when it is one."""
    if not isinstance(info, dict):
        return "not an object"
    unknown = sorted(str(key) for key in info if key not in ANSWER_KEYS)
    if unknown:
        return f"unknown key(s) {_shown(', '.join(unknown))}"
    version_info = info.get("version_info")
    if not (isinstance(version_info, list) and len(version_info) == 3 and all(
            type(part) is int for part in version_info)):
        return f"version_info: {_shown(version_info)} is not three integers"
    for name, part, (low, high) in zip(("major", "minor", "micro"), version_info,
                                       VERSION_INFO_BOUNDS):
        if not low <= part <= high:
            return f"version_info: {name} {part} is not {low} to {high}"
    version = info.get("version")
    problem = _text_problem(version, TEXT_LIMITS["version"], breaks="")
    match = VERSION_PATTERN.fullmatch(version) if problem is None else None
    if match is None:
        return f"version: {problem or _shown(version) + ' is not a version like 3.13.0'}"
    if [int(match[name]) for name in ("major", "minor", "micro")] != version_info:
        return f"version: {version} disagrees with version_info {version_info}"
    implementation = info.get("implementation")
    if not isinstance(implementation, str) or not IMPLEMENTATION_PATTERN.fullmatch(implementation):
        return f"implementation: {_shown(implementation)} is not a lower-case name"
    for key in BOOLEAN_KEYS:
        if key in info and type(info[key]) is not bool:
            return f"{key}: {_shown(info[key])} is not true or false"
    if info.get("shared") is not None and type(info["shared"]) is not bool:
        return f"shared: {_shown(info['shared'])} is not true, false or null"
    if info.get("linkage") not in (None, "shared", "static"):
        return f"linkage: {_shown(info['linkage'])} is not shared, static or null"
    for key, limit in TEXT_LIMITS.items():
        if key != "version" and info.get(key) is not None:
            problem = _text_problem(info[key], limit, breaks="\t\n" if key == "sys_version"
                                    else "\t")
            if problem is not None:
                return f"{key}: {problem}"
    raw = info.get("sysconfig")
    if raw is None:
        return None
    if not isinstance(raw, dict) or not set(raw) <= set(SYSCONFIG_KEYS):
        return "sysconfig: not an object of the probe's build variables"
    for name, value in raw.items():
        if value is None or type(value) is bool or (
                type(value) is int and abs(value) <= MAX_SYSCONFIG_NUMBER):
            continue
        problem = _text_problem(value, MAX_SYSCONFIG_TEXT)
        if problem is not None:
            return f"sysconfig {name}: {problem}"
    return None


def read_regular_file(path, limit: int) -> bytes:
    """The bytes of ``path`` when it is a regular file (a symlink to one is followed) of at
    most ``limit`` bytes; OSError naming why otherwise. Opened without blocking, so a FIFO
    or a device there is refused, not waited on."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if st.st_size > limit:
            raise OSError(errno.EFBIG, f"{st.st_size:,} bytes; at most {limit:,} are read")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"more than {limit:,} bytes; at most {limit:,} are read")
    return data


# The build facts every manifest entry carries (shared interface, issue 25).
BUILD_FACT_KEYS = ("opt", "cflags", "pgo", "frame_pointers", "jit", "recipe")
FRAME_POINTER_FLAGS = ("-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer")
# A distribution's build scripts apply their own flags and may run PGO and LTO outside
# configure's arguments (Debian does): its recipe is named by the distribution.
DISTRIBUTION_SOURCES = ("debian",)


def _flag_words(*texts) -> list[str]:
    return " ".join(text for text in texts if isinstance(text, str)).split()


def linkage_text(info: dict) -> str:
    """Shared or static libpython: read from the running binary (the probe's ``linkage``);
    runs made before it recorded only sysconfig's Py_ENABLE_SHARED, which a distribution's
    build can contradict (Debian's python3.11 says shared and links no libpython), so that
    is named as sysconfig's word; nothing known is "unknown"."""
    if info.get("linkage") in ("shared", "static"):
        return info["linkage"]
    if info.get("shared") is not None:
        return ("shared" if info["shared"] else "static") + " (sysconfig's word)"
    return "unknown"


def build_facts(info: dict, source: str) -> dict:
    """The build facts of a probed interpreter: BUILD_FACT_KEYS, each None when unreadable.

    info["sysconfig"] holds the raw build variables the probe read. The recipe names
    what changes speed: libpython shared or static (or the distribution's build), the
    optimisation level the compiler ends up with (the last -O of the flags), then
    -pgo, -lto, -fp (frame pointers) and -jit when present: ``shared-O3``,
    ``static-O3-pgo-lto``, ``shared-O3-fp``, ``debian-O2``. Free-threading is not
    part of it: the label says it (3.14t).
    """
    raw = info.get("sysconfig") or {}
    facts = dict.fromkeys(BUILD_FACT_KEYS)
    if info.get("implementation") != "cpython" or not (raw.get("CONFIG_ARGS") is not None
                                                       and raw.get("OPT")):
        return facts  # PyPy's sysconfig describes no build of its own; a bare CPython nothing
    config_args = raw["CONFIG_ARGS"]
    facts["opt"] = raw["OPT"]
    facts["cflags"] = raw.get("CFLAGS")
    # CFLAGS holds OPT; the _NODIST flags come after it on CPython's compile lines.
    words = _flag_words(raw.get("CFLAGS") or raw["OPT"], raw.get("PY_CFLAGS_NODIST"),
                        raw.get("CONFIGURE_CFLAGS_NODIST"))
    levels = [word for word in words if re.fullmatch(r"-O[0-9sgz]?|-Ofast", word)]
    level = "O" + ((levels[-1][2:] or "1") if levels else "0")  # a bare -O is -O1
    distribution = source in DISTRIBUTION_SOURCES
    if not distribution:
        facts["pgo"] = "--enable-optimizations" in config_args or "-fprofile-use" in words
        lto = "--with-lto" in config_args or any(w.startswith("-flto") for w in words)
    else:
        lto = False
    facts["frame_pointers"] = any(flag in words for flag in FRAME_POINTER_FLAGS)
    jit_configured = re.search(r"--enable-experimental-jit(=yes|=yes-off)?'", config_args)
    facts["jit"] = bool(raw.get("Py_JIT")) or "-D_Py_JIT" in words or bool(jit_configured)
    # libpython linked or not, from the binary (the probe's linkage), not from sysconfig
    linkage = source if distribution else (info.get("linkage") or "unknown")
    parts = [linkage, level]
    parts += ["pgo"] if facts["pgo"] else []
    parts += ["lto"] if lto else []
    parts += ["fp"] if facts["frame_pointers"] else []
    parts += ["jit"] if facts["jit"] else []
    facts["recipe"] = "-".join(parts)
    return facts


# What the probe said of each interpreter, keyed by its binary's identity (path, inode, size,
# change time): nox imports the noxfile, and so discovers every interpreter, on every call, and
# probing 15 interpreters took about 2 s here. A rebuilt or replaced binary has another key; a
# failed probe is never kept. The file is a cache: unreadable, it is ignored and rewritten. It
# lives with nox's own environments (`rm -rf .nox` resets both), never in the build cache.
PROBE_CACHE_ENV = "IOMATRIX_PROBE_CACHE"   # another file, for tests


def _binary_key(executable: str) -> str | None:
    """The binary's identity and the probe script's: a changed probe asks every binary again."""
    try:
        real = os.path.realpath(executable)
        st = os.stat(real)
    except OSError:
        return None
    script = hashlib.sha256(PROBE_SCRIPT.encode()).hexdigest()[:16]
    return f"{real}:{st.st_ino}:{st.st_size}:{st.st_ctime_ns}:{st.st_mtime_ns}:{script}"


def _probe_cache_path() -> Path:
    return Path(os.environ.get(PROBE_CACHE_ENV) or PROBE_CACHE_FILE)


def _read_probe_cache() -> dict:
    """The cache's entries, or {}: it is read as the build cache's files are (a regular file
    of at most MAX_CACHE_BYTES, not nested too deep: a FIFO there must not block every nox
    command; interpreters.cache.read_json), and each entry is
    checked as a fresh answer is when it is used (``probe``)."""
    try:
        cache = build_cache.read_json(_probe_cache_path(), MAX_CACHE_BYTES)
    except build_cache.BadCacheEntry:
        return {}
    return cache if isinstance(cache, dict) else {}


def _write_probe_cache(cache: dict) -> None:
    path = _probe_cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
        partial.write_text(json.dumps(cache, sort_keys=True), encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        pass  # a cache that cannot be written only costs the next call its probes


def probe(executable: str, cache: dict | None = None) -> dict:
    """Run the probe script; raise RuntimeError naming the executable when it is not Python.

    ``cache``: {binary key: info} of earlier probes (``probe_all`` reads and writes it)."""
    if not os.path.exists(executable):
        raise RuntimeError(f"{executable}: no such file")
    if not os.access(executable, os.X_OK):
        raise RuntimeError(f"{executable}: not executable")
    key = _binary_key(executable)
    shown = cli.one_line(executable)
    if cache is not None and key in cache and answer_problem(cache[key]) is None:
        return dict(cache[key])   # an entry that is not a valid answer is asked again
    try:
        # bytes: an interpreter's output is not trusted to be UTF-8 either
        proc = procs.run([executable, "-c", PROBE_SCRIPT], timeout=PROBE_TIMEOUT_SECONDS,
                         text=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{shown}: did not answer within {PROBE_TIMEOUT_SECONDS} s")
    except OSError as exc:
        raise RuntimeError(f"{shown}: cannot run: {exc.strerror}")
    stdout = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        tail = (proc.stderr.decode("utf-8", "replace") or stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"{shown}: does not run as Python (exit {proc.returncode}): "
                           + (cli.one_line(" / ".join(tail))[:300] or "no output"))
    lines = stdout.strip().splitlines()
    try:
        if not lines or len(lines[-1]) > MAX_ANSWER_CHARACTERS:
            raise ValueError("no answer line, or one longer than any probe answer")
        info = json.loads(lines[-1])
    except (ValueError, RecursionError):
        info = None
    if not isinstance(info, dict) or not {"version_info", "implementation"} <= info.keys():
        raise RuntimeError(f"{shown}: does not behave as Python (unexpected probe output)")
    problem = answer_problem(info)
    if problem is not None:
        raise RuntimeError(f"{shown}: its probe answer is not what a Python reports: {problem}")
    if cache is not None and key is not None:
        cache[key] = dict(info)
    return info


def probe_all(executables: list[str]) -> dict:
    """{executable: info, or the RuntimeError saying why it is unusable}, probed side by side
    so that a hung interpreter delays discovery by one timeout, not one per interpreter;
    interpreters probed before with the same binary are answered from the probe cache."""
    cache = _read_probe_cache()
    known = dict(cache)

    def attempt(executable):
        try:
            return probe(executable, cache)
        except RuntimeError as exc:
            return exc
    with ThreadPoolExecutor(max_workers=8) as pool:
        found = dict(zip(executables, pool.map(attempt, executables)))
    if cache != known:
        _write_probe_cache(cache)
    return found
