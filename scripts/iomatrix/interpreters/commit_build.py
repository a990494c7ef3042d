"""CPython commits of a user's git clone, read and built without writing into the clone.

``nox -s bisect -- OP --between OLD NEW --cpython-repo PATH`` (iomatrix.commands.bisect_commits)
bisects the commits between two release tags of a CPython clone. This module is its git and
its builds:

- The clone is only read: ``git rev-parse``, ``rev-list``, ``log``, ``cat-file``,
  ``diff-tree`` and ``archive -o FILE`` (the file is in the build's own staging directory),
  every one with ``GIT_OPTIONAL_LOCKS=0`` (no index refresh) and ``GIT_CEILING_DIRECTORIES``
  set to the clone's parent, so a directory that is not a repository is never taken for the
  repository around it. Its HEAD, index, branches, tags and work tree stay as they were (tests/
  test_bisect_commits.py checks ``git status`` and every ref before and after).
- A commit is built by a release recipe (``interpreters.cache.RECIPES``: the same configure
  arguments as the provisioned builds of that recipe) into the iomatrix cache,
  ``commits/<full hash><recipe suffix>/``, the way ``provision.build`` builds a release: staged
  in a hidden ``.<hash>.partial-<pid>`` directory, its facts in ``iomatrix-build.json``,
  renamed into place and started again from there. A finished build is reused, never redone;
  a build that failed in configure or make leaves ``<hash><suffix>.failed`` (its stage and
  log), and is not tried again until that file is removed: the bisect skips it, as
  ``git bisect skip`` does. A commit another live process is building into the same cache
  (two bisects over one range) is waited for, then reused.
- When ccache is installed, the compiler is called through it (a directory of ``cc`` and
  ``gcc`` links to ccache put first on make's PATH, so configure's arguments and the build's
  variables are those of the plain recipe), with its cache in the iomatrix cache
  (``ccache/``) and the source directory as its base: neighbouring commits share most
  objects. Without ccache the build is the same, only slower.

A commit's subject and body are data: they are returned as text, shown escaped, and never
run or used as a path. A git object is named by a full hash checked against ``HASH_RE``.
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import os
import re
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

from iomatrix import cli, procs
from iomatrix.interpreters.build_stages import (Builder, StageError, clean_env, elapsed,
                                                install_in_place, missing_modules, new_log,
                                                probe_staged, remove_stale_partials)
from iomatrix.interpreters.cache import (BUILD_INFO, BadCacheEntry, Recipe, cache_root,
                                         read_json)
from iomatrix.interpreters.sources import ProvisionError, Say

HASH_RE = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")   # SHA-1 or SHA-256 object names
GIT_TIMEOUT = 120
MAX_MESSAGE_CHARS = 20_000     # a commit message is cut there (data, shown in part)
MAX_NEWS_BYTES = 32 << 20      # as analysing.news: a bigger Misc/NEWS is not one
COMPILERS = ("cc", "gcc", "c++", "g++")
WAIT_POLL_SECONDS = 2          # for another process's build of the same commit
WAIT_SAY_SECONDS = 60


class RepoError(cli.BadInput):
    """The clone cannot serve the bisect (not a git repository, a missing tag): exit 2."""


@dataclasses.dataclass
class Commit:
    sha: str
    subject: str
    body: str

    @property
    def short(self) -> str:
        return self.sha[:10]


# -- reading the clone -------------------------------------------------------------------

class Repo:
    """A git repository, read only."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def env(self) -> dict:
        env = clean_env()
        for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                     "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE"):
            env.pop(name, None)
        env["GIT_OPTIONAL_LOCKS"] = "0"     # no index refresh: nothing written into the clone
        env["GIT_CEILING_DIRECTORIES"] = str(self.path.resolve().parent)
        env["GIT_TERMINAL_PROMPT"] = "0"
        env["LC_ALL"] = "C"
        return env

    def git(self, *args: str, check: bool = True, binary: bool = False):
        cmd = ["git", "-c", "core.fsmonitor=false", "-C", str(self.path), *args]
        try:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                                  env=self.env(), timeout=GIT_TIMEOUT, text=not binary,
                                  **({} if binary else {"errors": "replace"}))
        except FileNotFoundError:
            raise RepoError("git is not installed; the commit bisect needs it") from None
        except subprocess.TimeoutExpired:
            raise ProvisionError(f"git {args[0]} gave no answer within {GIT_TIMEOUT} s") from None
        if check and proc.returncode != 0:
            err = proc.stderr.decode(errors="replace") if binary else proc.stderr
            raise ProvisionError(f"git {args[0]} failed (exit {proc.returncode}): "
                                 f"{cli.one_line(err)[:200]}")
        return proc


def open_repo(path) -> Repo:
    """The clone at ``path``; RepoError unless it is a git repository itself (the top of a
    work tree, or a bare repository), not a directory inside or beside one."""
    path = Path(path)
    if not path.is_dir():
        raise RepoError(f"--cpython-repo {path}: not a directory")
    repo = Repo(path)
    proc = repo.git("rev-parse", "--is-bare-repository", "--show-toplevel", check=False)
    if proc.returncode != 0:
        raise RepoError(f"--cpython-repo {path}: not a git repository "
                        f"({cli.one_line(proc.stderr.strip())[:120] or 'git rev-parse failed'})")
    lines = proc.stdout.splitlines()
    bare = lines[:1] == ["true"]
    top = lines[1] if len(lines) > 1 else None
    if not bare and (top is None or os.path.realpath(top) != os.path.realpath(path)):
        raise RepoError(f"--cpython-repo {path}: not the top of a git repository (give the "
                        "clone's own directory)")
    return repo


def tag_of(version: str) -> str:
    """CPython's tag of a release: v3.13.15, v3.15.0rc2 (a leading v is accepted)."""
    return version if version.startswith("v") else f"v{version}"


def resolve_tag(repo: Repo, version: str, what: str) -> str:
    """The full hash of the commit a release tag names; RepoError when the clone lacks it."""
    tag = tag_of(version)
    if cli.name_problem(tag, "label") is not None:
        raise RepoError(f"{what} {version!r}: not a release (3.13.15, 3.15.0rc2)")
    proc = repo.git("rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}", check=False)
    sha = proc.stdout.strip()
    if proc.returncode != 0 or not HASH_RE.fullmatch(sha):
        raise RepoError(f"--cpython-repo {repo.path}: no tag {tag} for {what} (CPython tags its "
                        "releases v3.13.15, v3.15.0rc2; `git fetch --tags` brings them)")
    return sha


def commits_between(repo: Repo, old: str, new: str) -> list[str]:
    """The commits on NEW's first-parent line that OLD does not contain, oldest first, NEW
    last: the line a bisect walks (a merged branch's own commits are judged by its merge)."""
    proc = repo.git("rev-list", "--first-parent", "--reverse", f"{old}..{new}")
    shas = proc.stdout.split()
    bad = next((s for s in shas if not HASH_RE.fullmatch(s)), None)
    if bad is not None:
        raise ProvisionError(f"git rev-list gave {cli.one_line(bad)[:60]!r}, not a commit hash")
    return shas


def commit_info(repo: Repo, sha: str) -> Commit:
    """A commit's subject and body, as text (data: never run, never a path)."""
    if not HASH_RE.fullmatch(sha):
        raise ProvisionError(f"{sha!r} is not a commit hash")
    proc = repo.git("log", "-1", "--no-show-signature", "--format=%B", sha, "--")
    text = proc.stdout[:MAX_MESSAGE_CHARS]
    subject, _, body = text.strip("\n").partition("\n")
    return Commit(sha, subject.strip(), body.strip("\n"))


def file_at(repo: Repo, sha: str, path: str, limit: int = MAX_NEWS_BYTES) -> str | None:
    """The text of ``path`` in commit ``sha``, or None when it is absent or larger than
    ``limit`` (its size is asked first: a huge blob is never read)."""
    if not HASH_RE.fullmatch(sha):
        raise ProvisionError(f"{sha!r} is not a commit hash")
    size = repo.git("cat-file", "-s", f"{sha}:{path}", check=False)
    if size.returncode != 0 or not size.stdout.strip().isdigit() or int(size.stdout) > limit:
        return None
    proc = repo.git("cat-file", "blob", f"{sha}:{path}", check=False, binary=True)
    return proc.stdout.decode("utf-8", errors="replace") if proc.returncode == 0 else None


def files_added(repo: Repo, sha: str) -> list[str]:
    """The paths a commit adds (against its first parent; all of them for a root commit)."""
    proc = repo.git("diff-tree", "--root", "--no-commit-id", "-r", "--name-only",
                    "--diff-filter=A", "-z", sha, check=False)
    return [p for p in proc.stdout.split("\0") if p] if proc.returncode == 0 else []


# -- building a commit ------------------------------------------------------------------

def commits_dir(root: Path | None = None) -> Path:
    return (Path(root) if root is not None else cache_root()) / "commits"


def build_dir(sha: str, recipe: Recipe, root: Path | None = None) -> Path:
    return commits_dir(root) / f"{sha}{recipe.suffix}"


def failed_marker(sha: str, recipe: Recipe, root: Path | None = None) -> Path:
    return commits_dir(root) / f"{sha}{recipe.suffix}.failed"


def read_commit_build(sha: str, recipe: Recipe, root: Path | None = None) -> dict | None:
    """The facts of a finished build of ``sha`` by ``recipe`` in the cache, or None."""
    prefix = build_dir(sha, recipe, root)
    try:
        info = read_json(prefix / BUILD_INFO)
    except BadCacheEntry:   # not a regular file, too large or deep: no build of ours
        return None
    if not isinstance(info, dict) or info.get("commit") != sha or info.get("recipe") != recipe.name:
        return None
    info["prefix"] = str(prefix)
    info["python"] = str(prefix / "bin" / "python3")
    return info


def read_failure(sha: str, recipe: Recipe, root: Path | None = None) -> str | None:
    """Why an earlier build of ``sha`` failed (its marker), or None."""
    marker = failed_marker(sha, recipe, root)
    try:
        data = read_json(marker)
    except BadCacheEntry:
        return None
    if not isinstance(data, dict):
        return None
    return (f"its build failed in {cli.one_line(str(data.get('stage', '?')))[:40]} "
            f"(an earlier run's; remove commits/{marker.name} in the cache to try again)")


def ccache_dir() -> Path:
    return cache_root() / "ccache"


def compiler_links(directory: Path) -> Path | None:
    """A directory of cc/gcc/c++/g++ links to ccache (its masquerade mode), or None when
    ccache is not installed."""
    ccache = shutil.which("ccache")
    if ccache is None:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    for name in COMPILERS:
        (directory / name).symlink_to(ccache)
    return directory


def other_builder(commits: Path, name: str) -> int | None:
    """The pid of another live process building ``name`` into ``commits``, or None."""
    for partial in commits.glob(f".{name}.partial-*"):
        pid = partial.name.rsplit("-", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and procs.pid_alive(int(pid)):
            return int(pid)
    return None


def wait_for_other_build(commits: Path, name: str, say: Say) -> None:
    """Wait while another live process builds ``name`` (its staging directory names its
    pid), saying so every WAIT_SAY_SECONDS."""
    said = None
    while (pid := other_builder(commits, name)) is not None:
        now = time.monotonic()
        if said is None or now - said >= WAIT_SAY_SECONDS:
            say(f"waiting for process {pid}, which is building {name[:10]} into the cache")
            said = now
        time.sleep(WAIT_POLL_SECONDS)


def archive(repo: Repo, sha: str, dest: Path) -> Path:
    """The commit's tree, unpacked into ``dest/src`` (``git archive -o`` into ``dest``, never
    into the clone; tarfile's data filter where this Python has it)."""
    tar_path = dest / "src.tar"
    repo.git("archive", "--format=tar", f"--output={tar_path}", sha)
    src = dest / "src"
    src.mkdir()
    with tarfile.open(tar_path) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(src, filter="data")
        else:
            tar.extractall(src, members=[m for m in tar if m.isfile() or m.isdir()
                                         or m.issym()])
    tar_path.unlink()
    return src


def build_commit(repo: Repo, sha: str, recipe: Recipe, *, jobs: int = 2, say: Say = print,
                 root: Path | None = None) -> Path:
    """Build commit ``sha`` by ``recipe`` into the cache unless a build (or a failure) of it
    is there; return the build's prefix. A ProvisionError says why a build cannot be had;
    a failed configure or make leaves the failure marker."""
    if not HASH_RE.fullmatch(sha):
        raise ProvisionError(f"{sha!r} is not a commit hash")
    final = build_dir(sha, recipe, root)
    # Another bisect sharing the cache may be building this commit: it is waited for and
    # its build reused (or its failure), never built twice side by side.
    wait_for_other_build(commits_dir(root), final.name, say)
    if read_commit_build(sha, recipe, root) is not None:
        say(f"reusing the build at {final}")
        return final
    failure = read_failure(sha, recipe, root)
    if failure is not None:
        raise ProvisionError(failure)
    if final.exists():
        raise ProvisionError(f"{final} exists but holds no {BUILD_INFO}: remove it to build "
                             f"{sha[:10]}")
    commits = commits_dir(root)
    commits.mkdir(parents=True, exist_ok=True)
    name = final.name
    remove_stale_partials(commits, name, say)
    log = new_log(commits / "logs", name)
    partial = commits / f".{name}.partial-{os.getpid()}"
    stage_dir = partial / "stage"
    staged = stage_dir / str(final).lstrip(os.sep)
    configure_args = [f"--prefix={final}", *recipe.configure_args]
    if recipe.shared:
        configure_args.append(f"LDFLAGS=-Wl,-rpath,{final / 'lib'}")
    builder = Builder(None, log, say)
    src: list[Path] = []
    probe: dict = {}
    partial.mkdir()
    links = compiler_links(partial / "ccache-bin")
    # make's environment: ccache first on PATH when it is installed (configure finds "gcc"
    # there), with its own cache in the iomatrix cache; `env` carries it to make.
    wrapped: list[str] = []
    if links is not None:
        wrapped = ["env", f"PATH={links}{os.pathsep}{os.environ.get('PATH', '')}",
                   f"CCACHE_DIR={ccache_dir()}", "CCACHE_NOHASHDIR=1"]
    builder.write(f"iomatrix commit build {sha}, recipe {recipe.name}\nconfigure: "
                  f"{configure_args}\njobs: {jobs}\nccache: {'yes' if links else 'no'}\n")
    say(f"building {sha[:10]} with the {recipe.name} recipe"
        f"{' (ccache)' if links else ''}; log: {log}")

    def unpack() -> None:
        src.append(archive(repo, sha, partial))

    def check() -> None:
        # a commit's version is not known before it is built: its python3.N[t], whichever
        names = [c.name for c in sorted((staged / "bin").glob("python3.*"))
                 if re.fullmatch(r"python3\.[0-9]+t?", c.name)]
        probe.update(probe_staged(builder, staged, recipe, names))

    stage = "unpack"
    try:
        builder.stage("unpack", unpack)
        base = [f"CCACHE_BASEDIR={src[0]}"] if links else []
        stage = "configure"
        builder.run("configure", [*wrapped, *base, str(src[0] / "configure"), *configure_args],
                    src[0])
        stage = "make"
        builder.run("make", [*wrapped, *base, "make", f"-j{jobs}"], src[0])
        stage = "install"
        builder.run("install", [*wrapped, *base, "make", "install", f"DESTDIR={stage_dir}"],
                    src[0])
        stage = "check"
        builder.stage("check", check)
        info = {
            "commit": sha,
            "recipe": recipe.name,
            "python_version": probe["python_version"],
            "free_threaded": probe["free_threaded"],
            "configure_args": configure_args,
            "jobs": jobs,
            "ccache": links is not None,
            "build_seconds": round(time.monotonic() - builder.start, 3),
            "stage_seconds": builder.stage_seconds,
            "built_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "log": str(log),
            "sys_version": probe["sys_version"],
            "missing_modules": missing_modules(log.read_text(errors="replace")),
        }
        install_in_place(builder, staged, final, recipe, info, "another bisect?")
    except BaseException as exc:
        shutil.rmtree(partial, ignore_errors=True)
        if isinstance(exc, KeyboardInterrupt):
            builder.write("\n=== interrupted ===\n")
            raise
        if isinstance(exc, StageError) and stage in ("configure", "make"):
            # The commit's source does not build by this recipe: remembered, so a later
            # bisect skips it at once (the failure is the commit's, not the machine's).
            failed_marker(sha, recipe, root).write_text(json.dumps(
                {"commit": sha, "recipe": recipe.name, "stage": stage, "log": str(log)}) + "\n")
        if not isinstance(exc, StageError):
            builder.write(f"\n=== failed: {exc} ===\n")
            if isinstance(exc, (ProvisionError, OSError, tarfile.TarError)):
                raise ProvisionError(f"{exc}; see the log: {log}") from exc
        raise
    shutil.rmtree(partial, ignore_errors=True)
    say(f"built {sha[:10]} ({recipe.name} recipe, Python {info['python_version']}) in "
        f"{elapsed(info['build_seconds'])}")
    return final
