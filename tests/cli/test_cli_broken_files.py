"""Every ``livetable`` command against a corrupt database and a garbage configuration file.

The commands are enumerated from the CLI itself, so a new command is run here too: it
needs arguments below only if it has required ones (the test says so), and it must fail
naming the database unless it is declared as one that never opens the log. Each run is
the real console entry point in its own process: one clear line on standard error, a
non-zero exit, never a traceback.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import typer

from table_service.cli import app
from tests.support.crash_harness import run_cli

# Values for the required arguments of commands that have them (nothing here exists).
ARGS: dict[str, list[str]] = {
    "db backup": ["backup.db"],
    "db restore": ["missing-backup.db"],
    "principal add": ["alice", "--role", "admin"],
    "principal revoke": ["alice"],
    "audit export": ["--out", "out.jsonl"],
    "audit witness": ["--log", "http://127.0.0.1:9", "--verifier-key", "x", "--state", "w"],
    "operator-feed": ["--operator", "op-1", "--nats", "nats://127.0.0.1:9"],
    "shoe read": ["--port", "missing-tty", "--count", "1", "--duration", "1"],
    "camera calibrate": ["--images", "missing-folder", "--out", "c.json"],
    "camera read": ["--source", "missing.mp4", "--calibration", "missing.json"],
    "camera synth calibration": ["--out", "synth"],
    "camera synth video": ["--out", "synth.mp4"],
    "rtp xidach": ["--rounds", "2"],
    "demo": ["--rounds", "1", "--port", "0"],
}
# Commands that never open the log: with a corrupt database they may do their own work.
NO_DATABASE = {
    "rtp baccarat", "rtp blackjack", "rtp xidach",
    "settle baccarat", "settle blackjack", "settle xidach",
    "shoe sim", "shoe read",
    "camera calibrate", "camera read", "camera synth calibration", "camera synth video",
    "audit witness", "audit verifier-key", "operator-feed",
}  # fmt: skip
# Commands whose input is a file of their own, read first (a restore replaces the database:
# a corrupt one is what it is for); they must still stop in one line.
OWN_INPUT_FIRST = {"db restore"}


def _commands() -> Iterator[tuple[str, Any]]:
    def walk(command: Any, path: list[str]) -> Iterator[tuple[str, Any]]:
        children = getattr(command, "commands", None)
        if isinstance(children, dict) and children:
            for name, child in sorted(children.items()):
                yield from walk(child, [*path, name])
        else:
            yield " ".join(path), command

    yield from walk(typer.main.get_command(app), [])


COMMANDS = dict(_commands())


def _argv(name: str) -> list[str]:
    command = COMMANDS[name]
    required = [p for p in command.params if p.required]
    if required and name not in ARGS:
        pytest.fail(f"`livetable {name}` has required arguments: give them values in ARGS")
    return [*name.split(), *ARGS.get(name, [])]


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int | None, str, str]:
    """``python -m table_service.cli ARGV`` in its own process, forked from the tests' serve
    zygote (``tests/support/serve_zygote.py``: the imports made once, not a hundred times)."""
    try:
        done = run_cli(argv, cwd=cwd, env=env, timeout=90)
    except subprocess.TimeoutExpired as exc:
        return None, str(exc.output or ""), str(exc.stderr or "")
    return done.returncode, done.stdout, done.stderr


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVETABLE_")}
    env.update(LIVETABLE_DATA_DIR=str(tmp / "data"), LIVETABLE_LOG_LEVEL="WARNING", **extra)
    return env


def _all(
    tmp: Path, env: dict[str, str], names: list[str]
) -> dict[str, tuple[int | None, str, str]]:
    def one(name: str) -> tuple[str, tuple[int | None, str, str]]:
        cwd = tmp / name.replace(" ", "-")
        cwd.mkdir()
        return name, _run(_argv(name), cwd, env)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, names))


def test_every_command_is_enumerated() -> None:
    assert len(COMMANDS) >= 25
    for name in ("serve", "demo", "db upgrade", "audit verify", "report", "principal add"):
        assert name in COMMANDS
    for name in [*ARGS, *NO_DATABASE, *OWN_INPUT_FIRST]:
        assert name in COMMANDS, f"{name} is no longer a command: update this test"


def test_every_command_refuses_a_garbage_configuration_file(tmp_path: Path) -> None:
    garbage = tmp_path / "livetable.toml"
    garbage.write_bytes(bytes(range(256)) * 8)
    ran = _all(tmp_path, _env(tmp_path, LIVETABLE_CONFIG=str(garbage)), sorted(COMMANDS))
    for name, (status, out, err) in ran.items():
        assert status == 2, f"{name}: exit {status}\n{err}"
        assert "Traceback" not in err + out, f"{name}\n{err}"
        lines = err.strip().splitlines()
        assert len(lines) == 1, f"{name}: {err}"
        assert str(garbage) in lines[0] and "not UTF-8 text" in lines[0], f"{name}: {err}"
    assert not (tmp_path / "data").exists()  # nothing was created on the way


def test_every_command_refuses_a_corrupt_database(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    database = data / "livetable.db"
    database.write_bytes(b"SQLite format 2\x00" + bytes(range(256)) * 64)
    # A command that never opens the log does its own work whatever the database holds
    # (the garbage-configuration test runs it); every other one, a new one too, must stop.
    ran = _all(tmp_path, _env(tmp_path), sorted(set(COMMANDS) - NO_DATABASE))
    assert len(ran) >= 10
    for name, (status, out, err) in ran.items():
        assert "Traceback" not in err + out, f"{name}\n{err}"
        assert status == 2, f"{name}: exit {status}\n{out}\n{err}"
        lines = err.strip().splitlines()
        assert len(lines) == 1, f"{name}: {err}"
        if name in OWN_INPUT_FIRST:
            continue
        assert str(database) in lines[0] or "data/livetable.db" in lines[0], f"{name}: {err}"
        assert "file is not a database" in lines[0], f"{name}: {err}"
    assert database.read_bytes().startswith(b"SQLite format 2\x00")  # left as it was


def test_an_unreachable_postgresql_is_one_line(tmp_path: Path) -> None:
    url = "postgresql+psycopg://postgres:secret@127.0.0.1:9/nothing"
    env = _env(tmp_path, LIVETABLE_DATABASE_URL=url)
    for name in ("db current", "principal list", "serve", "audit verify"):
        cwd = tmp_path / name.replace(" ", "-")
        cwd.mkdir()
        status, _, err = _run(_argv(name), cwd, env)
        assert status == 2, f"{name}: {err}"
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in err, f"{name}: {err}"
        assert "127.0.0.1:9" in lines[0] and "secret" not in lines[0], lines[0]


def test_a_garbage_file_given_on_the_command_line_is_named(tmp_path: Path) -> None:
    """Every command's rules file (enumerated: a new game's too), the table file, an export,
    a held checkpoint, a key, a calibration and a backup: random bytes are one line naming
    the file, exit 2."""
    from audit.signing import Signer

    key = Signer.generate().public_key_b64
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x80" + bytes(range(256)) * 16)
    runs = [[*name.split(), "--rules", str(garbage)] for name, command in COMMANDS.items()
            if any("--rules" in p.opts for p in command.params)]  # fmt: skip
    assert len(runs) >= 6
    runs += [
        ["serve", "--tables", str(garbage)],
        ["principal", "add", "d", "--role", "dealer", "--table", "t", "--tables", str(garbage)],
        ["audit", "verify", "--export", str(garbage), "--public-key", str(garbage)],
        ["audit", "verify", "--export", str(garbage), "--public-key", key],
        ["audit", "witness", "--log", "http://127.0.0.1:9", "--verifier-key", str(garbage),
         "--state", "w", "--once"],
        ["camera", "read", "--source", "0", "--calibration", str(garbage)],
        ["db", "restore", str(garbage)],
    ]  # fmt: skip
    env = _env(tmp_path)

    def one(argv: list[str]) -> tuple[list[str], tuple[int | None, str, str]]:
        return argv, _run(argv, tmp_path, env)

    with ThreadPoolExecutor(max_workers=2) as pool:
        for argv, (status, out, err) in pool.map(one, runs):
            assert status == 2, f"{argv}: exit {status}\n{err}"
            lines = err.strip().splitlines()
            assert len(lines) == 1 and "Traceback" not in err + out, f"{argv}: {err}"
            assert str(garbage) in lines[0] or "garbage.bin" in lines[0], f"{argv}: {err}"
