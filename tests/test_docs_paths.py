"""Every repository path the READMEs promise is tracked by git (not hidden by .gitignore)."""

from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    "README.md",
    "cluster/README.md",
    "docs/architecture.md",
    *sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "rllib_fair" / "algorithms").glob("*/README.md")
    ),
]
TOP = ("docs", "tuned_examples", "scripts", "benchmarks", "cluster", "tests", "rllib_fair")
PATH_RE = re.compile(rf"\b(?:{'|'.join(TOP)})/[A-Za-z0-9_./*<>-]*")


def tracked_files() -> list[str]:
    try:
        out = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return out.stdout.splitlines()


def mentioned_paths() -> set[str]:
    found = set()
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        for match in PATH_RE.findall(text):
            path = match.rstrip(".,)")
            if "<" in path or not path:  # placeholders such as tuned_examples/<algo>/...
                continue
            found.add(path)
    return found


def test_readmes_mention_paths():
    assert "docs/results/README.md" in mentioned_paths()


@pytest.mark.parametrize("path", sorted(mentioned_paths()))
def test_mentioned_path_is_tracked(path):
    files = tracked_files()
    if path.endswith("/"):
        ok = any(f.startswith(path) for f in files)
    elif "*" in path:
        ok = any(fnmatch.fnmatch(f, path) for f in files)
    else:
        ok = path in files or any(f.startswith(path + "/") for f in files)
    assert ok, f"{path} is mentioned in the docs but not tracked by git"
