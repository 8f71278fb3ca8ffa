"""The documentation site (mkdocs.yml, docs/): it builds with no warning, loads nothing from the network,
opens from the file system, and every `twin` command of its decision pages runs at a small size."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.cdp import CHROMIUM

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
DECISIONS = sorted((DOCS / "decisions").glob("*.md"))
ASSET_ATTRS = {"script": "src", "link": "href", "img": "src", "iframe": "src", "source": "src", "video": "src",
               "audio": "src", "embed": "src", "object": "data"}
"""Tags whose URL the browser fetches when the page loads (an <a href> is only followed when clicked)."""


class _Urls(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.assets: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in ASSET_ATTRS and a.get(ASSET_ATTRS[tag]):
            self.assets.append(str(a[ASSET_ATTRS[tag]]))
        if tag == "a" and a.get("href"):
            self.links.append(str(a["href"]))


def _external(url: str) -> bool:
    return url.startswith("//") or urlsplit(url).scheme in ("http", "https")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                         cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "WARNING" not in res.stderr, res.stderr
    return out


def test_site_builds_strictly_with_every_page(site: Path) -> None:
    """Every page under docs/ is built (strict mode refuses a page left out of the nav), with its
    relative link form (use_directory_urls: false, so links work from file://)."""
    pages = sorted(p.relative_to(DOCS).with_suffix(".html") for p in DOCS.rglob("*.md"))
    assert len(pages) >= 20
    for p in pages:
        assert (site / p).is_file(), p


def test_site_loads_nothing_from_the_network_and_its_links_resolve(site: Path) -> None:
    """No page or stylesheet fetches a script, style, font or image from another host (the site works
    offline), and every link between pages is relative and lands on a built file."""
    htmls = sorted(site.rglob("*.html"))
    assert htmls
    for h in htmls:
        parser = _Urls()
        parser.feed(h.read_text())
        ext = [u for u in parser.assets if _external(u)]
        assert not ext, (h.relative_to(site), ext)
        if h.name == "404.html":  # served by a web server at any path, so its links are absolute by design
            continue
        for u in parser.links:
            if _external(u) or u.startswith(("mailto:", "#")):
                continue
            assert not u.startswith("/"), (h.relative_to(site), u)  # an absolute path breaks under file://
            target = (h.parent / unquote(urlsplit(u).path)).resolve()
            assert target.exists(), (h.relative_to(site), u)
            if target.is_dir():
                pytest.fail(f"{h.relative_to(site)}: link {u} is a folder, which file:// does not open as a page")
    for css in site.rglob("*.css"):
        urls = re.findall(r"url\(\s*['\"]?([^'\")]+)", css.read_text())
        assert not [u for u in urls if _external(u)], css.relative_to(site)


def test_readme_links_resolve() -> None:
    """The README is the entry page into the site (not built by MkDocs): its relative links must exist."""
    text = (ROOT / "README.md").read_text()
    links = [u for u in re.findall(r"\]\(([^)]+)\)", text) if not _external(u)]
    assert len(links) >= 15
    for u in links:
        assert (ROOT / urlsplit(u).path).exists(), u


def _commands(page: Path) -> list[str]:
    """The `twin ...` command lines of a page's bash blocks, with backslash continuations joined."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", page.read_text(), flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip().startswith("twin "):
                out.append(" ".join(line.split()))
    return out


CASES = [(p, c) for p in DECISIONS for c in _commands(p)]
SMALL = {"--reps": "2", "--workers": "1"}
SMALL_HORIZON_DAYS = 4


def test_every_decision_page_has_commands_and_the_readme_shows_the_first_of_each() -> None:
    assert {p.stem for p in DECISIONS} >= {"air-or-liquid", "spares-and-technicians", "power-redundancy"}
    readme = " ".join(" ".join((ROOT / "README.md").read_text().replace("\\\n", " ").split("\n")).split())
    for p in DECISIONS:
        cmds = _commands(p)
        assert cmds, p.name
        assert cmds[0] in readme, f"README.md should show {p.name}'s command: {cmds[0]}"


def small(command: str, results: Path) -> list[str]:
    """The command's argv at a small size: 2 replications on one process, a few days, results in a
    temporary folder. Everything else (scenarios, parameters, objectives, constraints) as written."""
    argv = shlex.split(command)[1:]
    out = []
    it = iter(argv)
    for a in it:
        if a in SMALL:
            next(it)
            out += [a, SMALL[a]]
        else:
            out.append(a)
    return out + ["--set", f"horizon_days={SMALL_HORIZON_DAYS}", "--results", str(results), "--quiet"]


@pytest.mark.parametrize("page,command", CASES, ids=[f"{p.stem}-{i}" for i, (p, _) in enumerate(CASES)])
def test_decision_page_command_runs_at_a_small_size(page: Path, command: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Every command of docs/decisions/*.md runs in-process at a small size and succeeds; a constrained
    sweep may find no point meeting its target at 2 replications of a few days, and an assumptions screen
    with --check-ranges may find an assumption without a range (exit 1, a failed check that the command
    states), never a usage or input error."""
    from twin import cli

    argv = small(command, tmp_path)
    code = cli.main(argv)
    captured = capsys.readouterr()
    if code == 1 and argv[0] == "sweep" and "--constraint" in argv:
        assert "no grid point meets the constraints" in captured.out + captured.err
    elif code == 1 and argv[0] == "sensitivity" and "--check-ranges" in argv:
        assert "check failed: an assumption that moves" in captured.out + captured.err
    else:
        assert code == 0, (argv, captured.err[-2000:])
    assert "decision summary" in captured.out, captured.out[:2000]


@pytest.mark.skipif(CHROMIUM is None, reason="the browser tests need Debian's chromium package "
                    "(apt-get install chromium fonts-dejavu-core); CI installs it")
def test_site_opens_offline_from_the_file_system(site: Path, tmp_path: Path) -> None:
    """In headless Chromium with the network off: the home page and a guide page load from file://
    without console errors, with their navigation and text, and request nothing but local files."""
    from tests.cdp import Browser

    b = Browser(tmp_path / "profile")
    try:
        b.offline()
        for page, text in (("index.html", "Quick start"), ("guide/power.html", "Power chain and redundancy")):
            b.open((site / page).resolve().as_uri())
            assert b.wait_for(f"document.body.innerText.includes({text!r})", timeout=20), page
            assert b.js("document.querySelectorAll('.wy-menu-vertical a').length") > 20, page  # the nav
            assert b.js("getComputedStyle(document.querySelector('.wy-nav-side')).position") == "fixed", page  # styled
        assert b.errors() == [], b.errors()
        assert all(u.startswith(("file:", "data:")) for u in b.requests()), b.requests()
    finally:
        b.close()
