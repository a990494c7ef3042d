"""Changelog text as a reader reads it on docs.python.org (issue 43, item 6).

A Misc/NEWS entry is reStructuredText: ``:class:`io.BufferedReader` `` and ````open()````
render as code there, ``:pep:`3116` `` as "PEP 3116". ``render`` turns the roles and inline
literals into markdown code spans (markdown.code: whatever the span cannot hold is escaped
text instead) and escapes every other character (markdown.md): the entry is untrusted text,
and a role's target is as untrusted as the rest; nothing in it becomes a link or markup.
"""
from __future__ import annotations

import re

from iomatrix.reporting.markdown import code, md

# :role:`body` (with an optional domain, :c:func:), and ``literal``
ROLE_RE = re.compile(r":(?P<role>[a-z]+(?::[a-z]+)?):`(?P<body>[^`\n]+)`|``(?P<literal>[^`\n]+)``")
# Roles that read as words, not code: PEPs, issues, terms, emphasis
WORD_ROLES = {"pep": "PEP {}", "gh": "gh-{}", "issue": "bpo-{}", "term": "{}",
              "dfn": "{}", "abbr": "{}", "rfc": "RFC {}"}
CALLABLE_ROLES = ("func", "meth", "c:func", "c:macro")


def target_text(role: str, body: str) -> str:
    """What Sphinx shows for ``:role:`body` ``: the title of ``title <target>``, the last
    part of ``~a.b.c``, ``()`` after a function's name."""
    titled = re.fullmatch(r"(.*?)\s*<[^<>]*>", body.strip())
    text = titled.group(1) if titled else body.strip()
    if text.startswith("~"):
        text = text[1:].rsplit(".", 1)[-1]
    text = text.lstrip("!")
    if role in CALLABLE_ROLES and not text.endswith(")"):
        text += "()"
    return text


def render(text: str, limit: int | None = None) -> str:
    """``text`` as markdown: roles and literals as code spans, the rest escaped; cut at
    ``limit`` characters of the source (never inside a role) with " …"."""
    text = " ".join(str(text).split())
    cut = False
    if limit is not None and len(text) > limit:
        end = limit
        for m in ROLE_RE.finditer(text):
            if m.start() < limit < m.end():
                end = m.start()
                break
        text, cut = text[:end].rstrip(), True
    out, pos = [], 0

    def plain(piece: str) -> str:
        # md escapes what acts at a line's start; a piece after the first stands mid-line
        return md(piece) if not out else md("x" + piece)[1:]

    for m in ROLE_RE.finditer(text):
        out.append(plain(text[pos:m.start()]))
        if m.group("literal") is not None:
            out.append(code(m.group("literal")))
        else:
            role, body = m.group("role"), m.group("body")
            words = WORD_ROLES.get(role)
            out.append(plain(words.format(target_text(role, body))) if words
                       else code(target_text(role, body)))
        pos = m.end()
    out.append(plain(text[pos:]))
    return "".join(out) + (" …" if cut else "")
