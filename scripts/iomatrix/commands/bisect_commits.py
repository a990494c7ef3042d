"""Down to the commit: ``nox -s bisect -- OP --between OLD NEW --cpython-repo PATH``.

PATH is a git clone of CPython. OLD and NEW are releases; their tags (``v3.13.15``,
``v3.15.0rc2``, as CPython names them) must be in the clone. The commits bisected are those on
NEW's first-parent line that OLD does not contain (``git rev-list --first-parent OLD..NEW``),
oldest first; NEW's own commit is the last. Each commit is built by the lineage's recipe (NEW's
build's, else OLD's, else ``lineage``; ``interpreters.commit_build``: the same configure
arguments as the provisioned builds, ccache when installed, every build cached by commit hash
in the iomatrix cache and reused, never redone), and the clone is only read: its HEAD, index,
branches and work tree stay as they were.

Each step of the search is one lockstep run of OP under OLD's build, NEW's build and the
middle commit's build (with an A/A twin of OLD and, unless ``--counters off``, the counting
pass): the middle commit is on NEW's side when its time is nearer NEW's than OLD's (on a log
scale: ``|log(mid/old)| > |log(new/mid)|``), else on OLD's side; the search keeps the half
where the change still lies, as ``git bisect`` does with good and bad, until the first commit
on NEW's side is next to the last on OLD's. A commit that does not build is skipped, as
``git bisect skip`` does: the commit nearest the middle that builds is taken instead, and the
answer names every commit that could not be judged.

The answer names the first commit where OP moves: its hash and subject, the issue and PR
numbers its message names (``gh-NNN``, ``bpo-NNN``; ``(#NNN)``, ``GH-NNN``), and the changelog
entries that carry them (the NEWS.d entries the commit adds, and the entries of NEW's
``Misc/NEWS`` read by iomatrix.analysing.news: of the clone at NEW when it holds one, else of
NEW's tarball in the cache). A commit's subject and body are data: escaped on the page,
never run, never a path.

Exit status: 0 the commit is named (commits that could not be judged are listed); 2 bad input
(not a git repository, a missing tag, an empty range, an unknown op; one line, nothing built
or written); 3 OLD's or NEW's commit does not build, or the skipped commits leave more than
one candidate (the answer names the range).
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
import time
from pathlib import Path

from iomatrix import cli
from iomatrix.commands import bisect
from iomatrix.interpreters import commit_build, discovery, probing
from iomatrix.interpreters.build_stages import StageError
from iomatrix.interpreters.sources import ProvisionError
from iomatrix.storing import outputs

MAX_NUMBERS = 12        # issue or PR numbers read from one message (a list longer is noise)
ISSUE_RE = re.compile(r"\b(gh|bpo)-([1-9][0-9]{0,6})\b")        # case as CPython writes them
PR_RE = re.compile(r"\(#([1-9][0-9]{0,6})\)|\bGH-([1-9][0-9]{0,6})\b")
NEWS_D = "Misc/NEWS.d/"
MAX_BLURB_BYTES = 20_000


@dataclasses.dataclass
class Node:
    """One commit of the line: its build, and what the search learnt of it."""
    index: int                  # on the line; -1 is OLD
    sha: str
    interp: discovery.Interpreter | None = None
    missing: str | None = None  # why it could not be judged (a failed build, --no-build)
    side: str | None = None     # "old" or "new" once judged
    versus_old: object = None   # its comparison against OLD in its run
    versus_new: object = None   # NEW's against it
    run_id: str | None = None

    @property
    def label(self) -> str | None:
        return self.interp.label if self.interp else None


# -- the numbers and the changelog --------------------------------------------------------

def numbers_in(text: str) -> tuple[list[str], list[str]]:
    """(issues ``gh-NNN``/``bpo-NNN``, PRs ``NNN``) that a commit message names, in order."""
    text = str(text)[:commit_build.MAX_MESSAGE_CHARS]
    issues = list(dict.fromkeys(f"{m[1]}-{m[2]}" for m in ISSUE_RE.finditer(text)))
    prs = list(dict.fromkeys(m[1] or m[2] for m in PR_RE.finditer(text)))
    return issues[:MAX_NUMBERS], prs[:MAX_NUMBERS]


def news_entries(repo, commit: commit_build.Commit, new_sha: str, new: str, issues: list[str],
                 log) -> tuple[list[tuple], str]:
    """([(where, number, text)], where the NEWS came from): the changelog entries that carry
    one of ``issues``: the NEWS.d entries the commit adds, then those of NEW's Misc/NEWS."""
    from iomatrix.analysing import news
    found = []
    for path in commit_build.files_added(repo, commit.sha):
        if not path.startswith(NEWS_D) or not path.endswith(".rst"):
            continue
        text = commit_build.file_at(repo, commit.sha, path, MAX_BLURB_BYTES)
        if text is None:
            continue
        named = next((n for n in issues if n.split("-")[1] in path or n in text), None)
        found.append(("added by the commit (" + path + ")", named or "", text.strip()))
    source = ""
    changelog = None
    text = commit_build.file_at(repo, new_sha, "Misc/NEWS")
    if text is not None:
        changelog = news.parse_news(text, f"Misc/NEWS at {commit_build.tag_of(new)}")
        source = f"Misc/NEWS of the clone at {commit_build.tag_of(new)}"
    else:
        changelog = news.changelog_for(new, say=log, fetch=False, write=False)
        source = f"Misc/NEWS of {new}'s tarball in the cache" if changelog else \
            f"no Misc/NEWS of {new} at hand (the clone has none at {commit_build.tag_of(new)})"
    if changelog is not None and issues:
        wanted = set(issues)
        for release in changelog.releases:
            for entry in release.entries:
                if entry.number in wanted:
                    found.append((f"{entry.release}, {entry.section}", entry.number, entry.text))
    return found, source


# -- building and timing ----------------------------------------------------------------------

def commit_label(sha: str, python_version: str) -> str:
    """``3.14.0a1-g97e14468eb``: the Python it reports and the commit; a valid label."""
    version = re.sub(r"[^A-Za-z0-9.]", "", str(python_version))[:16] or "python"
    return cli.checked_name(f"{version}-g{sha[:10]}", "label")


def interpreter_of(prefix: Path, sha: str) -> discovery.Interpreter:
    python = str(prefix / "bin" / "python3")
    info = discovery.with_build_facts(probing.probe(python), "provisioned")
    return discovery.Interpreter(commit_label(sha, info.get("version", "")), python,
                                 "provisioned", info)


def build_node(repo, node: Node, recipe, args, log) -> None:
    """Build (or reuse) the node's commit; on failure, the node says why."""
    say = lambda text: log(f"bisect: [{node.sha[:10]}] {text}")  # noqa: E731
    if args.no_build and commit_build.read_commit_build(node.sha, recipe) is None:
        node.missing = "not built: --no-build"
        return
    try:
        prefix = commit_build.build_commit(repo, node.sha, recipe, jobs=args.jobs, say=say)
        node.interp = interpreter_of(prefix, node.sha)
    except StageError as exc:
        # The answer is read on other machines: the log by its name in the cache, no path.
        node.missing = f"its build failed in {exc.stage} (log: commits/logs/{Path(exc.log).name})"
        say(f"{node.missing}: {cli.one_line(str(exc))[:300]}")
    except (ProvisionError, RuntimeError) as exc:
        say(cli.one_line(str(exc))[:300])
        text = str(exc)
        node.missing = text if text.startswith("its build failed") else \
            "its build failed, or the build does not start (the log above says why)"


def timed_run(nodes: list[Node], op: str, suite: str, args, run_id: str, log):
    """One lockstep run of ``op`` under the nodes' builds; (steps, overall, A/A, counts)."""
    points = [bisect.Point(n.sha[:10], interp=n.interp) for n in nodes]
    run_dir = bisect.time_points(None, points, op, suite, args, run_id, log)
    return bisect.measure_steps(run_dir, points, op, run_id)


def log_ratio(comparison) -> float | None:
    if comparison is None or not comparison.ratio or comparison.ratio <= 0 \
            or not math.isfinite(comparison.ratio):
        return None
    return math.log(comparison.ratio)


def judge(node: Node, steps) -> None:
    """The node's side: NEW's when its time is nearer NEW's than OLD's (log scale)."""
    node.versus_old, node.versus_new = steps[0].comparison, steps[1].comparison
    to_mid, mid_to_new = log_ratio(node.versus_old), log_ratio(node.versus_new)
    if to_mid is None or mid_to_new is None:
        node.missing = "not timed (its series is missing from the run)"
        return
    node.side = "new" if abs(to_mid) > abs(mid_to_new) else "old"


def pick(nodes: list[Node], lo: int, hi: int) -> Node | None:
    """The commit nearest the middle of (lo, hi) that is neither judged nor skipped."""
    middle = (lo + hi) / 2
    open_ = [n for n in nodes[lo + 1:hi] if n.missing is None and n.side is None]
    return min(open_, key=lambda n: (abs(n.index - middle), n.index)) if open_ else None


# -- the answer ---------------------------------------------------------------------------------

def commit_cell(repo, node: Node) -> str:
    from iomatrix.reporting.markdown import code, md
    info = commit_build.commit_info(repo, node.sha)
    return f"{code(node.sha[:10])} {md(info.subject[:120])}"


def answer_text(repo, op, old, new, old_sha, new_sha, nodes, lo, hi, overall, aa, args,
                runs: list[str], log) -> tuple[str, bool]:
    """(the answer's markdown, whether it names one commit)."""
    from iomatrix.analysing import news
    from iomatrix.reporting import rst
    from iomatrix.reporting.markdown import code, fmt_ratio, md
    old_tag, new_tag = commit_build.tag_of(old), commit_build.tag_of(new)
    lines = [f"## Commit bisect: {code(op)} between {md(old_tag)} and {md(new_tag)}", ""]
    if overall is not None:
        direction = "slower" if overall.ratio >= 1 else "faster"
        lines.append(f"{md(old_tag)} -> {md(new_tag)}: {fmt_ratio(overall)} ({direction}; new "
                     f"time / old time, {args.profile} profile, in each step's lockstep run).")
        if overall.low is None:
            lines.append(f"No intervals: {overall.n_a} round(s) cannot test significance (the "
                         "quick profile's 8 can); each commit is put on the side whose time "
                         "its own is nearer.")
        elif not overall.significant:
            lines.append("The ends did not move significantly in the first run: the commit "
                         "below is where the larger share of a move within the noise lies.")
    line = nodes[:-1]    # OLD's node is nodes[-1] (index -1)
    unjudged = [n for n in line[lo + 1:hi]]
    narrowed = hi - lo == 1 and hi < len(line)
    if narrowed:
        first = line[hi]
        info = commit_build.commit_info(repo, first.sha)
        issues, prs = numbers_in(f"{info.subject}\n{info.body}")
        lines += ["", f"**The op moves first in commit {code(first.sha)}: "
                      f"{md(info.subject[:200])}**", ""]
        if first.versus_old is not None:
            lines.append(f"- Against {md(old_tag)}: {fmt_ratio(first.versus_old)}; "
                         f"{md(new_tag)} against it: {fmt_ratio(first.versus_new)} (run "
                         f"{code(first.run_id)}).")
        elif first.sha == new_sha:
            lines.append(f"- It is {md(new_tag)}'s own commit, the last of the line.")
        previous = line[lo] if lo >= 0 else None
        lines.append(f"- The commit before it, on {md(old_tag)}'s side: "
                     + (commit_cell(repo, previous) if previous else f"{md(old_tag)} itself")
                     + ".")
        links = [f"[{md(n)}]({md(news.url_of(n))})" if news.url_of(n) else md(n) for n in issues]
        lines.append("- Issues named in its message: " + (", ".join(links) or "none") + ".")
        pr_links = [f"[#{md(n)}](https://github.com/python/cpython/pull/{md(n)})" for n in prs]
        lines.append("- Pull requests named in its message: " + (", ".join(pr_links) or "none")
                     + ".")
        entries, source = news_entries(repo, info, new_sha, new, issues, log)
        if entries:
            lines += ["", f"The changelog entries that carry it ({md(source)}):", ""]
            for where, number, text in entries[:6]:
                lines.append(f"- {md(number) + ' ' if number else ''}({md(where)}): "
                             f"{rst.render(text, 400)}")
        elif issues:
            lines.append(f"- No changelog entry carries {md(', '.join(issues))} ({md(source)}).")
        else:
            lines.append("- No changelog entry can be matched: the message names no issue.")
    else:
        ends = line[lo + 1:hi + 1] if hi < len(line) else line[lo + 1:]
        lines += ["", f"**Not narrowed to one commit: the change lies in the {len(ends)} commits "
                      f"after {code(line[lo].sha[:10]) if lo >= 0 else md(old_tag)} up to "
                      f"{code(line[hi].sha[:10]) if hi < len(line) else md(new_tag)}; "
                      f"{len(unjudged)} of them could not be judged.**"]
    lines += ["", f"{len(line)} commits on {md(new_tag)}'s first-parent line after "
                  f"{md(old_tag)}; {len(runs)} lockstep run{'s' if len(runs) != 1 else ''}"
                  + (f" ({', '.join(code(r) for r in runs)})" if runs else "") + ".", "",
              "| commit | subject | against OLD | NEW against it | side |", "|:--|:--|--:|--:|:--|"]
    for node in sorted((n for n in line if n.side or n.missing), key=lambda n: n.index):
        info = commit_build.commit_info(repo, node.sha)
        side = {"old": f"{md(old_tag)}'s", "new": f"{md(new_tag)}'s"}.get(node.side, "—")
        lines.append(f"| {code(node.sha[:10])} | {md(info.subject[:100])} | "
                     f"{fmt_ratio(node.versus_old)} | {fmt_ratio(node.versus_new)} | "
                     f"{side if node.side else md(node.missing or '')} |")
    skipped = [n for n in line if n.missing]
    if skipped:
        lines += ["", "Could not be judged (skipped, as `git bisect skip` does):"]
        lines += [f"- {code(n.sha[:10])} {md(commit_build.commit_info(repo, n.sha).subject[:100])}:"
                  f" {md(n.missing)}" for n in skipped]
    if aa is not None:
        lines += ["", f"A/A check ({md(old_tag)} against itself in the first run): "
                      f"{fmt_ratio(aa)}."]
    return "\n".join(lines) + "\n", narrowed


# -- the command ------------------------------------------------------------------------------

@cli.main_guard
def main(argv, log=None) -> int:
    """``nox -s bisect``'s entry: the commit bisect with --cpython-repo, else the release
    bisect (``bisect.main``). One parser, bisect's, for both."""
    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    args = bisect.parser().parse_args(argv)
    if args.cpython_repo is None:
        return bisect.main(argv, log=log)
    if args.jobs < 1:
        raise bisect.BisectError("--jobs must be at least 1")
    return commit_bisect(args, log)


def commit_bisect(args, log) -> int:
    """The commit bisect of ``args`` (bisect's parser, with --cpython-repo)."""
    started = time.monotonic()
    cli.checked(args.op, "op", "OP")
    if args.out is not None:
        bisect.check_answer_path(args.out)
    old, new = args.between
    for value, what in ((old, "OLD"), (new, "NEW")):
        cli.checked(commit_build.tag_of(value), "label", what)
    repo = commit_build.open_repo(args.cpython_repo)
    old_sha = commit_build.resolve_tag(repo, old, "OLD")
    new_sha = commit_build.resolve_tag(repo, new, "NEW")
    if old_sha == new_sha:
        raise bisect.BisectError(f"empty range: {commit_build.tag_of(old)} and "
                                 f"{commit_build.tag_of(new)} are the same commit")
    shas = commit_build.commits_between(repo, old_sha, new_sha)
    if not shas or shas[-1] != new_sha:
        raise bisect.BisectError(f"no commits from {commit_build.tag_of(old)} to "
                                 f"{commit_build.tag_of(new)} on {commit_build.tag_of(new)}'s "
                                 "line (give them older first)")
    interpreters = discovery.discover()
    recipe = bisect.lineage_recipe(bisect.find_build(interpreters, new)
                                   or bisect.find_build(interpreters, old))
    # The ops are listed by the newest CPython 3 here, before anything is built: an unknown
    # op is bad input, found in seconds.
    lister = max((i for i in interpreters if i.ok and i.implementation == "cpython"
                  and i.version_info[:1] == (3,)), key=lambda i: i.version_info, default=None)
    if lister is None:
        raise bisect.BisectError("no CPython 3 here to list the ops with")
    ops = bisect.list_valid_ops(lister, args.profile, log)
    if args.op not in ops:
        raise bisect.BisectError(f"unknown op {args.op!r}; valid: {', '.join(sorted(ops))}")
    suite = ops[args.op]
    run_id = args.run_id or bisect.default_run_id(args.op, old, new)
    out = bisect.answer_path(args, f"{run_id}-1")
    bisect.check_answer_path(out)
    outputs.check_writable(Path(args.results_dir), f"--results-dir {args.results_dir}")
    budget = len(shas).bit_length() + len(shas) + 1   # passes, with every commit skipped
    for k in range(1, budget + 1):
        if os.path.lexists(Path(args.results_dir) / f"{run_id}-{k}"):
            raise bisect.BisectError(f"run {run_id}-{k} exists in {args.results_dir}; a "
                                     "bisection makes new runs: give another --run-id")
    log(f"bisect: {len(shas)} commits from {commit_build.tag_of(old)} to "
        f"{commit_build.tag_of(new)} in {args.cpython_repo}; recipe {recipe.name}")

    line = [Node(i, sha) for i, sha in enumerate(shas)]
    old_node = Node(-1, old_sha)
    for node in (old_node, line[-1]):
        build_node(repo, node, recipe, args, log)
        if node.interp is None:
            print(f"bisect: {commit_build.tag_of(old if node is old_node else new)} "
                  f"({node.sha[:10]}) cannot be judged against: {node.missing}", file=sys.stderr)
            return cli.EXIT_INTERNAL_ERROR
    new_node = line[-1]
    new_node.side = "new"
    lo, hi = -1, len(line) - 1
    runs, overall, aa = [], None, None
    while hi - lo > 1:
        node = pick(line, lo, hi)
        if node is None:
            break      # every commit left between is skipped: not narrowed
        build_node(repo, node, recipe, args, log)
        if node.interp is None:
            continue
        run = f"{run_id}-{len(runs) + 1}"
        steps, whole, twin, _ = timed_run([old_node, node, new_node], args.op, suite, args, run,
                                          log)
        runs.append(run)
        node.run_id = run
        if overall is None:
            overall, aa = whole, twin
        judge(node, steps)
        if node.side == "new":
            hi = node.index
        elif node.side == "old":
            lo = node.index
    if not runs:   # nothing between OLD and NEW to judge: the ends alone, for the move
        run = f"{run_id}-1"
        steps, overall, aa, _ = timed_run([old_node, new_node], args.op, suite, args, run, log)
        runs.append(run)
        new_node.versus_old, new_node.run_id = overall, run
    text, narrowed = answer_text(repo, args.op, old, new, old_sha, new_sha, line + [old_node],
                                 lo, hi, overall, aa, args, runs, log)
    text += (f"\nWall time: {time.monotonic() - started:.0f} s; "
             f"{bisect.run_place(runs[0], args.results_dir)} ..\n")
    print(cli.terminal_text(text))
    try:
        outputs.write_outputs({out: text}, "--out", replaceable=lambda path: False)
    except cli.BadInput as exc:
        raise cli.BadInput(f"{exc} (the answer is printed above)") from None
    log(cli.terminal_text(f"bisect: wrote {out}"))
    return cli.EXIT_OK if narrowed else cli.EXIT_INTERNAL_ERROR
