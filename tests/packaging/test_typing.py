"""The rules core type-checks under ``mypy --strict`` (the guide's standard, kept by a test).

The rules core is every module of ``table_service/rules`` and the shoe reader's framing and
protocol parsers: the code that turns bytes into cards and cards into money. A new module
there is checked as soon as it exists; a module elsewhere that the core imports is checked
with it (mypy follows imports). A fresh cache per run, under the test's tmp folder, so
a stale cache can never hide an error.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STRICT_PACKAGES = ["table_service/rules"]
STRICT_MODULES = [
    "shoe_reader/framing.py",
    "shoe_reader/framed_session.py",
    "shoe_reader/ascii_protocol.py",
    "shoe_reader/events.py",
    "shoe_reader/session.py",
]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None,
    reason="mypy is not installed (it is in the test extra: pip install -e '.[test]')",
)


def _mypy(cache: Path, *targets: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(cache),
            "--show-error-codes",
            *targets,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_the_rules_core_is_strict_clean(tmp_path: Path) -> None:
    run = _mypy(tmp_path / "cache", *STRICT_PACKAGES, *STRICT_MODULES)
    assert run.returncode == 0, run.stdout + run.stderr
    # Every file was read: mypy counts what it checked (followed imports not included).
    expected = sum(len(list((ROOT / p).rglob("*.py"))) for p in STRICT_PACKAGES)
    expected += len(STRICT_MODULES)
    found = re.search(r"no issues found in (\d+) source files", run.stdout)
    assert found is not None, run.stdout
    assert int(found.group(1)) == expected, run.stdout


def test_the_check_fails_on_a_typing_error(tmp_path: Path) -> None:
    """The same invocation reports an untyped function and a wrong return: the check bites."""
    bad = tmp_path / "bad_module.py"
    bad.write_text("def untyped(x):\n    return x\n\n\ndef wrong() -> int:\n    return 'one'\n")
    run = _mypy(tmp_path / "cache", str(bad), cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "[no-untyped-def]" in run.stdout, run.stdout
    assert "[return-value]" in run.stdout, run.stdout
