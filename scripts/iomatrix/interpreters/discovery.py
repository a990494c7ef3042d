"""Find the Python interpreters of this machine and give each a stable label.

Sources, in priority order (the first one to claim a label keeps the plain label):

1. declared by the user: ``[interpreters]`` in ``iomatrix.toml`` and
   ``IOMATRIX_PYTHONS="label=/path;label2=/path"``; the label is used verbatim;
2. pyenv builds under ``$PYENV_ROOT/versions`` (or ``pyenv root``), shims or not;
3. builds made by ``nox -s provision`` in the iomatrix cache;
4. uv-managed interpreters, when ``uv`` is installed;
5. ``pythonX.Y``, ``pythonX.Yt`` and ``pypy3*`` on PATH;
6. Debian's ``/usr/bin/python3.X``.

Labels: ``X.Y`` for CPython, ``X.Yt`` for a free-threaded build, ``pypyX.Y``
for PyPy (its language version). A second build of a label already taken gets
the source as a suffix: ``3.11-debian``, ``3.13-uv``, ``3.12-path``. A build that
``nox -s provision`` made with another recipe than the lineage's is named by its
release and that recipe: ``3.13.15-pgo``, ``3.13.15-static``. Two paths
to one binary (symlinks) are one interpreter. Every candidate is run once with a
small probe script; one that does not run is reported and skipped, except a
declared one, which stays in the list with its error so the run records it.

The probe also reads how each interpreter was built (``build_facts``): optimisation
flags, shared or static libpython, PGO, LTO, frame pointers, JIT, and the recipe,
the name of the part of these that changes speed (``shared-O3``, ``static-O3-pgo-lto``).
What cannot be read (PyPy, a CPython without build variables) is null, never guessed.
"""
from __future__ import annotations

import dataclasses
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from iomatrix import cli, procs
from iomatrix.interpreters import cache as provision_cache
from iomatrix.paths import PROBE_CACHE_FILE, REPO_ROOT

CONFIG_FILE = REPO_ROOT / "iomatrix.toml"
ENV_VARIABLE = "IOMATRIX_PYTHONS"
# Every nox command discovers (the session list depends on it), so a hung interpreter
# must cost little: probes run side by side, each killed with its group after this long.
# A healthy interpreter answers in well under a second here (PyPy included).
PROBE_TIMEOUT_SECONDS = 10
# No "+": it separates a label from its io stack in series names (3.13+pyio).
LABEL_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
PATH_NAME_PATTERN = re.compile(r"^(python\d\.\d+t?|pypy3(\.\d+)?)$")
RELEASE_SOURCES = ("pyenv", "provisioned", "uv")  # plain builds of python.org releases
SOURCE_SUFFIX = {"pyenv": "pyenv", "provisioned": "built", "uv": "uv", "path": "path",
                 "debian": "debian"}

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


class DiscoveryError(Exception):
    """A declaration that cannot be understood (bad syntax, bad label)."""


@dataclasses.dataclass
class Interpreter:
    label: str
    executable: str
    source: str
    info: dict = dataclasses.field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def version(self) -> str:
        return self.info.get("version", "?")

    @property
    def version_info(self) -> tuple:
        return tuple(self.info.get("version_info", (0, 0, 0)))

    @property
    def implementation(self) -> str:
        return self.info.get("implementation", "?")

    @property
    def free_threaded(self) -> bool:
        return bool(self.info.get("free_threaded"))

    @property
    def recipe(self) -> str | None:
        return self.info.get("recipe")

    def as_manifest(self) -> dict:
        return {"label": self.label, "executable": self.executable, "source": self.source,
                "error": self.error, **self.info}


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


def release_label(info: dict) -> str:
    """``3.13.15``, ``3.15.0rc2``, ``3.14.7t``: the label that tells patch releases apart."""
    label = natural_label(info)
    version = re.match(r"[0-9][0-9a-z.+]*", info.get("version", "")) if info.get(
        "implementation") == "cpython" else None
    if version is None:
        return label
    suffix = label[len(".".join(map(str, info["version_info"][:2]))):]  # "t", "d", "td"
    return version.group(0).rstrip("+") + suffix


def natural_label(info: dict) -> str:
    major, minor = info["version_info"][:2]
    if info["implementation"] == "pypy":
        return f"pypy{major}.{minor}"
    base = f"{major}.{minor}"
    if info["implementation"] != "cpython":
        return f"{info['implementation']}{base}"
    if info.get("free_threaded"):
        base += "t"
    if info.get("debug"):
        base += "d"
    return base


def validate_label(label: str, where: str) -> str:
    """The one label rule (iomatrix.cli.name_problem: characters, length, reserved names)."""
    problem = cli.name_problem(label, "label")
    if problem is not None:
        raise DiscoveryError(f"{where}: label {label!r}: {problem}")
    return label


# -- declared interpreters -------------------------------------------------------

def parse_env_declarations(value: str) -> list[tuple[str, str]]:
    pairs = []
    for entry in filter(None, (part.strip() for part in value.split(";"))):
        if "=" not in entry:
            raise DiscoveryError(f"{ENV_VARIABLE}: entry {entry!r} is not label=/path/to/python")
        label, path = (s.strip() for s in entry.split("=", 1))
        pairs.append((validate_label(label, ENV_VARIABLE), path))
    return pairs


def parse_config_declarations(config_file: Path) -> list[tuple[str, str]]:
    if not config_file.exists():
        return []
    try:
        text = config_file.read_bytes().decode("utf-8")  # TOML is UTF-8 by definition
    except UnicodeDecodeError as exc:
        raise DiscoveryError(f"{config_file}: not UTF-8 text (byte {exc.start}); TOML files are "
                             "UTF-8") from None
    except OSError as exc:
        raise DiscoveryError(f"{config_file}: cannot read: {exc.strerror or exc}") from None
    try:
        import tomllib
    except ImportError:  # Python < 3.11 runs nox: a table of strings is all we read
        tomllib = None
    if tomllib is not None:
        try:
            table = tomllib.loads(text).get("interpreters", {})
        except tomllib.TOMLDecodeError as exc:
            raise DiscoveryError(f"{config_file}: {exc}")
    else:
        table = _parse_interpreters_table(text, config_file)
    if not isinstance(table, dict):
        raise DiscoveryError(f'{config_file}: [interpreters] must be a table of label = "/path"')
    pairs = []
    for label, path in table.items():
        if not isinstance(path, str):
            raise DiscoveryError(f"{config_file}: [interpreters] {label} must be a path string")
        pairs.append((validate_label(label, str(config_file)), os.path.expanduser(path)))
    return pairs


def _parse_interpreters_table(text: str, config_file: Path) -> dict:
    table, section = {}, None
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("["):
            section = line.strip("[] ")
            continue
        if section == "interpreters":
            match = re.match(r'^"?([^"=]+?)"?\s*=\s*"([^"]*)"$', line)
            if not match:
                raise DiscoveryError(f"{config_file}:{number}: expected label = \"/path\"")
            table[match.group(1)] = match.group(2)
    return table


# -- automatic sources -----------------------------------------------------------

def pyenv_root() -> Path | None:
    root = os.environ.get("PYENV_ROOT")
    if root:
        return Path(root)
    if shutil.which("pyenv"):
        try:
            out = subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=10)
            if out.returncode == 0 and out.stdout.strip():
                return Path(out.stdout.strip())
        except (OSError, subprocess.TimeoutExpired):
            pass
    default = Path.home() / ".pyenv"
    return default if default.is_dir() else None


def pyenv_candidates() -> list[str]:
    root = pyenv_root()
    if root is None:
        return []
    found = []
    for version_dir in sorted((root / "versions").glob("*")):
        if version_dir.is_symlink():
            continue  # pyenv aliases point at builds listed anyway
        for name in ("python3", "python", "pypy3"):
            exe = version_dir / "bin" / name
            if exe.exists():
                found.append(str(exe))
                break
    return found


def with_build_facts(info: dict, source: str) -> dict:
    """The probe's answer with its build facts in place of the raw build variables."""
    facts = build_facts(info, source)
    return {**info, **facts}  # the raw variables stay: the evidence the facts are read from


def provisioned_recipes() -> dict:
    """{real path of a provisioned python3: the suffix of its recipe's cache directory}.

    The directory, not the recipe, decides: a build made before recipes sits in
    pythons/<version> and keeps its plain label (its build facts say how it was built)."""
    return {os.path.realpath(build["python"]): provision_cache.build_suffix(build)
            for build in provision_cache.list_builds()}


def provisioned_candidates() -> list[str]:
    """Builds made by ``nox -s provision``: only finished ones carry iomatrix-build.json."""
    return [build["python"] for build in provision_cache.list_builds()]


def uv_candidates() -> list[str]:
    """uv's managed interpreters: ``<dir>/<name>/bin/python3`` under uv's install directory
    ($UV_PYTHON_INSTALL_DIR, else ${XDG_DATA_HOME:-~/.local/share}/uv/python). Read from the
    directory, not from ``uv python list``, which inspects every Python on PATH (1.2 s here,
    paid by every nox command)."""
    root = os.environ.get("UV_PYTHON_INSTALL_DIR") or os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "uv", "python")
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    found = [os.path.join(root, name, "bin", "python3") for name in names
             if not name.startswith(".")]
    return [path for path in found if os.path.isfile(path)]


def path_candidates() -> list[str]:
    found = []
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not directory or "shims" in Path(directory).parts:
            continue  # pyenv's shims are shell scripts for one global version
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        found += [os.path.join(directory, n) for n in names if PATH_NAME_PATTERN.match(n)]
    return found


def debian_candidates() -> list[str]:
    if not os.path.exists("/etc/debian_version"):
        return []
    return sorted(p for p in glob.glob("/usr/bin/python3.*") if re.search(r"python3\.\d+t?$", p))


def classify(executable: str) -> str:
    """Which source an automatically found path belongs to (for the label suffix)."""
    real = os.path.realpath(executable)
    root = pyenv_root()
    if root and real.startswith(str(root.resolve()) + os.sep):
        return "pyenv"
    if real.startswith(str(provision_cache.cache_root().resolve()) + os.sep):
        return "provisioned"
    if "/uv/python/" in real:
        return "uv"
    if real.startswith("/usr/bin/") and os.path.exists("/etc/debian_version"):
        return "debian"
    return "path"


# -- putting it together ---------------------------------------------------------

def discover(config_file: Path = CONFIG_FILE, environ=None, automatic: bool = True,
             warn=lambda message: print(f"iomatrix: {message}", file=sys.stderr)) -> list[Interpreter]:
    """Every interpreter of this machine plus the declared ones, labelled, declared first."""
    environ = os.environ if environ is None else environ
    declared = parse_config_declarations(config_file) + parse_env_declarations(
        environ.get(ENV_VARIABLE, ""))
    # Every declaration is checked before anything is probed: bad input writes nothing,
    # not even the probe cache.
    labels = [label for label, _ in declared]
    twice = next((label for label in labels if labels.count(label) > 1), None)
    if twice is not None:
        raise DiscoveryError(f"label {twice!r} is declared twice")
    interpreters: list[Interpreter] = []
    taken: set[str] = set()
    automatic_paths = []
    if automatic:
        automatic_paths = list(dict.fromkeys(
            pyenv_candidates() + provisioned_candidates() + uv_candidates() + path_candidates()
            + debian_candidates()))
    probed = probe_all(list(dict.fromkeys([path for _, path in declared] + automatic_paths)))
    versions_by_label: dict[str, str] = {}
    for label, path in declared:
        if label in taken:
            raise DiscoveryError(f"label {label!r} is declared twice")
        taken.add(label)
        info = probed[path]
        if isinstance(info, RuntimeError):
            warn(f"declared interpreter {label} = {path} is unusable: {info}")
            interpreters.append(Interpreter(label, path, "declared", error=str(info)))
        else:
            interpreters.append(Interpreter(label, path, "declared",
                                            with_build_facts(info, classify(path))))
    if not automatic:
        return interpreters

    seen_binaries: set[str] = set()
    provisioned = provisioned_recipes()
    for path in automatic_paths:
        real = os.path.realpath(path)
        if real in seen_binaries:
            continue
        seen_binaries.add(real)
        info = probed[path]
        if isinstance(info, RuntimeError):
            warn(f"skipping {info}")
            continue
        # Different paths can still be one installation (python3 -> python3.11 copies, venvs).
        identity = os.path.realpath(info.get("executable") or path)
        if identity != real and identity in seen_binaries:
            continue
        seen_binaries.add(identity)
        source = classify(path)
        info = with_build_facts(info, source)
        label = natural_label(info)
        if provisioned.get(real):
            # Another recipe than the lineage's: the release and the recipe say which.
            label = release_label(info) + provisioned[real]
        elif (label in taken and source in RELEASE_SOURCES
                and versions_by_label.get(label) not in (None, info.get("version"))):
            # Another patch release of a minor version already here (3.13.0 and 3.13.15):
            # a label that says which, so release-day reports tell them apart. A
            # distribution's build stays a variant named by its source (3.11-debian).
            label = release_label(info)
        if label in taken:
            label = f"{label}-{SOURCE_SUFFIX[source]}"
        suffix_number = 2
        base = label
        while label in taken:
            label = f"{base}{suffix_number}"
            suffix_number += 1
        taken.add(label)
        versions_by_label.setdefault(natural_label(info), info.get("version"))
        interpreters.append(Interpreter(label, path, source, info))
    return interpreters


def sort_key(interp: Interpreter):
    """CPython by version, free-threaded after default, then other implementations."""
    implementation_rank = 0 if interp.implementation == "cpython" else 1
    return (implementation_rank, interp.version_info, interp.free_threaded, interp.label)


def select(interpreters: list[Interpreter], labels: list[str]) -> list[Interpreter]:
    """The interpreters named by ``labels``; an unknown label is an error listing the valid ones."""
    by_label = {i.label: i for i in interpreters}
    unknown = [label for label in labels if label not in by_label]
    if unknown:
        raise DiscoveryError(f"unknown interpreter label(s) {', '.join(unknown)}; valid labels: "
                             + ", ".join(i.label for i in interpreters))
    return [by_label[label] for label in labels]


def main(argv=None) -> int:
    for interp in sorted(discover(), key=sort_key):
        status = "ok" if interp.ok else f"FAILED: {interp.error}"
        print(f"{interp.label:16} {interp.version:10} {interp.source:12} "
              f"{interp.recipe or '-':18} {interp.executable}  {status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
