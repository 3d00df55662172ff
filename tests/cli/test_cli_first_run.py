"""What a new user sees on a first run, through the installed ``livetable`` command.

Real processes, real pipes (standard output and error are not terminals here, exactly
as when a user redirects them to a file): log levels that work, a quiet demo whose service
log goes to a file, ``audit verify`` that refuses an empty folder without creating
anything, and output that is not wrapped at 80 columns when redirected.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.crash_harness import livetable_command

INFO_LINE = re.compile(r"\[\s*info\s*\]|\"level\": \"info\"")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVETABLE_")}
    env.update(extra)
    return env


def _run(
    *args: str, cwd: Path, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [livetable_command(), *args],
        cwd=cwd,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _demo(cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _run(
        "demo",
        "--rounds",
        "2",
        "--port",
        "0",
        "--seed",
        "4",
        "--betting-seconds",
        "0.5",
        "--data-dir",
        "D",
        *extra,
        cwd=cwd,
    )


def test_demo_is_quiet_round_log_on_stdout_service_log_in_a_file(tmp_path: Path) -> None:
    result = _demo(tmp_path)
    assert result.returncode == 0, result.stderr
    log_file = tmp_path / "D" / "livetable.log"
    # The round log is on stdout; the service's INFO lines are not on either stream.
    assert (
        result.stdout.count("BANKER wins")
        + result.stdout.count("PLAYER wins")
        + (result.stdout.count("TIE "))
        >= 1
    )
    assert not INFO_LINE.search(result.stdout + result.stderr), result.stderr
    assert "HTTP Request" not in result.stdout + result.stderr
    # ... they are in the log file, whose path is printed once.
    logged = log_file.read_text()
    assert INFO_LINE.search(logged)
    assert "table.loaded" in logged
    assert result.stdout.count(str(Path("D") / "livetable.log")) == 1
    # The summary says how to check this very log.
    assert "livetable audit verify --data-dir D" in result.stdout
    assert "clock in UTC" in result.stdout


def test_demo_log_level_error_leaves_stderr_and_log_file_without_info(tmp_path: Path) -> None:
    result = _demo(tmp_path, "--log-level", "ERROR")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    logged = (tmp_path / "D" / "livetable.log").read_text()
    assert not INFO_LINE.search(logged)
    assert "[warning" not in logged


def test_a_bad_log_level_is_a_usage_error(tmp_path: Path) -> None:
    result = _run("demo", "--log-level", "LOUD", "--data-dir", "D", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown log level 'LOUD'" in result.stderr
    assert not (tmp_path / "D").exists()


@pytest.mark.parametrize(
    ("args", "env", "info_expected"),
    [
        (["shoe", "read", "--log-level", "INFO"], {}, True),
        (["shoe", "read", "--log-level", "ERROR"], {"LIVETABLE_LOG_LEVEL": "INFO"}, False),
        (["shoe", "read"], {"LIVETABLE_LOG_LEVEL": "INFO"}, True),
        (["--log-level", "ERROR", "shoe", "read"], {"LIVETABLE_LOG_LEVEL": "INFO"}, False),
        (["--log-level", "INFO", "shoe", "read"], {}, True),
    ],
)
def test_shoe_read_follows_its_log_level(
    tmp_path: Path, args: list[str], env: dict[str, str], info_expected: bool
) -> None:
    """The option wins over LIVETABLE_LOG_LEVEL, which wins over the command's default."""
    result = _run(*args, "--port", "loop://", "--duration", "0.3", cwd=tmp_path, timeout=120, **env)
    assert result.returncode == 0, result.stderr
    assert bool(INFO_LINE.search(result.stderr)) is info_expected, result.stderr
    assert not INFO_LINE.search(result.stdout)


def test_audit_verify_in_an_empty_folder_says_so_and_creates_nothing(tmp_path: Path) -> None:
    result = _run("audit", "verify", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "no livetable database in" in lines[0]
    assert "--data-dir" in lines[0]
    assert list(tmp_path.iterdir()) == []
    for command in (["audit", "checkpoint"], ["audit", "export", "--out", "x.jsonl"]):
        again = _run(*command, "--data-dir", "missing", cwd=tmp_path)
        assert again.returncode == 2 and len(again.stderr.splitlines()) == 1, again.stderr
        assert list(tmp_path.iterdir()) == []


def test_audit_commands_take_the_demo_data_dir(tmp_path: Path) -> None:
    demo = _demo(tmp_path, "--mistakes", "0")
    assert demo.returncode == 0, demo.stderr
    verify = _run("audit", "verify", "--data-dir", "D", cwd=tmp_path)
    assert verify.returncode == 0, verify.stderr
    assert verify.stdout.startswith("OK ")
    export = _run("audit", "export", "--data-dir", "D", "--out", "log.jsonl", cwd=tmp_path)
    assert export.returncode == 0, export.stderr
    # Redirected output is not wrapped: the public key stays on the line that names it.
    assert len(export.stdout.splitlines()) == 1
    public_key = (tmp_path / "D" / "signing-key.pub").read_text().strip()
    assert export.stdout.rstrip().endswith(f"public key {public_key}")
    offline = _run(
        "audit",
        "verify",
        "--export",
        "log.jsonl",
        "--public-key",
        "D/signing-key.pub",
        cwd=tmp_path,
    )
    assert offline.returncode == 0, offline.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["D", "log.jsonl"]


def test_redirected_tables_are_not_cut_at_80_columns(tmp_path: Path) -> None:
    result = _run("rtp", "baccarat", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout
    for bet in ("banker_no_commission", "player_dragon_bonus", "dragon_tiger_tie"):
        assert re.search(rf"\b{bet}\b", result.stdout), result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) > 80
