"""Changelogs and their cache as untrusted input (issue 40, item 2): hostile NEWS text that
made the regular expressions quadratic, damaged and foreign .news.json caches, links built
only from a bounded number, crafted tarballs whose headers claim huge sizes, the gates' exit
codes, and the Debian mirror and apt's proxy read from apt's own configuration."""
from __future__ import annotations

import http.server
import io
import json
import os
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest

import changelog as changelog_script
from iomatrix import cli
from iomatrix.analysing import changelog, news
from iomatrix.interpreters import newest, sources
from iomatrix.reporting import rst, why
from test_changelog import TRIMMED, make_tarball

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
N = 150_000
HEAD = "What's New in Python 3.14.7?\n============================\n\n*Release date: 2025-01-01*\n\n" \
       "Library\n-------\n\n"
# Each of these hung the parser, the ranking or the excerpt before (minutes to hours):
HOSTILE_NEWS = {
    "a heading followed by spaces": "What's New in Python 3.1 x" + " " * N + "y\n=====\n",
    "a heading of digits": "What's New in Python 3." + "1" * N + "\n=====\n",
    "a date line followed by spaces": HEAD + "*Release date: 2020-01-01" + " " * N + "y\n",
    "an entry followed by spaces": HEAD + "- gh-1" + " " * N + "x\n",
    "an issue number of 150,000 digits": HEAD + "- gh-" + "1" * N + ": buffer\n",
    "an entry of digits": HEAD + "- gh-1: buffer read " + "1" * N + "\n",
    "an entry of spaces after a role": HEAD + "- gh-1: buffer read :func:`" + " " * N + "x\n",
    "an entry of roles": HEAD + "- gh-1: buffer read " + ":class:`a " * (N // 10) + "\n",
    "an entry of literals": HEAD + "- gh-1: buffer read " + "``" * N + "\n",
}


def _everything(text: str) -> None:
    """What report, compare, upstream and changelog do with a NEWS text."""
    log = changelog.parse_news(text)
    for op in ("read_byBlocks_binaryMode", "read_byLines_textMode", "mmapio_find_mmap"):
        for c in changelog.candidates(log, op, "", "3.13.0", "3.14.7"):
            why.excerpt(c.entry.text), why.link(c)
            rst.render(c.entry.text, 400), rst.render(c.entry.text)   # bisect's, ISSUE.md's
        for fix in changelog.later_fixes([log], op, "", "3.13.0"):
            why.later_text(fix, [])
    for release in log.releases:
        for entry in release.entries:
            why.excerpt(entry.text)


def test_hostile_news_text_is_read_in_linear_time():
    # In a subprocess with a generous limit (no timing is asserted: only that it ends);
    # each input hung the code before.
    code = ("import sys, json; sys.path[:0] = [%r, %r]\n"
            "import test_hostile_news as t\n"
            "for text in t.HOSTILE_NEWS.values(): t._everything(text)\n"
            "print('done')" % (str(SCRIPTS), str(Path(__file__).parent)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr[-2000:]


def test_a_long_issue_number_is_no_entry_and_no_link():
    log = changelog.parse_news(HEAD + "- gh-12345678: buffer size\n- gh-1234567: buffer\n"
                               "- gh-0: buffer\n- Issue #٣: buffer\n")
    assert [e.number for r in log.releases for e in r.entries] == ["gh-1234567"]
    assert len(log.unparsed) == 3
    assert news.url_of("gh-1234567") == "https://github.com/python/cpython/issues/1234567"
    assert news.url_of("bpo-33671") == "https://bugs.python.org/issue33671"
    for bad in ("gh-12345678", "gh-0", "gh-<img src=x onerror=alert(1)>", "x-1", "gh-1/../x"):
        assert news.url_of(bad) is None
        entry = news.Entry(bad, "3.14.7", None, "Library", "buffer")
        assert entry.url == ""
        shown = why.link(changelog.Candidate(entry, 1.0, ()))
        assert "](" not in shown and "<img" not in shown


def test_roles_read_as_docs_python_org_shows_them_and_stay_escaped():
    assert why.excerpt(":class:`io.BufferedReader` and :meth:`~io.RawIOBase.read`, "
                       ":c:func:`PyObject_Call`, :gh:`12`, :pep:`687`, ``x = 1``") == \
        "`io.BufferedReader` and `read()`, `PyObject_Call()`, gh-12, PEP 687, `x = 1`"
    hostile = why.excerpt(":class:`<img src=x onerror=alert(1)>` ``a|b`` :mod:`x` "
                          "[t](javascript:alert(1)) <script>alert(1)</script> **b**")
    assert "<img" not in hostile and "<script" not in hostile and "**b**" not in hostile
    assert "`a|b`" not in hostile and "\\[t\\](javascript" in hostile and "`x`" in hostile
    cut = why.excerpt("Use :class:`io.BufferedReader` " + "word " * 40, limit=40)
    assert cut.startswith("Use `io.BufferedReader` word") and cut.endswith(" …")


# -- the cache ---------------------------------------------------------------------------

def cache_of(tmp_path, monkeypatch) -> tuple[Path, Path]:
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path / "cache"))
    tarball = tmp_path / "cache" / "tarballs" / "Python-3.14.7.tar.xz"
    make_tarball(tarball, "3.14.7", TRIMMED)
    return tarball, tarball.with_name(tarball.name + ".news.json")


def good_cache(tarball: Path) -> dict:
    return changelog.parse_news(TRIMMED, str(tarball)).to_json()


def damaged(kind: str, tarball: Path):
    data = good_cache(tarball)
    entry = data["releases"][0]["entries"][0]
    if kind == "not JSON":
        return b"{not json"
    if kind == "nested 100,000 levels":
        return b"[" * 100_000 + b"]" * 100_000
    if kind == "a list":
        data = [data]
    elif kind == "a URL to another site":
        entry["url"] = "https://evil.example/" + "x" * 300
    elif kind == "a number holding markup":
        entry["number"] = "gh-1<img src=x onerror=alert(1)>"
    elif kind == "a 4,000-digit number":
        entry["number"] = "gh-" + "9" * 4000
    elif kind == "an entry of another release":
        entry["release"] = "3.99.0"
    elif kind == "a foreign key":
        data["evil"] = 1
    elif kind == "a text as a number":
        entry["text"] = 7
    elif kind == "another format":
        data["format"] = 99
    return json.dumps(data).encode()


KINDS = ["not JSON", "nested 100,000 levels", "a list", "a URL to another site",
         "a number holding markup", "a 4,000-digit number", "an entry of another release",
         "a foreign key", "a text as a number", "another format"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_cache_is_named_and_read_from_the_tarball_again(tmp_path, monkeypatch,
                                                                   capsys, kind):
    tarball, cache = cache_of(tmp_path, monkeypatch)
    cache.write_bytes(damaged(kind, tarball))
    before = cache.read_bytes()
    log = changelog.covering_changelog("3.14.7")
    assert log is not None and len(log.releases) == 11
    warned = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(warned) == 1 and cache.name in warned[0] and "read from the tarball" in warned[0]
    assert "<img" not in warned[0] and "9" * 100 not in warned[0]
    assert cache.read_bytes() == before          # the report and compare only read it
    found = changelog.candidates(log, "read_byBlocks_binaryMode", "", "3.13.15", "3.14.7")
    assert all(why.link(c).endswith(f"(https://github.com/python/cpython/issues/"
                                     f"{c.entry.number[3:]})") for c in found)


def test_the_report_writes_no_cache_and_the_changelog_command_does(tmp_path, monkeypatch):
    tarball, cache = cache_of(tmp_path, monkeypatch)
    assert changelog.covering_changelog("3.14.7") is not None
    assert sorted(p.name for p in tarball.parent.iterdir()) == [tarball.name]
    assert changelog_script.main(["3.14.7", "--offline"]) == 0
    news.check_cache(json.loads(cache.read_text()))
    assert "url" not in json.loads(cache.read_text())["releases"][0]["entries"][0]


def test_a_valid_cache_with_an_old_url_field_is_used_and_its_url_never(tmp_path, monkeypatch,
                                                                       capsys):
    tarball, cache = cache_of(tmp_path, monkeypatch)
    data = good_cache(tarball)
    for release in data["releases"]:
        for entry in release["entries"]:
            entry["url"] = "https://evil.example/"
    cache.write_text(json.dumps(data))
    news._LOADED.clear()
    log = changelog.covering_changelog("3.14.7")
    assert capsys.readouterr().err == ""
    found = changelog.candidates(log, "read_byBlocks_binaryMode", "", "3.13.15", "3.14.7")
    assert found and all("evil" not in why.link(c) for c in found)


def test_a_fifo_cache_is_refused_not_waited_on(tmp_path, monkeypatch, capsys):
    tarball, cache = cache_of(tmp_path, monkeypatch)
    os.mkfifo(cache)
    assert changelog.covering_changelog("3.14.7") is not None
    assert "not a regular file" in capsys.readouterr().err


# -- tarballs ----------------------------------------------------------------------------

def header(name: str, size: int, kind=tarfile.REGTYPE, fmt=tarfile.GNU_FORMAT) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info.tobuf(format=fmt)


def crafted(path: Path, *blocks: bytes, hole: int = 0, after: bytes = b"") -> Path:
    """An uncompressed tar of ``blocks`` (headers), then ``hole`` bytes of zeros that cost no
    disk (a sparse file: the data the last header announces, there to be read), then
    ``after``: a reader that believed a header would read or allocate the whole hole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"".join(blocks))
        f.seek(-(-hole // 512) * 512, os.SEEK_CUR)
        f.write(after + bytes(1024))
    return path


def news_member(name: str = "Python-3.14.7/Misc/NEWS", text: str = TRIMMED) -> bytes:
    data = text.encode()
    return header(name, len(data)) + data + bytes(-len(data) % 512)


TOP = "Python-3.14.7"
HOSTILE_TARBALLS = {   # header, the size of the data it announces (a hole), what follows
    "a 100 GiB member before NEWS": lambda: ([header(f"{TOP}/huge.bin", 100 << 30)], 100 << 30),
    "a 1 GiB GNU long name": lambda: ([header("././@LongLink", 1 << 30, tarfile.GNUTYPE_LONGNAME,
                                              tarfile.USTAR_FORMAT)], 1 << 30),
    "a 1 GiB pax header": lambda: ([header("pax", 1 << 30, tarfile.XHDTYPE,
                                           tarfile.USTAR_FORMAT)], 1 << 30),
    "a GNU sparse member": lambda: ([header(f"{TOP}/sparse", 10, tarfile.GNUTYPE_SPARSE)], 512),
    "a pax size of 100 GiB": lambda: ([pax_sized(f"{TOP}/big", 100 << 30)], 100 << 30),
    "a 40 MiB Misc/NEWS": lambda: ([header(f"{TOP}/Misc/NEWS", 40 << 20)], 40 << 20),
}


def pax_sized(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.pax_headers = {"size": str(size)}
    return info.tobuf(format=tarfile.PAX_FORMAT)


@pytest.mark.parametrize("title", HOSTILE_TARBALLS)
def test_a_tarball_header_claiming_too_much_is_refused_before_it_is_read(tmp_path, monkeypatch,
                                                                          title):
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path / "cache"))
    blocks, hole = HOSTILE_TARBALLS[title]()
    path = crafted(tmp_path / "cache" / "tarballs" / "Python-3.14.7.tar.xz",
                   header(f"{TOP}/README", 0), *blocks, hole=hole, after=news_member())
    said = []
    assert changelog.news_of_tarball(path, said.append) is None
    assert len(said) == 1 and "no readable Misc/NEWS (refused" in said[0], said
    assert changelog.changelog_for("3.14.7", say=said.append, fetch=False) is None
    with pytest.raises(sources.BadTarball):
        sources.inspect_tarball(path)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_a_bounded_tarball_still_gives_its_news(tmp_path):
    path = tmp_path / "Python-3.14.7.tar.xz"
    make_tarball(path, "3.14.7", TRIMMED)
    assert changelog.news_of_tarball(path) == TRIMMED
    # the crafted form itself reads, when its headers keep to the bounds
    small = crafted(tmp_path / "small.tar", header(f"{TOP}/README", 100), hole=100,
                    after=news_member())
    assert changelog.news_of_tarball(small) == TRIMMED


# -- exit codes --------------------------------------------------------------------------

def test_compare_keeps_its_verdict_whatever_the_cache_holds(tmp_path, monkeypatch, capsys):
    import compare
    from test_changelog import regression_run
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path / "cache"))
    tarball = tmp_path / "cache" / "tarballs" / "Python-3.14.7.tar.xz"
    make_tarball(tarball, "3.14.7", TRIMMED)
    tarball.with_name(tarball.name + ".news.json").write_bytes(b"[" * 100_000)
    results = tmp_path / "results"
    run = regression_run(results)
    argv = [str(run.path / "3.13.json"), str(run.path / "3.14.json"), "--results-dir",
            str(results)]
    assert compare.main(argv) == 1               # parsed again from the tarball
    assert "[gh-117151](https://github.com/python/cpython/issues/117151)" in \
        capsys.readouterr().out

    def broken(*args, **kwargs):
        raise RecursionError("a hostile changelog")
    monkeypatch.setattr(changelog.Why, "of", broken)
    assert compare.main(argv) == 1               # the candidate lost, not the verdict
    err = capsys.readouterr().err
    assert "no candidate change for read_byBlocks_binaryMode" in err


def test_the_changelog_command_exits_2_or_3_never_1(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path / "cache"))
    assert changelog_script.main(["3.14.x"]) == cli.EXIT_BAD_INPUT
    with pytest.raises(SystemExit) as exited:         # argparse's own exit
        changelog_script.main(["--bogus"])
    assert exited.value.code == cli.EXIT_BAD_INPUT
    crafted(tmp_path / "cache" / "tarballs" / "Python-3.14.7.tar.xz",
            header(f"{TOP}/huge", 100 << 30), hole=100 << 30, after=news_member())
    assert changelog_script.main(["3.14.7", "--offline"]) == cli.EXIT_INTERNAL_ERROR
    assert "refused" in capsys.readouterr().out

    def crash(*args, **kwargs):
        raise MemoryError("a hostile changelog")
    monkeypatch.setattr(changelog, "changelog_for", crash)
    assert changelog_script.main(["3.14.7", "--offline"]) == cli.EXIT_INTERNAL_ERROR


def test_the_changelog_command_ends_on_hostile_news(tmp_path):
    # a real process, as nox runs it: ends (no timing asserted) and says what it read
    cache = tmp_path / "cache"
    make_tarball(cache / "tarballs" / "Python-3.14.7.tar.xz", "3.14.7",
                 "".join(HOSTILE_NEWS.values()) + TRIMMED)
    done = subprocess.run([sys.executable, str(SCRIPTS / "changelog.py"), "--offline", "3.14.7"],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "IOMATRIX_CACHE": str(cache),
                               "PYTHONPATH": str(SCRIPTS)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "release sections" in done.stdout


# -- the mirror and the proxy, from apt's own configuration ---------------------------------

needs_apt = pytest.mark.skipif(not Path("/usr/bin/apt-get").exists(), reason="no apt here")


def apt_config(tmp_path: Path, proxy: str | None = None) -> Path:
    parts = tmp_path / "sources.list.d"
    parts.mkdir()
    (parts / "probe.sources").write_text(
        "Types: deb\nURIs: http://binary.mirror.invalid/debian\nSuites: stable\n"
        "Components: main\n\n"
        "Types: deb-src\nURIs: http://source.mirror.invalid/debian\nSuites: stable\n"
        "Components: main\n")
    conf = tmp_path / "apt.conf"
    conf.write_text(f'Dir::Etc::SourceList "/dev/null";\nDir::Etc::SourceParts "{parts}";\n'
                    + (f'Acquire::http::Proxy "{proxy}";\n' if proxy else ""))
    return conf


@needs_apt
def test_the_mirror_is_apts_own_deb_src_first(tmp_path, monkeypatch):
    monkeypatch.setenv("APT_CONFIG", str(apt_config(tmp_path)))
    assert sources.debian_mirrors() == ["http://source.mirror.invalid/debian/",
                                        "http://binary.mirror.invalid/debian/"]


class Proxy(http.server.BaseHTTPRequestHandler):
    """A proxy on the loopback that answers for the pool: 200 for 3.14.7's orig tarball,
    404 for everything else; it records every URL asked."""
    asked: list = []

    def do_HEAD(self):
        self.asked.append(self.path)
        found = self.path.endswith("python3.14_3.14.7.orig.tar.xz")
        self.send_response(200 if found else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_HEAD

    def log_message(self, *args):
        pass


@needs_apt
def test_the_pool_is_asked_through_apts_proxy(tmp_path, monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        proxy = f"http://127.0.0.1:{server.server_address[1]}"
        monkeypatch.setenv("APT_CONFIG", str(apt_config(tmp_path, proxy)))
        monkeypatch.setattr(newest, "_fetch", lambda url: None)   # no listing served
        notes = []
        offers = newest.offers_in_pool("3.14", notes)
        assert [str(o.version) for o in offers] == ["3.14.7"] and notes == []
        # every request went to the proxy, for the deb-src archive's pool
        assert Proxy.asked and all(url.startswith(
            "http://source.mirror.invalid/debian/pool/main/p/python3.14/") for url in Proxy.asked)
    finally:
        server.shutdown()
        server.server_close()


@needs_apt
def test_no_archive_in_apt_is_said(tmp_path, monkeypatch):
    conf = tmp_path / "apt.conf"
    (tmp_path / "empty").mkdir()
    conf.write_text(f'Dir::Etc::SourceList "/dev/null";\nDir::Etc::SourceParts '
                    f'"{tmp_path / "empty"}";\n')
    monkeypatch.setenv("APT_CONFIG", str(conf))
    notes = []
    assert newest.offers_in_pool("3.14", notes) == []
    assert "apt lists no deb or deb-src entry" in notes[0] and "python3.14/" in notes[0]


def test_no_mirror_host_is_written_in_the_code():
    # The mirror comes from apt's configuration (sources.debian_mirrors); the README is the
    # one document that may show an example entry.
    root = SCRIPTS.parent
    hosts = ("deb." + "debian.org", "ftp." + "debian.org", "httpredir." + "debian.org")
    found = []
    for top in ("scripts", "docs", "tests", "suites"):
        for path in (root / top).rglob("*"):
            if path.suffix in (".py", ".md", ".toml", ".txt", ".cfg", ".yml") and path.is_file():
                text = path.read_text(errors="replace")
                found += [f"{path.relative_to(root)}: {h}" for h in hosts if h in text]
    for name in ("noxfile.py", "pyproject.toml"):
        text = (root / name).read_text()
        found += [f"{name}: {h}" for h in hosts if h in text]
    assert found == []
