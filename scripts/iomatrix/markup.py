"""Names and strings read from files, made text on a markdown page: md() and code(); in a
figure: plot_text().

Every page and the PR comment state a name (an op, a suite, a label, a series file, a host,
a manifest string, a skip reason, a syscall or function name, an error tail) only through
one of these. They sit in the base stage so that analysing's counts tables use them too.
"""
from __future__ import annotations

import html
import re
import unicodedata
import urllib.parse


# A name or string read from a file is text on every page, never markup. Two functions do it:
# md() for text (a table cell or prose) and code() for a name shown as code; every name a page
# states goes through one of them. They escape whatever markdown or HTML could act on, however
# the string is placed:
#   - line breaks (\n, \r, U+0085, U+2028/9) become spaces, so no string starts a line: no
#     heading, list, quote, code fence or table row can begin inside one;
#   - other control and format characters (an ANSI escape, a bidi override, a zero-width
#     space, a lone surrogate from an undecodable file name) are shown as \x1b, \u202e;
#   - < > & become entities (also right inside the report's own HTML, a <summary> line);
#   - ASCII punctuation markdown acts on is backslash-escaped: \ ` * _ [ ] | ~ $ (emphasis,
#     code, links and images, table cells, strikethrough, GitHub's math). ( ) ! : need no
#     escape: a link or an image needs a [ and an autolink a <, both escaped;
#   - what acts only at the start of a line is escaped where a string stands first (prose
#     that opens with a name): a leading # + - = (heading, list, rule, setext line), "1." or
#     "1)" before a space (ordered list), leading spaces (an indented code block).
BREAKS = "\n\r\x0b\x0c\x85\u2028\u2029\t"
MARKDOWN_PUNCTUATION = "\\`*_[]|~$"
LINE_START = re.compile(r"^(?:[#+=-]|\d{1,9}(?=[.)](?:\s|$)))")
CODE_UNSAFE = set("`|<>&")      # what a code span cannot hold as written everywhere


def visible(text) -> str:
    """``text`` with line breaks as spaces and every other control or format character
    shown as its escape (``\x1b``, ``\u202e``): nothing invisible or terminal-active stays."""
    out = []
    for char in str(text):
        if char in BREAKS:
            out.append(" ")
        elif unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn"):
            out.append(repr(char)[1:-1] if ord(char) < 0x10000 or not char.isprintable()
                       else f"\\U{ord(char):08x}")
        else:
            out.append(char)
    return "".join(out)


def md(text) -> str:
    """A string read from a file as markdown text, for a table cell or prose: it shows as
    written (its control characters escaped) and acts as nothing (see above)."""
    text = visible(text)
    text = "".join("\\" + c if c in MARKDOWN_PUNCTUATION else c for c in text)
    text = html.escape(text, quote=False)
    text = re.sub(r"^ +", lambda spaces: "&#32;" * len(spaces.group()), text)
    match = LINE_START.match(text)
    if match:
        cut = match.end() if match.group()[0].isdigit() else 0
        text = text[:cut] + "\\" + text[cut:]
    return text


def code(text) -> str:
    """A name as a code span (`name`), one piece in a table cell or in prose. A name a code
    span cannot hold as written everywhere is escaped text instead (md): a backtick, a | (a
    table splits on it even inside code), < > & (raw in the report's own HTML lines)."""
    text = visible(text)
    if not text.strip() or CODE_UNSAFE & set(text):
        return md(text)
    return f"`{text}`"


def plot_text(text) -> str:
    """A string read from a file as text in a figure (a legend's category): its control
    characters shown escaped (visible) and its $ escaped, which matplotlib would otherwise
    read as mathtext (and fail on: "a$x^$b" stopped the report with a traceback)."""
    return visible(text).replace("$", r"\$")


OP_LINE = 22      # characters of an op name on one line of a page's table
# ... of a table with a column per release (the allocator's and the counts'), where 22 left
# them 1,063-1,369 px wide in GitHub's 1,012 px column (nox -s preview)
NARROW_OP_LINE = 16


def code_lines(name: str, width: int = OP_LINE) -> str:
    """``name`` as code on several lines where long, so a table's column stays narrow: at
    its fixture (``read_byBlocks_binaryMode``, then ``[large.bin]``), and at the last ``_``
    within ``width`` characters of each line."""
    stem, bracket, fixture = name.partition("[")
    parts, rest = [], stem
    while len(rest) > width and rest.rfind("_", 1, width) > 0:
        cut = rest.rfind("_", 1, width)
        parts.append(rest[:cut])
        rest = rest[cut:]
    parts.append(rest)
    if bracket:
        parts.append(bracket + fixture)
    return "<br>".join(code(part) for part in parts)


def url(path: str) -> str:
    """A link target made of names (``latest/<suite>.md``) percent-encoded, so a space, a ) or
    a < in a name neither ends the link nor leaves the page's directory as a scheme."""
    return urllib.parse.quote(visible(path), safe="/#")
