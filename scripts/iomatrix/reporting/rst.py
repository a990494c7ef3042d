"""Changelog text as a reader reads it on docs.python.org (issue 43, item 6).

A Misc/NEWS entry is reStructuredText: ``:class:`io.BufferedReader` `` and ````open()````
render as code there, ``:pep:`3116` `` as "PEP 3116". ``render`` turns the roles and inline
literals into markdown code spans (markdown.code: whatever the span cannot hold is escaped
text instead) and escapes every other character (markdown.md): the entry is untrusted text,
and a role's target is as untrusted as the rest; nothing in it becomes a link or markup.
"""
from __future__ import annotations

from iomatrix.analysing.news import MAX_ENTRY_CHARS
from iomatrix.reporting.why import excerpt


def render(text: str, limit: int | None = None) -> str:
    """``text`` as markdown: roles and literals as code spans, the rest escaped; at most
    ``limit`` characters shown (all of an entry without one), cut at a word with " …".
    One renderer for every output: this is the pages' (reporting.why.excerpt), whose
    expressions are linear in the text."""
    text = str(text)[:MAX_ENTRY_CHARS]
    return excerpt(text, limit if limit is not None else len(text), read=len(text))
