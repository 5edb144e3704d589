"""The docs carry their own facts: no file cites documents users never see.

Comments, docstrings, READMEs, tuned examples and scripts state a fact in place or point
to a page of ``docs/methods/`` (the papers' methods, our choices and the corrections we
found). This test fails on a citation of material outside the repository (a
reconstruction's sections or errata, line numbers of a paper's text file, a sibling
``shared/`` folder), on a pointer to a methods page or section that does not exist, and on
a path named by a methods page that does not exist.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
METHODS = ROOT / "docs" / "methods"
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()
SCOPE = ("rllib_fair", "docs", "README.md", "tuned_examples", "benchmarks", "scripts", "tests")
BINARY = (".png", ".jpg", ".npz", ".npy", ".pkl", ".pt", ".gz", ".zip", ".parquet")

#: What a citation of unseen material looks like. Precise on purpose: "experiment spec",
#: ``spec.get(...)``, ``ModuleSpec``, "specification" and YAML anchors are ordinary words.
PATTERNS: dict[str, re.Pattern[str]] = {
    "section sign (cite a paper as 'Sec. 4.1')": re.compile("\u00a7"),
    "section of a reconstruction document": re.compile(
        r"\bspecs?\b\s*(\d|sec\b|sec\.|section|item|test|design note|erratum|errata|exp\.|ppo_c"
        r"|lucbfair|uncertainty\.md|sellf_)",
        re.I,
    ),
    "erratum of a reconstruction document": re.compile(r"\berrat(um|a)\b", re.I),
    "folder outside the repository": re.compile(
        r"(\.\./|/work/|\b)shared/(specs|seeds|data|hooks|ANCHORS|DESIGN|RLLIB)"
        r"|\bspecs/[\w.-]+\.md|\bseeds/0\d\d"
    ),
    "notes outside the repository": re.compile(
        r"\b(ANCHORS|DESIGN\.md|RLLIB_NOTES|rllib_sketches|sellf_reference_gap|ppo_c_audit\w*"
        r"|COMPASS)\b"
    ),
    "line number of a paper's text file": re.compile(
        r"\bpaper\s+(L|lines?\s*)\d+|\blines? \d+ of the paper|\bL\d{2,4}(-\d{2,4})?\b"
    ),
    "label of an unnumbered equation in a reconstruction": re.compile(r"\[U\d+\]"),
    "number of a paper's text file": re.compile(r"\b(seed|spec)[ -]?00\d\b", re.I),
}

#: ``docs/methods/<page>.md`` (bare, in backticks or a link) optionally followed by ``, "Section"``.
POINTER = re.compile(
    r"docs/methods/([\w.-]+\.md)[`)\]]*(?:,\s*[\"'\u201c]([^\"'\u201d\n]+)[\"'\u201d])?"
)
#: Repository paths named in backticks by a methods page.
PAGE_PATH = re.compile(r"`((?:rllib_fair|docs|scripts|tests|tuned_examples|benchmarks)/[^`\s]*)`")


def _tracked() -> list[str]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "--", *SCOPE],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk the tree
        out = [
            p.relative_to(ROOT).as_posix()
            for top in SCOPE
            for p in ([ROOT / top] if (ROOT / top).is_file() else (ROOT / top).rglob("*"))
            if p.is_file()
        ]
    return sorted(f for f in set(out) if (ROOT / f).is_file() and not f.endswith(BINARY))


def _text(rel: str) -> str | None:
    try:
        return (ROOT / rel).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None


def _headings(page: Path) -> set[str]:
    return {
        line.lstrip("#").strip()
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    }


def citations(text: str) -> list[tuple[int, str, str]]:
    """``(line number, pattern name, line)`` of every citation of unseen material."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for name, pattern in PATTERNS.items():
            if pattern.search(line):
                found.append((number, name, line.strip()))
    return found


@pytest.mark.parametrize(
    "line",
    [
        "(spec §2.3 item 2)",
        "spec 4.1.2 with erratum E12",
        "Spec 5 pass criteria",
        "no per-action signal (spec exp. D)",
        "the spec design note",
        "erratum E5",
        "``shared/specs/ppo_c.md``",
        "``../shared/data/fico`` next to the repository",
        "(ANCHORS.md 3.7)",
        "(`infos[1:]`, DESIGN.md)",
        "sellf_reference_gap.md exp. D",
        "Delta (paper L221)",
        "C = DPE + IPE + SPE (L206-210)",
        "[U10]: DPE through the benefit",
        "Seed 003 (Yin et al. 2023)",
        "the seed-004 lending strategies",
    ],
)
def test_patterns_catch_citations(line):
    assert citations(line), line


@pytest.mark.parametrize(
    "line",
    [
        "experiment spec must be a mapping",
        "for name, spec in specs.items():",
        "spec = importlib.util.find_spec(fullname)",
        "RLModuleSpec(module_class=...)",
        "the specification of the env",
        "def test_anchors_and_merge_keys_are_still_data(guarded, capsys):",
        "PPO-KL, beta_KL = 1.5 fixed (paper Sec. 4.1)",
        "see docs/methods/lear2025.md, 'Benefit fairness'",
        "L1 and L2 norms, W1 distance, 500-step episodes",
    ],
)
def test_patterns_allow_ordinary_text(line):
    assert not citations(line), citations(line)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ('see docs/methods/lear2025.md, "Benefit fairness"', [("lear2025.md", "Benefit fairness")]),
        ("`docs/methods/lear2025.md`, 'Reference values'", [("lear2025.md", "Reference values")]),
        (
            '[`docs/methods/xu2024.md`](../../../docs/methods/xu2024.md), "The baselines"',
            [("xu2024.md", None), ("xu2024.md", "The baselines")],
        ),
        ("docs/methods/yin2023.md: on the default range", [("yin2023.md", None)]),
    ],
)
def test_pointer_pattern_reads_page_and_section(text, want):
    assert [(m.group(1), m.group(2)) for m in POINTER.finditer(text)] == want


def test_no_file_cites_unseen_documents():
    hits = []
    for rel in _tracked():
        if rel == THIS:
            continue
        text = _text(rel)
        if text is None:
            continue
        hits += [f"{rel}:{n}: {name}: {line[:120]}" for n, name, line in citations(text)]
    assert not hits, (
        f"{len(hits)} line(s) cite material outside the repository; state the fact in place "
        "or point to a docs/methods page section:\n" + "\n".join(hits[:40])
    )


def test_methods_pointers_name_existing_pages_and_sections():
    bad = []
    for rel in _tracked():
        text = _text(rel)
        if text is None or "docs/methods/" not in text:
            continue
        for match in POINTER.finditer(text):
            page, section = METHODS / match.group(1), match.group(2)
            if not page.is_file():
                bad.append(f"{rel}: {match.group(0)}: no such page")
            elif section is not None and section.strip() not in _headings(page):
                bad.append(f"{rel}: {match.group(0)}: no section {section!r} in {page.name}")
    assert not bad, "\n".join(bad)


def test_methods_pages_name_existing_paths():
    pages = sorted(METHODS.glob("*.md"))
    assert len(pages) >= 6, [p.name for p in pages]
    missing = []
    for page in pages:
        for path in PAGE_PATH.findall(page.read_text(encoding="utf-8")):
            path = path.rstrip(".,;:")
            if not (list(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()):
                missing.append(f"{page.name}: {path}")
    assert not missing, "\n".join(missing)


def test_methods_index_links_every_page_and_readmes_link_the_index():
    index = (METHODS / "README.md").read_text(encoding="utf-8")
    for page in METHODS.glob("*.md"):
        if page.name != "README.md":
            assert f"]({page.name})" in index, page.name
    assert "docs/methods/" in (ROOT / "README.md").read_text(encoding="utf-8")
    for readme in sorted((ROOT / "rllib_fair" / "algorithms").glob("*/README.md")):
        if readme.parent.name != "common":
            assert "docs/methods/" in readme.read_text(encoding="utf-8"), readme
