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
for PyPy (its language version). Within a source the newest release claims its label
first: with 3.14.4 .. 3.14.7 in the cache, ``3.14`` is 3.14.7, and the other patch
releases of a minor version already labelled get their release as label (``3.14.4``,
and pyenv's 3.13.0 keeps ``3.13`` beside the cache's ``3.13.15``). A second build of a
label already taken gets the source as a suffix: ``3.11-debian``, ``3.13-uv``,
``3.12-path``. A build that ``nox -s provision`` made with another recipe than the
lineage's is named by its release and that recipe: ``3.13.15-pgo``, ``3.13.15-static``.
Two paths to one binary (symlinks) are one interpreter. Every candidate is run once with a
small probe script; one that does not run is reported and skipped, except a
declared one, which stays in the list with its error so the run records it.

The probe also reads how each interpreter was built (``build_facts``): optimisation
flags, shared or static libpython, PGO, LTO, frame pointers, JIT, and the recipe,
the name of the part of these that changes speed (``shared-O3``, ``static-O3-pgo-lto``).
What cannot be read (PyPy, a CPython without build variables) is null, never guessed.
The probe and the build facts are in ``probing`` (their names are importable from here too).
"""
from __future__ import annotations

import collections
import dataclasses
import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from iomatrix import cli
from iomatrix.interpreters import cache as provision_cache
# The probe and the build facts it reads live in probing.py; their names stay importable
# from here, where the noxfile, the runner and the tests have always found them.
from iomatrix.interpreters.probing import (  # noqa: F401
    BUILD_FACT_KEYS, DISTRIBUTION_SOURCES, FRAME_POINTER_FLAGS, PROBE_CACHE_ENV,
    PROBE_CACHE_FILE, PROBE_SCRIPT, PROBE_TIMEOUT_SECONDS, answer_problem, build_facts,
    linkage_text, probe, probe_all, read_regular_file)
from iomatrix.paths import REPO_ROOT

CONFIG_FILE = REPO_ROOT / "iomatrix.toml"
ENV_VARIABLE = "IOMATRIX_PYTHONS"
# No "+": it separates a label from its io stack in series names (3.13+pyio).
LABEL_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
PATH_NAME_PATTERN = re.compile(r"^(python\d\.\d+t?|pypy3(\.\d+)?)$")
RELEASE_SOURCES = ("pyenv", "provisioned", "uv")  # plain builds of python.org releases
SOURCE_SUFFIX = {"pyenv": "pyenv", "provisioned": "built", "uv": "uv", "path": "path",
                 "debian": "debian"}


class DiscoveryError(cli.BadInput):
    """A declaration that cannot be understood (bad syntax, bad label), or a cache that is no
    directory: bad input, exit 2 with one line in every tool that discovers (cli.main_guard),
    whether or not it catches this itself (provision's newest plan did not: a traceback)."""


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


# -- declared interpreters -------------------------------------------------------
# A declaration is input like any other: iomatrix.toml is read only when it is a regular
# file of at most MAX_CONFIG_BYTES (a FIFO there would block `nox -l` for ever), its
# brackets nest at most MAX_CONFIG_NESTING deep (tomllib recurses once per level), and both
# sources together declare at most MAX_DECLARED interpreters, each path a plain string of
# at most MAX_PATH_CHARACTERS. Anything else is a DiscoveryError: exit 2, one line.
MAX_CONFIG_BYTES = 1 << 20
MAX_ENV_CHARACTERS = 1 << 16
MAX_CONFIG_NESTING = 32
MAX_DECLARED = 256
MAX_PATH_CHARACTERS = 4096


def _shown(text: str) -> str:
    """A value from a declaration as an error quotes it: one line, at most 60 characters."""
    text = repr(text)
    return cli.one_line(text[:60] + ("..." if len(text) > 60 else ""))


def validate_label(label: str, where: str) -> str:
    """The one label rule (iomatrix.cli.name_problem: characters, length, reserved names)."""
    problem = cli.name_problem(label, "label")
    if problem is not None:
        raise DiscoveryError(f"{where}: label {_shown(label)}: {problem}")
    return label


def validate_path(path, label: str, where: str) -> str:
    if not isinstance(path, str):
        raise DiscoveryError(f"{where}: {label} must be a path string")
    if not path or len(path) > MAX_PATH_CHARACTERS or not path.isprintable():
        raise DiscoveryError(f"{where}: {label}: the path {_shown(path)} is not a path (empty, "
                             f"longer than {MAX_PATH_CHARACTERS} characters, or holding a "
                             "control character)")
    return path


def parse_env_declarations(value: str) -> list[tuple[str, str]]:
    if len(value) > MAX_ENV_CHARACTERS:
        raise DiscoveryError(f"{ENV_VARIABLE}: {len(value):,} characters; at most "
                             f"{MAX_ENV_CHARACTERS:,} are read")
    pairs = []
    for entry in filter(None, (part.strip() for part in value.split(";"))):
        if len(pairs) == MAX_DECLARED:
            raise DiscoveryError(f"{ENV_VARIABLE}: more than {MAX_DECLARED} interpreters "
                                 "declared")
        if "=" not in entry:
            raise DiscoveryError(f"{ENV_VARIABLE}: entry {_shown(entry)} is not "
                                 "label=/path/to/python")
        label, path = (s.strip() for s in entry.split("=", 1))
        label = validate_label(label, ENV_VARIABLE)
        pairs.append((label, validate_path(path, label, ENV_VARIABLE)))
    return pairs


def nesting_depth(text: str) -> int:
    """How deep the brackets of ``text`` nest, counted as if no string held any: an upper
    bound of the TOML's nesting, found in one pass before the parser recurses into it."""
    depth = deepest = 0
    for char in text:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(depth - 1, 0)
    return deepest


def read_config_text(config_file: Path) -> str | None:
    """iomatrix.toml's text; None when there is none."""
    shown = cli.one_line(config_file)
    try:
        data = read_regular_file(config_file, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DiscoveryError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")  # TOML is UTF-8 by definition
    except UnicodeDecodeError as exc:
        raise DiscoveryError(f"{shown}: not UTF-8 text (byte {exc.start}); TOML files are "
                             "UTF-8") from None


def parse_config_declarations(config_file: Path) -> list[tuple[str, str]]:
    text = read_config_text(config_file)
    if text is None:
        return []
    shown = cli.one_line(config_file)
    if nesting_depth(text) > MAX_CONFIG_NESTING:
        raise DiscoveryError(f"{shown}: brackets nested more than {MAX_CONFIG_NESTING} deep; "
                             "[interpreters] is a flat table")
    try:
        import tomllib
    except ImportError:  # Python < 3.11 runs nox: a table of strings is all we read
        tomllib = None
    if tomllib is not None:
        try:
            table = tomllib.loads(text).get("interpreters", {})
        except (tomllib.TOMLDecodeError, RecursionError) as exc:
            raise DiscoveryError(f"{shown}: {cli.one_line(exc)}") from None
    else:
        table = _parse_interpreters_table(text, config_file)
    if not isinstance(table, dict):
        raise DiscoveryError(f'{shown}: [interpreters] must be a table of label = "/path"')
    if len(table) > MAX_DECLARED:
        raise DiscoveryError(f"{shown}: {len(table):,} interpreters declared; at most "
                             f"{MAX_DECLARED}")
    pairs = []
    for label, path in table.items():
        label = validate_label(label, shown)
        pairs.append((label, os.path.expanduser(validate_path(path, f"[interpreters] {label}",
                                                              shown))))
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


def provisioned_recipes(builds: list[dict]) -> dict:
    """{real path of a provisioned python3: the suffix of its recipe's cache directory}, of
    ``builds`` (cache.list_builds).

    The directory, not the recipe, decides: a build made before recipes sits in
    pythons/<version> and keeps its plain label (its build facts say how it was built)."""
    return {os.path.realpath(build["python"]): provision_cache.build_suffix(build)
            for build in builds}


def provisioned_builds(warn=None) -> list[dict]:
    """Builds made by ``nox -s provision``: only finished ones carry iomatrix-build.json; one
    whose file cannot be read is skipped with one ``warn`` line. A cache root that is no
    directory (a file, a symlink loop) is a DiscoveryError: the user's setting is wrong."""
    try:
        return provision_cache.list_builds(warn=warn or warn_line)
    except provision_cache.BadCache as exc:
        raise DiscoveryError(str(exc)) from None


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
    try:
        cache = str(provision_cache.cache_root().resolve())
    except provision_cache.BadCache:   # said by discover(); nothing lies in such a cache
        cache = None
    if cache and real.startswith(cache + os.sep):
        return "provisioned"
    if "/uv/python/" in real:
        return "uv"
    if real.startswith("/usr/bin/") and os.path.exists("/etc/debian_version"):
        return "debian"
    return "path"


# -- putting it together ---------------------------------------------------------

def warn_line(message: str) -> None:
    """A warning on stderr, one line: it quotes paths and what interpreters printed."""
    print(f"iomatrix: {cli.one_line(message)}", file=sys.stderr)


def discover(config_file: Path = CONFIG_FILE, environ=None, automatic: bool = True,
             warn=warn_line) -> list[Interpreter]:
    """Every interpreter of this machine plus the declared ones, labelled, declared first."""
    environ = os.environ if environ is None else environ
    declared = parse_config_declarations(config_file) + parse_env_declarations(
        environ.get(ENV_VARIABLE, ""))
    # Every declaration is checked before anything is probed: bad input writes nothing,
    # not even the probe cache.
    if len(declared) > MAX_DECLARED:
        raise DiscoveryError(f"{len(declared)} interpreters declared in {CONFIG_FILE.name} and "
                             f"{ENV_VARIABLE}; at most {MAX_DECLARED}")
    # A Counter, not labels.count per label: linear in the number of declarations.
    twice = next((label for label, n in collections.Counter(
        label for label, _ in declared).items() if n > 1), None)
    if twice is not None:
        raise DiscoveryError(f"label {twice!r} is declared twice")
    interpreters: list[Interpreter] = []
    taken: set[str] = set()
    automatic_paths = []
    builds = provisioned_builds(warn) if automatic else []
    if automatic:
        automatic_paths = list(dict.fromkeys(
            pyenv_candidates() + [build["python"] for build in builds] + uv_candidates()
            + path_candidates() + debian_candidates()))
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
    provisioned = provisioned_recipes(builds)
    found: list[tuple[str, str, dict]] = []     # (path, source, info), in discovery order
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
        found.append((path, source, with_build_facts(info, source)))
    labels = {}
    versions_by_label: dict[str, str] = {}
    for n in label_claim_order(found):
        path, source, info = found[n]
        real = os.path.realpath(path)
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
        labels[n] = label
    interpreters += [Interpreter(labels[n], path, source, info)
                     for n, (path, source, info) in enumerate(found)]
    return interpreters


def label_claim_order(found: list[tuple[str, str, dict]]) -> list[int]:
    """The order in which the candidates ``found`` ((path, source, info), in discovery order)
    claim their labels: discovery order, except that among consecutive builds of one
    release source (pyenv's, the cache's, uv's) the newest release comes first. So with
    3.14.4 .. 3.14.7 in the cache, "3.14" is 3.14.7 and the others are labelled 3.14.4 ..
    3.14.6, whichever was built first: the newest release is what "3.14" means on a
    release day and in the lineage. The sources keep their priority (pyenv's 3.13.0 keeps
    "3.13" beside the cache's 3.13.15, as in every run so far), and PATH's and a
    distribution's interpreters their PATH order."""
    runs, previous = [], None
    for _, source, _ in found:
        runs.append(len(runs) if source != previous else runs[-1])
        previous = source

    def claim_key(n: int) -> tuple:
        _, source, info = found[n]
        newest_first = tuple(-part for part in release_order(info)) \
            if source in RELEASE_SOURCES else ()
        return runs[n], newest_first, n
    return sorted(range(len(found)), key=claim_key)


def release_order(info: dict) -> tuple:
    """A probe answer's release as numbers that sort as releases do: 3.15.0rc1 < 3.15.0rc2 <
    3.15.0 < 3.15.1 (the probe's version_info has no pre-release: it is read from the
    version text)."""
    pre = re.fullmatch(r"[0-9.]+(?:(a|b|rc)([0-9]+))?\+?", str(info.get("version", "")))
    level = ({"a": 0, "b": 1, "rc": 2}[pre[1]], int(pre[2])) if pre and pre[1] else (3, 0)
    return (*(int(part) for part in info.get("version_info", (0, 0, 0))[:3]), *level)


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


@cli.main_guard
def main(argv=None) -> int:
    for interp in sorted(discover(), key=sort_key):
        status = "ok" if interp.ok else f"FAILED: {interp.error}"
        print(cli.one_line(f"{interp.label:16} {interp.version:10} {interp.source:12} "
                           f"{interp.recipe or '-':18} {interp.executable}  {status}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
