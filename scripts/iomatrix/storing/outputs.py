"""Where a tool may write, and a report written whole.

``check_output`` refuses an output path that would write a run's results (inside a run
directory only report files, never in its .parts/ or phase/, symbolic links followed);
``write_output`` writes a tool's file after that check. A report's main page, suite pages
and CSV go in the places ``report_places`` names, checked first by
``check_report_destination`` and replaced together by ``write_report_pages``. Split from
store.py (the run directories and their safe reads), which re-exports these names.
"""
from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from iomatrix import cli
from iomatrix.storing import contract

MANIFEST = contract.MANIFEST
PARTS_DIR = contract.PARTS_DIR


def atomic_write_text(path: Path, text: str, overwrite: bool = True) -> None:
    contract.atomic_write_bytes(str(path), text.encode("utf-8"), overwrite=overwrite)


def report_places(out: Path) -> tuple[Path, Path]:
    """(the pages directory, the figures directory) of a report whose main page is ``out``."""
    out = Path(out)
    return out.parent / out.stem, out.parent / "figures"


def check_report_destination(out: Path, results_dir: Path) -> None:
    """Refuse a report file whose pages would land among a store's results, or could not all
    be written: every check runs before the first byte of the report is written.

    A report writes ``out``, its suite pages and data.csv in ``out.parent/out.stem/``
    and its figures in ``out.parent/figures/`` (scripts/report.py). Beside the runs of
    ``results_dir`` the pages directory of ``A.md`` would be run ``A`` itself, and a
    pages directory holding a manifest is some store's run directory: either way the
    report's files would mix with a run's results. Inside a run directory
    (``RUN/report.md``, the matrix's default outside ``results/``) they stay apart, but
    never in its phase/ or .parts/ (``RUN/phase.md`` would put its pages in ``RUN/phase/``).
    Each place is checked as check_output checks a file, symbolic links followed."""
    out = Path(out)
    if out.suffix != ".md":
        raise cli.BadInput(f"--out {out}: a report is a markdown file; give a name ending "
                           "in .md")
    pages_dir, figures_dir = report_places(out)
    check_output(out, "--out")
    for where in where_written(pages_dir):
        if where.parent == Path(results_dir).resolve() or \
                where.parent == Path(os.path.abspath(results_dir)):
            raise cli.BadInput(f"--out {out}: its pages would go in {pages_dir} and its "
                               f"figures in {figures_dir}, among the runs of --results-dir "
                               f"{results_dir}; write the report outside the results directory "
                               "(or in a run's own directory, as RUN/report.md)")
        if os.path.lexists(where / MANIFEST):
            raise cli.BadInput(f"--out {out}: its pages would go in {pages_dir}, which is a "
                               f"run directory (it has a {MANIFEST}); choose another name or "
                               "place")
        if where.exists() and not where.is_dir():
            raise cli.BadInput(f"--out {out}: its pages would go in {pages_dir}, which exists "
                               "and is not a directory; choose another name or place")
    for page in (pages_dir / "data.csv", pages_dir / "page.md", figures_dir / "figure.png"):
        try:
            check_output(page, "--out")
        except cli.BadInput as exc:
            raise cli.BadInput(f"--out {out}: its pages and figures go in {pages_dir} and "
                               f"{figures_dir}; {str(exc).split(': ', 1)[1]}") from None


# -- where a tool may write ------------------------------------------------------------

# Inside a run directory a tool may write report files only (the matrix's RUN/report.md,
# release's RUN/release.md, their pages, CSV and figures): never a file a reader would
# take for a result (.json, .tsv, anything in phase/ or .parts/), so nothing written can
# replace or join a run's results.
REPORT_SUFFIXES = (".md", ".csv", ".png", ".svg", ".html")


# The run's own subdirectories: nothing but the runner writes there.
RUN_SUBDIRECTORIES = (PARTS_DIR, "phase")


def where_written(path: Path) -> list[Path]:
    """Where a write to ``path`` lands: the path as given (made absolute) and, when a
    symbolic link on the way (a directory or the file itself) leads elsewhere, the resolved
    path. Every output check looks at both, so a link never carries a write into a run."""
    given = Path(os.path.abspath(path))
    resolved = given.resolve()   # strict=False: as far as the path exists
    return [given] if resolved == given else [given, resolved]


def run_directory_of(path: Path) -> Path | None:
    """The run directory (a directory holding a manifest) that ``path`` lies in, if any,
    following symbolic links (``where_written``)."""
    for where in where_written(path):
        for parent in where.parents:
            if os.path.lexists(parent / MANIFEST):
                return parent
    return None


def check_output(path: Path, option: str) -> Path:
    """Refuse an output path (BadInput naming ``option``) that is a directory, lies under a
    file, or would write a run's results: inside a run directory only report files are
    written, never in its .parts/ or phase/, never a hidden file. Symbolic links are
    followed for the check (``where_written``): a link into a run is refused like the run."""
    path = Path(path)
    if path.is_dir():
        raise cli.BadInput(f"{option} {path}: is a directory; give a file name")
    # An output is a regular file written by replacing it whole (atomic_write_text): a link
    # would be replaced, not followed, and a device, fifo or socket (/dev/full, /dev/null)
    # would be replaced by a file, so neither is taken.
    if path.is_symlink():
        raise cli.BadInput(f"{option} {path}: is a symbolic link; give the file itself")
    if os.path.lexists(path) and not path.is_file():
        raise cli.BadInput(f"{option} {path}: is not a regular file (a device, fifo or "
                           "socket); give a file name")
    for where in where_written(path):
        blocking = next((p for p in where.parents if p.exists() and not p.is_dir()), None)
        if blocking is not None:
            raise cli.BadInput(f"{option} {path}: cannot write ({blocking} is not a "
                               "directory)")
        if any(part == PARTS_DIR for part in where.parts):
            raise cli.BadInput(f"{option} {path}: lies in a run's {PARTS_DIR}/ ({where}), "
                               "where only the runner writes")
        run_dir = next((parent for parent in where.parents
                        if os.path.lexists(parent / MANIFEST)), None)
        if run_dir is None:
            continue
        inside = where.relative_to(run_dir).parts
        if where.suffix.lower() not in REPORT_SUFFIXES or inside[0] in RUN_SUBDIRECTORIES \
                or any(part.startswith(".") for part in inside):
            shown = "" if where == Path(os.path.abspath(path)) else f" (through a link: {where})"
            raise cli.BadInput(f"{option} {path}: lies in the run directory {run_dir}{shown}, "
                               f"where only report files ({', '.join(REPORT_SUFFIXES)}) may be "
                               f"written, not in its {' or '.join(d + '/' for d in RUN_SUBDIRECTORIES)}; a "
                               "run's results are never written over or added to")
    return path


def write_output(path: Path, text: str, option: str) -> None:
    """Write a tool's output file (check_output first); a failure is BadInput with the path."""
    path = check_output(path, option)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
    except OSError as exc:
        raise cli.BadInput(f"{option} {path}: cannot write ({exc.strerror or exc})")


# -- a report's pages, replaced together ------------------------------------------------

class _Swap:
    """The renames that put a new set of pages in place, undone in reverse on failure."""

    def __init__(self):
        self.done = []   # (source, target) renames made, in order

    def rename(self, source: Path, target: Path) -> None:
        os.replace(source, target)
        self.done.append((source, target))

    def undo(self) -> None:
        for source, target in reversed(self.done):
            with contextlib.suppress(OSError):
                os.replace(target, source)
        self.done = []


def page_file(directory: Path, name: str, suffix: str) -> Path:
    """``directory/<name><suffix>`` for a page's vetted name: a suite (or one of the report's
    own pages, named like a suite), never a path; BadInput otherwise, and the file must
    stay inside ``directory`` (resolved and compared, in case a rule ever lets more in)."""
    cli.checked(name, "suite", "page")
    path = directory / f"{name}{suffix}"
    if path.resolve().parent != directory.resolve():
        raise cli.BadInput(f"page {cli.one_line(repr(name))}: its file {path} would lie "
                           f"outside {directory}")
    return path


def write_report_pages(out: Path, main: str, pages: dict[str, str], csv: str = "") -> list[Path]:
    """Write a report: its main page at ``out``, ``pages`` ({name: text}) as
    ``<name>.md`` and ``csv`` as data.csv in its pages directory (``report_places``), so that
    the new report replaces the old one whole.

    The new pages are written first in a hidden directory beside the pages directory
    (``.<stem>.partial-<pid>``, the contract's half-written pattern), the main page as a
    half-written file beside ``out``. Then three renames: the old pages directory aside
    (``.<stem>.old.partial-<pid>``), the new one into place, the new main page over the old
    (os.replace); then the old pages are removed. What a reader sees:

    - before the renames, the old report, whole (the new one is hidden);
    - during the three renames (microseconds), the old main page with no pages directory,
      then with the new one;
    - after them, the new report, whole.

    A failure or an interrupt (KeyboardInterrupt included) during the renames undoes them
    in reverse: the old report is back, whole, and the hidden files are removed. Only a
    kill -9 inside the three renames can leave a mix, and then the hidden
    ``.<stem>.old.partial-<pid>`` directory beside it says so.
    Call check_report_destination first; BadInput for a write that fails."""
    out = Path(out)
    pages_dir, _ = report_places(out)
    parent = out.parent
    pid = os.getpid()
    new_dir = parent / f".{out.stem}.partial-{pid}"
    old_dir = parent / f".{out.stem}.old.partial-{pid}"
    new_main = Path(contract.partial_path(str(out)))
    swap = _Swap()
    try:
        parent.mkdir(parents=True, exist_ok=True)
        for leftover in (new_dir, old_dir):   # a crashed run's, whose pid this one now has
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover)
        with contextlib.suppress(FileNotFoundError):
            os.remove(new_main)
        new_dir.mkdir()
        written = [out]
        for name, text in pages.items():
            target = page_file(new_dir, name, ".md")
            atomic_write_text(target, text, overwrite=False)
            written.append(pages_dir / target.name)
        if csv:
            atomic_write_text(new_dir / "data.csv", csv, overwrite=False)
            written.append(pages_dir / "data.csv")
        atomic_write_bytes_unrenamed(new_main, main)
        if os.path.lexists(pages_dir):
            swap.rename(pages_dir, old_dir)
        swap.rename(new_dir, pages_dir)
        swap.rename(new_main, out)
    except BaseException as exc:
        swap.undo()
        for leftover in (new_dir, new_main):
            with contextlib.suppress(OSError):
                shutil.rmtree(leftover) if leftover.is_dir() else os.remove(leftover)
        if isinstance(exc, OSError):
            raise cli.BadInput(f"--out {out}: cannot write the report "
                               f"({exc.strerror or exc}); the previous report is left as it "
                               "was") from None
        raise
    with contextlib.suppress(OSError):
        shutil.rmtree(old_dir)
    return written


def atomic_write_bytes_unrenamed(path: Path, text: str) -> None:
    """Write ``text`` to the new file ``path`` and fsync it (the caller renames it)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 0o644)
    try:
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data):]
        os.fsync(fd)
    finally:
        os.close(fd)
