"""The README stays a newcomer's ten minutes, and no document or comment keeps history: git
keeps it. Run as the same ``grep`` a reviewer would type."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 300
HISTORY = r"this round|last round|issue [0-9]+|[0-9a-f]{7,40}\b"
SEARCHED = ["README.md", "docs", "services", "gateway"]


def test_readme_is_at_most_300_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert 0 < len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_no_history_in_docs_or_code() -> None:
    # -I skips binary files (the games' compression dictionaries); generated and cached files
    # are not the project's text.
    found = subprocess.run(
        ["grep", "-rnEI", "--exclude-dir=__pycache__", HISTORY, *SEARCHED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.returncode in (0, 1), found.stderr
    assert found.stdout == "", "history in docs or comments:\n" + found.stdout


def test_the_history_pattern_finds_what_it_should() -> None:
    found = subprocess.run(
        ["grep", "-cE", HISTORY],
        input="as measured this round\nsee issue 26\nat 7e13a0a\nplain text\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.stdout.strip() == "3"
