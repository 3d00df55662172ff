"""A table file is checked whole before anything starts: one line per problem, naming the
file, the table and the key; files it names stay in its folder unless given absolutely."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from table_service.table.config import ConfigError, load_tables, tables_from_data
from tests.support.crash_harness import run_cli

BAD = """
[[tables]]
table_id = "bac-1"
limits = { min_stake = 500, max_stake = 100 }
betting_seconds = 0

[[tables]]
table_id = "bj-1"
game = "blackjack"
game_rules = { seats = 9 }

[[tables]]
table_id = "bj-2"
game = "blackjack"
game_rules = { decision_seconds = 0 }

[[tables]]
table_id = "xd-1"
game = "xidach"
profile = "casino"

[[tables]]
table_id = "x-1"
game = "poker"

[[tables]]
table_id = "bac-2"
bet_limits = { tie = { min_stake = 9, max_stake = 1 }, lion = { max_stake = 5 } }
reader = { kind = "serial", port = "", baud = 12 }

[[tables]]
table_id = "bac-3"
reader = { kind = "laser" }
colour = "red"

[[tables]]
table_id = "bac-1"
"""


def _problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_tables(path)
    return caught.value.problems


def test_every_problem_of_every_table_is_one_line_naming_its_key(tmp_path: Path) -> None:
    path = tmp_path / "tables.toml"
    path.write_text(BAD)
    problems = _problems(path)
    at = f"{path}: tables"
    expected = [
        f"{at}[0] (bac-1) betting_seconds: Input should be greater than 0 (got 0)",
        f"{at}[0] (bac-1) limits: min_stake 500 is above max_stake 100: no stake could be taken",
        f"{at}[1] (bj-1) game_rules: seats must be 1..7, got 9",
        f"{at}[2] (bj-2) game_rules: decision_seconds must be 1..600 seconds, got 0",
        f"{at}[4] (x-1) game: unknown game 'poker'; known: ['baccarat', 'blackjack', 'xidach']",
        f"{at}[5] (bac-2) bet_limits.tie: min_stake 9 is above max_stake 1: no stake could be "
        "taken",
        f"{at}[6] (bac-3) reader: kind must be serial, camera or both, not 'laser'",
        f"{path}: table_id 'bac-1' is given to more than one table",
    ]
    for line in expected:
        assert line in problems, "\n".join(problems)
    assert any(p.startswith(f"{at}[3] (xd-1) profile: unknown profile 'casino'") for p in problems)
    assert f"{at}[5] (bac-2) shoe.port: String should have at least 1 character (got '')" in (
        problems
    )
    baud = f"{at}[5] (bac-2) shoe.baud: 12 is not a serial rate"
    assert any(p.startswith(baud) for p in problems)
    assert all("\n" not in p for p in problems)
    assert len(problems) == len(set(problems)) >= 11


def test_a_table_file_that_is_not_text_or_not_toml_is_one_line(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.toml"
    garbage.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    (line,) = _problems(garbage)
    assert line.startswith(f"{garbage}: not UTF-8 text (byte 0x89 at offset 0)")
    broken = tmp_path / "broken.toml"
    broken.write_text("[[tables]\ntable_id = ")
    (line,) = _problems(broken)
    assert line.startswith(f"{broken}: not valid TOML")
    (line,) = _problems(tmp_path / "missing.toml")
    assert line == f"{tmp_path / 'missing.toml'}: cannot read: No such file or directory"
    empty = tmp_path / "empty.toml"
    empty.write_text("[[table]]\ntable_id = 'x'\n")
    assert _problems(empty) == [
        f"{empty}: unknown top-level key 'table' (a table file holds [[tables]] entries)",
        f"{empty}: needs at least one [[tables]] entry",
    ]


def _paytable_table(name: str) -> str:
    return f'[[tables]]\ntable_id = "bac-1"\npaytable = "{name}"\n'


def test_named_files_are_read_in_the_table_files_folder_and_never_above_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from table_service.rules.baccarat.live import default_paytable_text

    studio = tmp_path / "studio"
    (studio / "paytables").mkdir(parents=True)
    (studio / "paytables" / "house.toml").write_text(default_paytable_text())
    (tmp_path / "secret.toml").write_text(default_paytable_text())
    tables = studio / "tables.toml"
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # never the process's working directory

    tables.write_text(_paytable_table("paytables/house.toml"))
    (table,) = load_tables(tables)
    assert table.paytable_toml == default_paytable_text()

    tables.write_text(_paytable_table("../secret.toml"))
    (line,) = _problems(tables)
    assert line.startswith(f"{tables}: tables[0] (bac-1) paytable: '../secret.toml' is outside")
    assert "write its absolute path" in line

    # A link in the folder pointing out of it is refused too...
    os.symlink(tmp_path / "secret.toml", studio / "paytables" / "link.toml")
    tables.write_text(_paytable_table("paytables/link.toml"))
    (line,) = _problems(tables)
    assert "'paytables/link.toml' is outside" in line

    # ...while an absolute path is taken as written, on purpose.
    tables.write_text(_paytable_table(str(tmp_path / "secret.toml")))
    (table,) = load_tables(tables)
    assert table.paytable_toml == default_paytable_text()

    tables.write_text(
        '[[tables]]\ntable_id = "xd-1"\ngame = "xidach"\nprofile_file = "../../etc/passwd"\n'
    )
    (line,) = _problems(tables)
    assert "profile_file: '../../etc/passwd' is outside" in line
    (studio / "notes.txt").write_text("not a profile at all\n")
    tables.write_text(
        f'[[tables]]\ntable_id = "xd-1"\ngame = "xidach"\nprofile_file = "{studio / "notes.txt"}"\n'
    )
    (line,) = _problems(tables)  # read as given (absolute), then refused by the game
    assert "(xd-1) profile_file: profile_toml: not valid TOML" in line

    (studio / "binary.toml").write_bytes(b"\xff\xfe\x00")
    tables.write_text(_paytable_table("binary.toml"))
    (line,) = _problems(tables)
    assert line.endswith(f"paytable: {studio / 'binary.toml'} is not UTF-8 text")

    tables.write_text(
        '[[tables]]\ntable_id = "bac-1"\n'
        'reader = { kind = "camera", source = "0", calibration = "../cal.json" }\n'
        '[[tables]]\ntable_id = "bac-2"\n'
        'camera = { source = "0", calibration = "missing.json" }\n'
    )
    problems = _problems(tables)
    assert any("(bac-1) reader.calibration: '../cal.json' is outside" in p for p in problems)
    assert any(
        f"(bac-2) camera.calibration: no readable file {studio / 'missing.json'}" in p
        for p in problems
    )


# Any structure a TOML file can hold: the loader answers with tables or a ConfigError.
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(["baccarat", "blackjack", "xidach", "room", "serial", "camera", "../x"]),
)
_keys = st.sampled_from(
    ["table_id", "game", "decks", "profile", "limits", "bet_limits", "min_stake", "max_stake",
     "reader", "kind", "port", "shoe", "camera", "paytable", "profile_file", "game_rules",
     "seats", "betting_seconds", "calibration", "x"]
)  # fmt: skip


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(inner, max_size=3), st.dictionaries(_keys, inner, max_size=4))


_values = st.recursive(_scalars, _containers, max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["tables", "other"]), _values, max_size=2))
@example({"tables": [{"game_rules": True}]})  # found by CI: read before its validation
@example({"tables": [{"table_id": "\n"}]})  # found by CI: an id written on two lines
def test_any_structure_is_a_configuration_or_a_config_error(data: dict[str, Any]) -> None:
    try:
        tables_from_data(data, Path("/nonexistent/tables.toml"))
    except ConfigError as exc:
        assert exc.problems and all(p and "\n" not in p for p in exc.problems)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVETABLE_")}
    env["LIVETABLE_DATA_DIR"] = str(cwd / "data")
    return run_cli(list(args), cwd=cwd, env=env, timeout=120)


def test_serve_refuses_a_bad_table_file_before_anything_starts(tmp_path: Path) -> None:
    path = tmp_path / "tables.toml"
    path.write_text('[[tables]]\ntable_id = "bac-1"\nlimits = {min_stake = 500, max_stake = 100}\n')
    done = _cli("serve", "--tables", str(path), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"table configuration: {path}: tables[0] (bac-1) limits: min_stake 500 is above "
        "max_stake 100: no stake could be taken"
    ]
    assert not (tmp_path / "data").exists()  # no database, no key: nothing started
    path.write_bytes(os.urandom(64) + b"\xff")
    done = _cli("serve", "--tables", str(path), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"table configuration: {path}: not UTF-8 text")
    path.write_text(BAD)
    done = _cli("principal", "add", "d1", "--role", "dealer", "--table", "bac-1",
                "--tables", str(path), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) >= 11 and all(x.startswith("table configuration: ") for x in lines)
