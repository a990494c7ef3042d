"""See a run's report as GitHub shows it, before publishing it.

    python scripts/preview.py [--run-id ID | PAGE.md] [--out DIR] [--screenshot]

Renders the pages of a run (built as ``scripts/report.py`` builds them), or one markdown page
and the pages beside it, to HTML the way GitHub renders markdown: markdown-it-py's GFM-like
preset (tables; of raw HTML only the tags the report itself writes, without attributes but an
id, the rest shown as text), headings with GitHub's ids, in a page of GitHub's column (1012 px,
its font stack at 16 px, table cells padded 6px 13px). The HTML goes to DIR (default
/tmp/iomatrix-preview/<run-id>/), never into results/ or reports/: DIR is absent, empty or a
preview this tool wrote, and is replaced whole (built beside it, then renamed) or not at all. A
page loads only images inside the pages' own directory tree (no file:// or absolute paths, no
symbolic links), and a linked page is never followed. With ``--screenshot``, Debian's chromium
draws the main page headless at 1280x900 as a PNG and lays out every rendered page to measure
it: its height in screens of 900 px, what the first screen shows, which table cells wrap (more
lines than their ``<br>`` ask for) and which tables are wider than the column.
"""
from __future__ import annotations

import dataclasses
import html
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from iomatrix import cli
from iomatrix.analysing import analysis
from iomatrix.reporting import pages
from iomatrix.storing import contract, outputs, store
from iomatrix.reporting.markdown import anchor
from iomatrix.paths import REPO_ROOT

DEFAULT_OUT = Path("/tmp/iomatrix-preview")
CHROMIUM = Path("/usr/bin/chromium")
WINDOW = (1280, 900)
CHROMIUM_TIMEOUT = 120
WRAPPED_EXAMPLES = 3      # wrapped cells quoted per table
MAX_IMAGE_BYTES = 64 * 1024 * 1024   # a report's figure is a few hundred KiB

# GitHub's markdown-body, as far as the layout goes: the column, the font, tables and code.
STYLE = """
body { margin: 0; background: #fff; }
.markdown-body { box-sizing: content-box; max-width: 1012px; margin: 0 auto; padding: 32px 16px;
  font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial,
  sans-serif, "Apple Color Emoji", "Segoe UI Emoji"; font-size: 16px; line-height: 1.5;
  color: #1f2328; word-wrap: break-word; }
.markdown-body h1, .markdown-body h2 { padding-bottom: .3em; border-bottom: 1px solid #d1d9e0b3; }
.markdown-body h1 { font-size: 2em; } .markdown-body h2 { font-size: 1.5em; }
.markdown-body h3 { font-size: 1.25em; }
.markdown-body h1, .markdown-body h2, .markdown-body h3, .markdown-body h4 {
  margin-top: 24px; margin-bottom: 16px; font-weight: 600; line-height: 1.25; }
.markdown-body p, .markdown-body ul, .markdown-body ol, .markdown-body table,
.markdown-body pre, .markdown-body details { margin-top: 0; margin-bottom: 16px; }
.markdown-body table { display: block; width: max-content; max-width: 100%; overflow: auto;
  border-spacing: 0; border-collapse: collapse; }
.markdown-body td, .markdown-body th { padding: 6px 13px; border: 1px solid #d1d9e0;
  white-space: normal; }
.markdown-body th { font-weight: 600; }
.markdown-body tr:nth-child(2n) { background-color: #f6f8fa; }
.markdown-body code { padding: .2em .4em; margin: 0; font-size: 85%; white-space: break-spaces;
  background-color: #818b981f; border-radius: 6px;
  font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono",
  monospace; }
.markdown-body pre { padding: 16px; overflow: auto; font-size: 85%; background: #f6f8fa; }
.markdown-body pre code { padding: 0; background: transparent; white-space: pre; }
.markdown-body img { max-width: 100%; box-sizing: content-box; }
.markdown-body summary { cursor: pointer; display: list-item; }
"""

# Run by chromium once the page and its images have loaded; its answer lands in the DOM,
# which --dump-dom prints. A cell's lines are counted from its text's own line boxes
# (not from the cell's height, which is its row's).
MEASURE_JS = """
window.addEventListener('load', () => {
  // A screen is 900 px however tall the headless window's viewport is said to be (--dump-dom
  // reports 813 for a window of 900).
  const SCREEN_PX = %d;
  const body = document.querySelector('.markdown-body');
  const column = body.clientWidth - parseFloat(getComputedStyle(body).paddingLeft)
    - parseFloat(getComputedStyle(body).paddingRight);
  const result = {height: document.documentElement.scrollHeight, column: column,
                  wrapped: [], wide: [], first_screen: []};
  const headingOf = (el) => {
    let node = el;
    while (node) {
      let prev = node.previousElementSibling;
      while (prev) {
        if (/^H[1-6]$/.test(prev.tagName)) return prev.textContent.trim();
        prev = prev.previousElementSibling;
      }
      node = node.parentElement;
      if (!node || node === body) break;
    }
    return '';
  };
  // The page's length and first screen as a reader first sees them (collapsed sections
  // closed); the tables as they lay out once opened.
  body.querySelectorAll(':scope > *').forEach((el) => {
    const box = el.getBoundingClientRect();
    if (box.top + window.scrollY < SCREEN_PX && box.height > 0) {
      const rows = Array.from(el.querySelectorAll('tbody tr'));
      const text = el.tagName === 'TABLE'
        ? 'a table of ' + rows.length + ' rows, ' + rows.filter(
            (r) => r.getBoundingClientRect().bottom + window.scrollY <= SCREEN_PX
          ).length + ' of them whole on the first screen'
        : el.innerText.replace(/\\s+/g, ' ').slice(0, 120);
      result.first_screen.push(el.tagName.toLowerCase() + ': ' + text);
    }
  });
  document.querySelectorAll('details').forEach((d) => { d.open = true; });
  document.querySelectorAll('.markdown-body table').forEach((table, index) => {
    const heading = headingOf(table);
    if (table.scrollWidth > table.clientWidth + 1) {
      // Each column's width and its widest line, to say what makes the table wide.
      const columns = Array.from(table.querySelectorAll('thead th')).map(
        (th) => [th.innerText.replace(/\\s+/g, ' ').trim().slice(0, 40), Math.round(th.offsetWidth), 0, '']);
      table.querySelectorAll('tr').forEach((row) => {
        Array.from(row.children).forEach((cell, i) => {
          if (i >= columns.length) return;
          cell.childNodes.forEach((node) => {
            const range = document.createRange();
            range.selectNodeContents(node);
            const width = range.getBoundingClientRect().width;
            if (width > columns[i][2] && node.textContent.trim()) {
              columns[i][2] = width;
              columns[i][3] = node.textContent.replace(/\\s+/g, ' ').trim().slice(0, 50);
            }
          });
        });
      });
      result.wide.push({table: index, heading: heading, width: table.scrollWidth,
                        columns: columns});
    }
    table.querySelectorAll('th, td').forEach((cell) => {
      const range = document.createRange();
      range.selectNodeContents(cell);
      const tops = [];
      for (const rect of range.getClientRects()) {
        if (rect.width < 1 || rect.height < 1) continue;
        if (!tops.some((top) => Math.abs(top - rect.top) < rect.height / 2)) tops.push(rect.top);
      }
      const asked = cell.querySelectorAll('br').length + 1;
      if (tops.length > asked) {
        result.wrapped.push({table: index, heading: heading, lines: tops.length,
                             text: cell.innerText.replace(/\\s+/g, ' ').slice(0, 80)});
      }
    });
  });
  const out = document.createElement('pre');
  out.id = 'iomatrix-measure';
  out.textContent = JSON.stringify(result);
  document.body.appendChild(out);
});
"""


@dataclasses.dataclass
class Measure:
    """What chromium saw of one page at 1280x900."""
    height: int
    column: float
    wrapped: list          # {table, heading, lines, text}: cells with more lines than asked
    wide: list             # {table, heading, width, columns}: tables wider than the column
    first_screen: list     # the page's top-level blocks that start on the first screen

    @property
    def screens(self) -> float:
        return self.height / WINDOW[1]


# -- markdown to GitHub-like HTML -----------------------------------------------------------

# The raw HTML the report's own pages write (pages.details, compare's sections, anchors on
# rows, <br> in cells); any other tag, or one of these with any other attribute, is shown as
# text. A name that reached a page unescaped still cannot run, load or restyle anything.
ALLOWED_TAG = re.compile(
    r"<(?:br ?/?|/?(?:details|summary|code|sup|sub|b|i|em|strong|a)|details open"
    r'|a id="[A-Za-z0-9_-]{1,200}")>'
    r"|<!--(?:(?!--)[^<>])*-->")
ANY_TAG = re.compile(r"(<[^<>]*>)")


def safe_html(raw: str) -> str:
    """Raw HTML from a page with every tag that is not ALLOWED_TAG escaped, and every < or >
    outside a tag too (entities stay entities: they are text)."""
    out = []
    for piece in ANY_TAG.split(raw):
        if ALLOWED_TAG.fullmatch(piece):
            out.append(piece)
        else:
            out.append(piece.replace("<", "&lt;").replace(">", "&gt;"))
    return "".join(out)


def image_inside(src: str, page_dir: Path | None, root: Path | None) -> Path | None:
    """The file a page's image ``src`` names, when it may be shown: a relative path (no
    scheme, no leading / or \\, no query or escapes), from ``page_dir``, that stays inside
    ``root`` as written, through no symbolic link, to a regular file; else None."""
    if page_dir is None or root is None or not src \
            or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", src) \
            or src.startswith(("/", "\\")) or any(c in src for c in "?#\\%"):
        return None
    root = Path(os.path.normpath(os.path.abspath(root)))
    path = Path(os.path.normpath(os.path.abspath(page_dir / src)))
    if root not in path.parents:
        return None
    step = root
    for part in path.relative_to(root).parts:
        step = step / part
        if step.is_symlink():
            return None
    return path if path.is_file() and not hard_linked(path) else None


def hard_linked(path: Path) -> bool:
    """A file with more than one name: another name may lie anywhere on the file system (a
    hard link to a file outside the pages' tree), so it is never shown or copied."""
    try:
        return os.lstat(path).st_nlink > 1
    except OSError:
        return False


def render_markdown(text: str, page_dir: Path | None = None, root: Path | None = None) -> str:
    """GitHub-flavoured markdown to HTML: markdown-it-py's GFM-like preset (tables,
    strikethrough; no autolinks: they change no layout), headings with ids. Raw HTML passes
    only as safe_html lets it; an image shows only if image_inside allows its file (relative
    to ``page_dir``, inside ``root``), else its alt text shows as text."""
    from markdown_it import MarkdownIt
    parser = MarkdownIt("gfm-like", {"linkify": False})

    def raw_html(renderer, tokens, idx, options, env):
        return safe_html(tokens[idx].content)

    def image(renderer, tokens, idx, options, env):
        token = tokens[idx]
        alt = renderer.renderInlineAsText(token.children or [], options, env)
        src = token.attrGet("src") or ""
        if image_inside(src, page_dir, root) is None:
            linked = page_dir is not None and root is not None and "://" not in src and \
                os.path.isfile(page_dir / src) and hard_linked(page_dir / src)
            return html.escape(f"[image not shown{' (a hard-linked file)' if linked else ''}: "
                               f"{alt}]")
        token.attrSet("alt", alt)
        return renderer.renderToken(tokens, idx, options, env)

    parser.add_render_rule("html_block", raw_html)
    parser.add_render_rule("html_inline", raw_html)
    parser.add_render_rule("image", image)
    return heading_ids(parser.render(text))


def heading_ids(body: str) -> str:
    """Give each heading the id GitHub gives it (``## Release steps`` -> ``release-steps``,
    repeated ones ``-1``, ``-2``), so ``#fragment`` links resolve as they do there."""
    used: dict = {}

    def add(match):
        level, inner = match.group(1), match.group(2)
        slug = anchor(html.unescape(re.sub(r"<[^>]+>", "", inner)))
        n = used.get(slug, 0)
        used[slug] = n + 1
        slug = slug if n == 0 else f"{slug}-{n}"
        return f'<h{level} id="{slug}">{inner}</h{level}>'
    return re.sub(r"<h([1-6])>(.*?)</h\1>", add, body, flags=re.S)


def page_html(title: str, body: str, script: str = "") -> str:
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style>"
            + (f"<script>{script}</script>" if script else "")
            + f"</head><body><article class=\"markdown-body\">\n{body}</article></body></html>\n")


def local_links(body: str) -> str:
    """Links between the pages point at their HTML previews (``x.md#y`` -> ``x.html#y``)."""
    return re.sub(r'href="([^":#]+)\.md(#[^"]*)?"',
                  lambda m: f'href="{m.group(1)}.html{m.group(2) or ""}"', body)


def copy_images(body: str, page_dir: Path, source_root: Path, target_root: Path) -> None:
    """The images a page shows (image_inside allowed each), copied from ``source_root`` to
    the same place under ``target_root``, for a page previewed away from its directory: its
    relative paths then resolve there, and no page ever loads a file:// URL."""
    for src in re.findall(r'<img src="([^"]+)"', body):
        found = image_inside(html.unescape(src), page_dir, source_root)
        if found is None:
            continue
        copy = target_root / found.relative_to(Path(os.path.abspath(source_root)))
        try:
            # Opened without following a link, and checked on the open file: what is copied
            # is the regular, singly linked file image_inside looked at.
            fd = contract.open_regular(str(found))
            try:
                if os.fstat(fd).st_nlink > 1:
                    print(cli.terminal_text(f"preview: {found}: a hard-linked file; not "
                                            "copied"), file=sys.stderr)
                    continue
                with os.fdopen(os.dup(fd), "rb") as source:
                    data = source.read(MAX_IMAGE_BYTES + 1)
            finally:
                os.close(fd)
            if len(data) > MAX_IMAGE_BYTES:
                raise cli.BadInput(f"{found}: larger than {MAX_IMAGE_BYTES:,} bytes; not an "
                                   "image of a report")
            copy.parent.mkdir(parents=True, exist_ok=True)
            contract.atomic_write_bytes(str(copy), data)
        except (OSError, contract.UnsafeFileError) as exc:
            message = f"cannot copy {found} to {copy}: {getattr(exc, 'strerror', None) or exc}"
            raise (outputs.write_failure(exc, message) if isinstance(exc, OSError)
                   else cli.BadInput(message)) from None


# -- where a preview may go -------------------------------------------------------------

def check_out_dir(out: Path, results_dir: Path) -> Path:
    """A preview directory outside the repository's results/ and reports/ and any results
    directory given (a preview is not a published report), that is absent, empty or a
    preview this tool wrote (its marker names every file in it: storing/outputs.py), never a
    symbolic link, in a place that takes a new directory. A preview replaces it whole."""
    out = Path(out)
    outputs.check_link_name(out, "--out")
    if os.path.lexists(out) and (out.is_symlink() or not out.is_dir()):
        raise cli.BadInput(f"--out {out}: exists and is not a directory (a symbolic link is "
                           "not followed)")
    resolved = out.resolve()
    for kept in (REPO_ROOT / "results", REPO_ROOT / "reports", Path(results_dir)):
        kept = kept.resolve()
        if resolved == kept or kept in resolved.parents:
            raise cli.BadInput(f"--out {out}: inside {kept}, where runs and published reports "
                               "are kept; give a directory elsewhere (default "
                               f"{DEFAULT_OUT}/<run-id>)")
    store.check_output(out / "latest" / "page.html", "--out")   # not in a run's results
    if out.is_dir() and any(True for _ in os.scandir(out)):
        problem = outputs.owner_problem(out, outputs.PREVIEW)
        if problem:
            raise cli.BadInput(f"--out {out}: {problem}; a preview replaces only an empty "
                               "directory or a preview it wrote: give a new directory")
    outputs.check_writable(out.parent, f"--out {out}")
    return out


# -- building the pages -------------------------------------------------------------------

def write_text(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        store.atomic_write_text(path, text)
    except OSError as exc:   # a full disk is exit 3 (the machine's), a read-only place 2
        raise outputs.write_failure(exc, f"cannot write {path}: {exc.strerror or exc}") \
            from None


def the_run(results_dir: Path, run_id: str | None):
    run = store.Run(results_dir, run_id) if run_id else store.newest_run(results_dir)
    if not (run.path / store.MANIFEST).exists():
        raise cli.BadInput(f"no run {run.run_id} in {results_dir} (no {store.MANIFEST})")
    return run


def run_pages(run, out: Path) -> tuple[Path, list]:
    """Build a run's pages (markdown and figures) into the directory ``out`` and render
    each; returns (main HTML, [HTML files])."""
    data = analysis.load_run(run)
    built = pages.build_pages(data, figures_dir=out / "figures" / run.run_id,
                              figures_link=f"figures/{run.run_id}")
    write_text(out / "latest.md", built.main)
    for name, text in {**built.suites, **built.others}.items():
        write_text(out / "latest" / f"{name}.md", text)
    rendered = [render_file(out / "latest.md", out / "latest.html", out, out)]
    rendered += [render_file(out / "latest" / f"{name}.md", out / "latest" / f"{name}.html",
                             out, out)
                 for name in {**built.suites, **built.others}]
    return rendered[0], rendered


def readable_page(source: Path) -> None:
    """A page to render: a regular .md file, not a symbolic link (a link could show any file
    of the machine as a page)."""
    if source.is_symlink() or not source.is_file():
        raise cli.BadInput(f"{source}: not a regular markdown file (a symbolic link is not "
                           "followed)")


def render_file(source: Path, target: Path, source_root: Path, target_root: Path,
                script: str = "") -> Path:
    """One markdown page to one HTML page; its images are those inside ``source_root``
    (copied to the same place under ``target_root`` when that is elsewhere)."""
    readable_page(source)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise cli.BadInput(f"cannot read {source}: {getattr(exc, 'strerror', None) or exc}")
    body = local_links(render_markdown(text, source.parent, source_root))
    if Path(source_root).resolve() != Path(target_root).resolve():
        copy_images(body, source.parent, source_root, target_root)
    title = next((line[2:] for line in text.splitlines() if line.startswith("# ")), source.name)
    write_text(target, page_html(title, body, script))
    return target


def check_page(page: Path) -> None:
    if page.suffix != ".md" or page.is_symlink() or not page.is_file():
        raise cli.BadInput(f"{page}: not a markdown file (give PAGE.md or --run-id ID; a "
                           "symbolic link is not followed)")


def file_pages(page: Path, out: Path) -> tuple[Path, list]:
    """A given markdown page, and the pages in its stem directory (a report's suite pages),
    rendered into the directory ``out``; every page is checked before the first is written."""
    check_page(page)
    detail = page.parent / page.stem
    others = sorted(detail.glob("*.md")) if detail.is_dir() and not detail.is_symlink() else []
    for other in others:
        readable_page(other)
    root = page.parent
    rendered = [render_file(page, out / f"{page.stem}.html", root, out)]
    rendered += [render_file(p, out / page.stem / f"{p.stem}.html", root, out) for p in others]
    return rendered[0], rendered


# -- chromium ---------------------------------------------------------------------------------

def chromium_command(*args: str) -> list[str]:
    if not CHROMIUM.exists():
        raise cli.BadInput(f"--screenshot needs Debian's chromium at {CHROMIUM} "
                           "(apt-get install chromium); nothing was written")
    return [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--window-size={WINDOW[0]},{WINDOW[1]}", "--allow-file-access-from-files",
            *args]


def run_chromium(args: list[str]) -> str:
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise cli.BadInput(f"chromium did not finish within {CHROMIUM_TIMEOUT} s")
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise cli.BadInput(f"chromium failed (exit {done.returncode}): {tail}")
    return done.stdout


def measure(page: Path) -> Measure:
    """Lay ``page`` out in chromium at 1280x900 and measure it (MEASURE_JS)."""
    command = chromium_command("--virtual-time-budget=10000", "--dump-dom")
    source = page.read_text(encoding="utf-8")
    # A copy that carries the measuring script, beside the page so its images load.
    with tempfile.NamedTemporaryFile("w", suffix=".html", dir=page.parent, delete=False,
                                     prefix=".measure-", encoding="utf-8") as copy:
        copy.write(source.replace("</head>", f"<script>{MEASURE_JS % WINDOW[1]}</script></head>",
                                  1))
    try:
        dom = run_chromium(command + [Path(copy.name).as_uri()])
    finally:
        Path(copy.name).unlink(missing_ok=True)
    found = re.search(r'<pre id="iomatrix-measure">(.*?)</pre>', dom, flags=re.S)
    if not found:
        raise cli.BadInput(f"chromium laid out {page} but the measuring script gave no answer")
    return Measure(**json.loads(html.unescape(found.group(1))))


def screenshot(page: Path, png: Path) -> Path:
    run_chromium(chromium_command(f"--screenshot={png}", "--virtual-time-budget=10000",
                                  page.resolve().as_uri()))
    return png


def describe(page: Path, found: Measure) -> list[str]:
    lines = [f"{page}: {found.height} px tall, {found.screens:.1f} screens of {WINDOW[1]} px "
             f"at {WINDOW[0]} px (column {found.column:.0f} px)"]
    lines += ["  first screen: " + item for item in found.first_screen]
    if found.wide:
        for t in found.wide:
            lines.append(f"  table wider than the column: #{t['table']} under \"{t['heading']}\" "
                         f"({t['width']} px)")
            columns = t.get("columns") or []
            if columns:
                lines += [f"    column {name or '(no header)'!r}: {width} px, its widest line "
                          f"{widest!r} ({line:.0f} px)" for name, width, line, widest in columns]
    else:
        lines.append("  no table wider than the column")
    tables: dict = {}
    for cell in found.wrapped:
        tables.setdefault((cell["table"], cell["heading"]), []).append(cell)
    for (index, heading), cells in tables.items():
        lines.append(f"  table #{index} under \"{heading}\": {len(cells)} cell(s) wrap, e.g. "
                     + "; ".join(f"{c['text']!r} ({c['lines']} lines)"
                                 for c in cells[:WRAPPED_EXAMPLES]))
    if not tables:
        lines.append("  no table cell wraps")
    return lines


@cli.main_guard
def main(argv=None) -> int:
    parser = cli.Parser(prog="nox -s preview --", description=__doc__.split("\n")[0])
    parser.add_argument("page", nargs="?", type=Path, default=None,
                        help="a report's markdown page (default: a run's pages, --run-id)")
    parser.add_argument("--run-id", type=cli.run_id, default=None,
                        help="the run whose pages to build (default: the newest)")
    parser.add_argument("--results-dir", type=cli.results_dir, default=REPO_ROOT / "results")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"directory of the HTML (default: {DEFAULT_OUT}/<run-id>)")
    parser.add_argument("--screenshot", action="store_true",
                        help="also lay the main page out in chromium at 1280x900: a PNG of "
                             "the first screen, its length in screens, wrapped cells, wide "
                             "tables")
    args = parser.parse_args(argv)
    if args.page and args.run_id:
        raise cli.BadInput("give either PAGE.md or --run-id, not both")
    if args.screenshot:
        chromium_command()          # before any work: a clear error without chromium
    # Where the preview goes is checked before any work; it is built in a hidden directory
    # beside that place and put there whole (storing/outputs.py), or nothing is written.
    if args.page:
        check_page(args.page)
        out = check_out_dir(args.out or DEFAULT_OUT / args.page.stem, args.results_dir)
    else:
        run = the_run(args.results_dir, args.run_id)
        out = check_out_dir(args.out or DEFAULT_OUT / run.run_id, args.results_dir)
    lines = []
    with outputs.staged_directory(out) as staged:
        if args.page:
            main_page, rendered = file_pages(args.page, staged)
        else:
            main_page, rendered = run_pages(run, staged)

        def final(path: Path) -> Path:
            return out / Path(path).relative_to(staged)
        lines += [f"preview: wrote {final(path)}" for path in rendered]
        if args.screenshot:
            png = screenshot(main_page, main_page.with_suffix(".png"))
            lines.append(f"preview: wrote {final(png)} (the first screen)")
            for path in rendered:
                lines += [line.replace(str(staged), str(out))
                          for line in describe(path, measure(path))]
        with outputs.swapping(f"--out {out}") as swap:
            swap.put_directory(staged, out, outputs.PREVIEW)
    for line in lines:
        print(cli.terminal_text(line))
    return 0
