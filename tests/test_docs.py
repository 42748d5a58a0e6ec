"""The README is a short front page; the docs/ pages it links hold the rest, and stay current.

docs/cli.md's --help sections are generated from the code and must not go stale; every link
between the pages resolves.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The text outside fenced code blocks (a link in a code sample is not a link)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    seen: dict[str, int] = {}
    out = set()
    for title in re.findall(r"^#{1,6} (.+)$", _prose(path.read_text()), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_cli_doc_is_current() -> None:
    r = subprocess.run([sys.executable, "scripts/cli_doc.py", "--check"], cwd=ROOT,
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr


def test_readme_opens_with_the_two_commands() -> None:
    head = README.read_text().split("## ")[0]
    assert "make demo" in head and "make test" in head


def test_readme_is_short() -> None:
    lines = README.read_text().count("\n")
    assert lines <= 250, f"README.md has {lines} lines; move detail into a docs/ page"


def test_readme_links_every_docs_page() -> None:
    linked = {(ROOT / t).resolve() for t, *_ in (m.split("#") for m in _links(README))}
    missing = [p.name for p in PAGES if p.resolve() not in linked]
    assert not missing, f"README.md does not link {missing}"


def _links(path: Path) -> list[str]:
    targets = LINK.findall(_prose(path.read_text()))
    return [t for t in targets if not re.match(r"[a-z]+:", t)]  # relative links only


def test_every_relative_link_resolves() -> None:
    broken = []
    for page in [README, *PAGES]:
        for target in _links(page):
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_layout_names_every_package_and_module() -> None:
    layout = (DOCS / "layout.md").read_text()
    pkg = ROOT / "agentiqa_cli"
    names = [f"{d.name}/" for d in pkg.iterdir() if d.is_dir() and (d / "__init__.py").exists()]
    names += [f.name for f in pkg.glob("*.py") if f.name not in ("__init__.py", "__main__.py")]
    missing = [n for n in names if f"  {n}" not in layout]
    assert not missing, f"docs/layout.md does not list {missing}"


# A citation of a document outside the repository: the project's spec, its extensions notes,
# or a seed paper by number. Cite an in-repo page or the paper by title and section instead.
OUTSIDE = re.compile(r"\bSPEC\b|\bEXTENSIONS\b|\b[Ss]eed[ -]00\d")
CITING = ["agentiqa_cli", "docs", "prompts", "tool_cards", "README.md"]


def _text_files() -> list[Path]:
    out = []
    for name in CITING:
        root = ROOT / name
        for p in [root] if root.is_file() else sorted(root.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                out.append(p)
    return out


def test_nothing_cites_documents_outside_the_repository() -> None:
    hits = []
    for p in _text_files():
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary
        for n, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{p.relative_to(ROOT)}:{n}: {line.strip()[:80]}")
    assert not hits, "cite docs/ or the paper's title instead:\n" + "\n".join(hits)


def test_the_citation_check_sees_what_it_must() -> None:
    assert OUTSIDE.search("see SPEC §3") and OUTSIDE.search("EXTENSIONS.md §A")
    assert OUTSIDE.search("(seed 003 Table 1)") and OUTSIDE.search("The seed-003 tools")
    assert OUTSIDE.search("Seed 000 Eq. 6") and not OUTSIDE.search("spec = PromptSpec(")
    assert not OUTSIDE.search("IMAGE_EXTENSIONS = frozenset(") and not OUTSIDE.search("_SPECIAL")
