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

import hashlib
import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from iomatrix import procs
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
    try:
        with open(_probe_cache_path(), encoding="utf-8") as f:
            cache = json.load(f)
    except (OSError, ValueError):
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
    if cache is not None and key in cache and isinstance(cache[key], dict):
        return dict(cache[key])
    try:
        proc = procs.run([executable, "-c", PROBE_SCRIPT], timeout=PROBE_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{executable}: did not answer within {PROBE_TIMEOUT_SECONDS} s")
    except OSError as exc:
        raise RuntimeError(f"{executable}: cannot run: {exc.strerror}")
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"{executable}: does not run as Python (exit {proc.returncode}): "
                           + " / ".join(tail))
    try:
        info = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        info = None
    if not isinstance(info, dict) or not {"version_info", "implementation"} <= info.keys():
        raise RuntimeError(f"{executable}: does not behave as Python (unexpected probe output)")
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
