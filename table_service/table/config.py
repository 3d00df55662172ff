"""Table configuration: game, shoe, limits, paytable, and the reader attached to it.

A table file (TOML) lists one or more ``[[tables]]``. The configuration a table runs
under is recorded in its ``table_opened`` event (paytable text included), so a replay of
the log settles with exactly the terms that were live, whatever the file says today.

A table file is checked whole before anything starts: every problem of every table is
one line naming the file, the table and the key (:class:`ConfigError`'s ``problems``), so
an operator fixes them in one pass rather than one per restart. Files a table names
(``paytable``, ``profile_file``, a camera's ``calibration``) are read from the table
file's folder; a relative path that leaves it (``../``, or a link pointing out) is
refused, and an absolute path is the way to use a file elsewhere on purpose.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from table_service.rules.game import LiveGame, RulesRefusal
from table_service.rules.games import DEFAULT_GAME, GAMES, find_game
from table_service.rules.refusal import Refusal


class ConfigError(Refusal):
    """A table configuration that cannot run (bad file, bad value, unreadable paytable).

    ``problems`` holds one line per problem; the message is those lines."""

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        self.problems = list(problems) or [message]
        super().__init__("\n".join(self.problems), code="bad_config")


class KeyedError(Refusal):
    """A validator's refusal that names the table key it concerns (pydantic reports a
    model-level refusal at no location; the loader reads the key from here)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}", code="bad_config")
        self.key = key
        self.message = message


class StakeLimits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    min_stake: int = Field(100, ge=1)
    max_stake: int = Field(5_000_000, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> StakeLimits:
        if self.min_stake > self.max_stake:
            raise ValueError(
                f"min_stake {self.min_stake} is above max_stake {self.max_stake}: "
                "no stake could be taken"
            )
        return self


BAUD_RATES = (1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600)


class ShoeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    port: str = Field(min_length=1, description="pyserial URL or device path, e.g. /dev/ttyUSB0")
    dialect: Literal["framed", "ascii"] = "framed"
    baud: int = 9600

    @field_validator("baud")
    @classmethod
    def _standard_baud(cls, value: int) -> int:
        if value not in BAUD_RATES:
            raise ValueError(f"{value} is not a serial rate ({', '.join(map(str, BAUD_RATES))})")
        return value


class CameraConfig(BaseModel):
    """A camera over the shoe: alone, or with ``shoe`` to cross-check every card."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(
        min_length=1, description="device index (0), video file, RTSP/HTTP URL, or sim:NAME"
    )
    calibration: str = Field(
        min_length=1, description="file written by `livetable camera calibrate`"
    )
    roi: str | None = Field(None, description="region of interest x,y,w,h in frame pixels")
    window_seconds: float = Field(
        3.0, gt=0, le=60, description="with a shoe too: how long both may take to see a card"
    )

    @model_validator(mode="before")
    @classmethod
    def _installed(cls, data: Any) -> Any:
        """A base install has no OpenCV: the table file's problem says which extra."""
        from shoe_reader.camera.extra import CameraExtraMissing, require_camera

        try:
            require_camera("a camera reader")
        except CameraExtraMissing as exc:
            raise ValueError(str(exc)) from None
        return data

    @field_validator("roi")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        if value is not None:
            from shoe_reader.camera.roi import parse_roi

            parse_roi(value)
        return value


class TableConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    table_id: str = Field(min_length=1, max_length=48, pattern=r"^[A-Za-z0-9_.-]+$")
    game: str = Field(DEFAULT_GAME, description="a registered game: rules/games.py")
    decks: int = Field(8, ge=1, le=16, description="the game checks its own range")
    profile: str | None = Field(
        None, description="a Xì Dách house-rule profile (room, classic, forced-draw)"
    )
    cut_card_depth: int = Field(52, ge=1)
    betting_seconds: float = Field(15.0, gt=0, le=600)
    paytable_toml: str | None = Field(None, description="Paytable text; default: rules doc")
    game_rules: dict[str, Any] = Field(
        default_factory=dict, description="the game's rule keys (e.g. blackjack timers, seats)"
    )
    insurance_bet_types: tuple[str, ...] = ()
    limits: StakeLimits = StakeLimits()
    bet_limits: dict[str, StakeLimits] = Field(default_factory=dict)
    max_bets_per_request: int = Field(5000, ge=1)
    void_approval_above: int | None = Field(
        None,
        ge=0,
        description="a void of a round whose open stakes total more than this (minor units) "
        "needs a second supervisor's approval (None: one supervisor voids)",
    )
    shoe: ShoeConfig | None = None
    camera: CameraConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _game_defaults(cls, data: Any) -> Any:
        """A game that says its own deck count and betting window (Xì Dách: the
        profile's) supplies them when the table file does not; else 8 decks, 15 s."""
        if not isinstance(data, dict):
            return data
        game = GAMES.get(str(data.get("game", DEFAULT_GAME)))
        if game is None:
            return data  # refused by _game_accepts, naming the known games
        for key, default in (
            ("decks", game.decks_for),
            ("betting_seconds", game.betting_seconds_for),
        ):
            if data.get(key) is None:
                try:
                    value = default(_game_rules(data))
                except RulesRefusal as exc:
                    raise KeyedError(_rules_key(data), str(exc)) from exc
                if value is not None:
                    data = {**data, key: value}
        return data

    @model_validator(mode="after")
    def _game_accepts(self) -> TableConfig:
        if self.game not in GAMES:
            raise KeyedError("game", f"unknown game {self.game!r}; known: {sorted(GAMES)}")
        try:
            rules = self.rules  # the game checks decks, paytable and its own rule keys
        except ConfigError as exc:
            raise KeyedError(_rules_key(self.model_dump()), str(exc.__cause__ or exc)) from exc
        unknown = sorted(set(self.bet_limits) - set(self.game_impl.bet_types(rules)))
        if unknown:
            raise KeyedError(
                "bet_limits",
                f"unknown bet types {unknown}; a {self.game} table takes "
                f"{', '.join(self.game_impl.bet_types(rules))}",
            )
        return self

    @property
    def game_impl(self) -> LiveGame:
        return find_game(self.game)

    @cached_property
    def rules(self) -> Any:
        """The game's parsed rules for this table (paytable, rule keys, decks)."""
        try:
            return self.game_impl.load_rules(
                {
                    "decks": self.decks,
                    "paytable_toml": self.paytable_toml,
                    "game_rules": _game_rules(self.model_dump(include={"game_rules", "profile"})),
                    "betting_seconds": self.betting_seconds,
                    "limits": (self.limits.min_stake, self.limits.max_stake),
                }
            )
        except RulesRefusal as exc:
            raise ConfigError(f"table {self.table_id}: {exc}") from exc

    def limits_for(self, bet_type: str) -> StakeLimits:
        return self.bet_limits.get(bet_type, self.limits)

    def snapshot(self) -> dict[str, Any]:
        """The configuration as recorded in the log (no floats: seconds in milliseconds)."""
        data = self.model_dump(mode="json", exclude={"shoe", "camera", "betting_seconds"})
        data["betting_ms"] = round(self.betting_seconds * 1000)
        if data["paytable_toml"] is None:  # the game's default, recorded as text
            data["paytable_toml"] = self.game_impl.default_paytable_toml()
        if not data["game_rules"]:
            del data["game_rules"]  # a baccarat table's record stays as it always was
        if data["profile"] is None:
            del data["profile"]
        if data["void_approval_above"] is None:
            del data["void_approval_above"]  # likewise a table without the two-person rule
        return data

    @classmethod
    def from_snapshot(cls, data: dict[str, Any]) -> TableConfig:
        values = dict(data)
        values["betting_seconds"] = values.pop("betting_ms") / 1000
        return cls(**values)


def _game_rules(data: dict[str, Any]) -> dict[str, Any]:
    """The game's rule keys, with a top-level ``profile`` folded in."""
    given = data.get("game_rules")
    if given is not None and not isinstance(given, Mapping):
        # read before the field's own validation (a game's defaults come from it): a
        # scalar here is the same one-line refusal, never a TypeError
        raise KeyedError("game_rules", "must be a table of the game's rule keys")
    rules = dict(given or {})
    if data.get("profile") is not None:
        if rules.get("profile", data["profile"]) != data["profile"]:
            raise KeyedError("profile", "give the profile once: profile or game_rules.profile")
        rules["profile"] = data["profile"]
    return rules


def _rules_key(data: Mapping[str, Any]) -> str:
    """The key a game's refusal of its rules concerns, as the table file spells it."""
    if data.get("profile") is not None:
        return "profile"
    if data.get("paytable_toml"):
        return "paytable"
    rules = data.get("game_rules")
    if isinstance(rules, Mapping) and rules.get("profile_toml"):
        return "profile_file"
    return "game_rules"


def load_tables(path: Path) -> list[TableConfig]:
    """Read and check a whole table file; :class:`ConfigError` lists every problem.

    ``paytable = "file.toml"``, ``profile_file = "file.toml"`` and a camera's
    ``calibration`` are resolved in the table file's folder (see :func:`referenced_file`).
    """
    return tables_from_data(_read_toml(path), path)


def tables_from_data(data: Mapping[str, Any], path: Path) -> list[TableConfig]:
    """The tables of a parsed table file (``path`` names it and anchors its file names)."""
    raw_tables = data.get("tables")
    problems: list[str] = [
        f"{path}: unknown top-level key {key!r} (a table file holds [[tables]] entries)"
        for key in data
        if key != "tables"
    ]
    if not isinstance(raw_tables, list) or not raw_tables:
        raise ConfigError("", [*problems, f"{path}: needs at least one [[tables]] entry"])
    tables: list[TableConfig] = []
    ids = [t.get("table_id") for t in raw_tables if isinstance(t, dict)]
    for index, raw in enumerate(raw_tables):
        where = f"{path}: tables[{index}]"
        if not isinstance(raw, dict):
            problems.append(f"{where}: must be a table ([[tables]]), not {raw!r}")
            continue
        table_id = raw.get("table_id")
        if isinstance(table_id, str):
            # as written when it prints on one line, else quoted: each problem is one line
            where += f" ({table_id})" if table_id.isprintable() else f" ({table_id!r})"
        table, found = _table(dict(raw), path)
        problems += [f"{where} {line}" for line in found]
        if table is not None:
            tables.append(table)
    duplicates = sorted({i for i in ids if isinstance(i, str) and ids.count(i) > 1})
    problems += [f"{path}: table_id {i!r} is given to more than one table" for i in duplicates]
    if problems:
        raise ConfigError("", problems)
    return tables


def _read_toml(path: Path) -> dict[str, Any]:
    """The file's TOML, or one line saying why it cannot be read."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "a table file is TOML"
        ) from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc


def referenced_file(table_file: Path, value: Any) -> Path:
    """A file a table file names: inside the table file's folder, unless absolute.

    A relative name is resolved in the folder of the table file (never the process's
    working directory) and must stay in it once links are followed: ``../../etc/passwd``
    is refused, and a file outside is used only when its absolute path is written."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"must be a file name, not {value!r}")
    given = Path(value)
    if given.is_absolute():
        return given
    folder = table_file.absolute().parent
    candidate = folder / given
    if not candidate.resolve().is_relative_to(folder.resolve()):
        raise ValueError(
            f"{value!r} is outside the table file's folder {folder}; write its absolute "
            "path to use a file elsewhere on purpose"
        )
    return candidate


def _read_referenced(table_file: Path, value: Any) -> str:
    target = referenced_file(table_file, value)
    try:
        return target.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{target} is not UTF-8 text") from exc
    except OSError as exc:
        raise ValueError(f"cannot read {target}: {exc.strerror or exc}") from exc


def _table(raw: dict[str, Any], path: Path) -> tuple[TableConfig | None, list[str]]:
    """One table entry: the configuration, or the problems (``key: message`` lines)."""
    problems: list[str] = []
    if "reader" in raw:
        try:
            raw.update(_reader(raw.pop("reader"), path))
        except KeyedError as exc:
            problems.append(f"reader.{exc.key}: {exc.message}")
        except ValueError as exc:
            problems.append(f"reader: {exc}")
    elif isinstance(raw.get("camera"), dict):
        try:
            raw["camera"] = _camera(dict(raw["camera"]), path)
        except KeyedError as exc:
            problems.append(f"camera.{exc.key}: {exc.message}")
    for key in ("paytable", "profile_file"):
        if key not in raw:
            continue
        value = raw.pop(key)
        try:
            text = _read_referenced(path, value)
        except ValueError as exc:
            problems.append(f"{key}: {exc}")
            continue
        if key == "paytable":
            raw["paytable_toml"] = text
        else:  # a Xì Dách table's own profile
            rules = raw.get("game_rules")
            raw["game_rules"] = {**(rules if isinstance(rules, dict) else {}), "profile_toml": text}
    if problems:
        return None, problems
    try:
        return TableConfig(**raw), []
    except ValidationError as exc:
        return None, [_problem(error) for error in exc.errors()]
    except KeyedError as exc:
        return None, [f"{exc.key}: {exc.message}"]
    except ValueError as exc:
        return None, [f"{exc}"]


def _problem(error: Any) -> str:
    """One pydantic error as ``key.path: message``."""
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, KeyedError):
        return f"{cause.key}: {cause.message}"
    key = ".".join(str(part) for part in error.get("loc", ()))
    message = str(error.get("msg", "invalid"))
    if isinstance(cause, ValueError):
        message = str(cause)
    elif error.get("type") == "extra_forbidden":
        message = "unknown key"
    elif "input" in error and error.get("type") != "missing":
        message += f" (got {error['input']!r})"
    return f"{key or 'table'}: {message}"


_SNAPSHOTS: list[tuple[Any, TableConfig]] = []


def config_from_snapshot(snapshot: Any) -> TableConfig:
    """The parsed configuration of a recorded snapshot, parsed once per snapshot object.

    The cache holds the snapshot itself, so an identity match can never be a recycled id.
    """
    for known, config in _SNAPSHOTS:
        if known is snapshot:
            return config
    config = TableConfig.from_snapshot(dict(snapshot))
    _SNAPSHOTS.insert(0, (snapshot, config))
    del _SNAPSHOTS[16:]
    return config


def _reader(spec: Any, path: Path) -> dict[str, Any]:
    """``reader = {kind = "serial" | "camera" | "both", ...}`` as ``shoe`` and ``camera``.

    ``serial`` takes the shoe's fields, ``camera`` the camera's, ``both`` a ``shoe``
    and a ``camera`` table; a calibration file is resolved in the table file's folder.
    """
    if not isinstance(spec, dict):
        raise ValueError("must be a table: reader = { kind = ..., ... }")
    spec = dict(spec)
    kind = spec.pop("kind", "serial")
    if kind == "serial":
        return {"shoe": spec}
    if kind == "camera":
        return {"camera": _camera(spec, path)}
    if kind == "both":
        extra = sorted(set(spec) - {"shoe", "camera"})
        shoe, camera = spec.get("shoe"), spec.get("camera")
        if extra or not isinstance(shoe, dict) or not isinstance(camera, dict):
            raise ValueError("kind 'both' takes a shoe = {...} and a camera = {...}")
        return {"shoe": shoe, "camera": _camera(dict(camera), path)}
    raise ValueError(f"kind must be serial, camera or both, not {kind!r}")


def _camera(spec: dict[str, Any], path: Path) -> dict[str, Any]:
    """The camera's calibration file, resolved in the table file's folder; it must exist
    (the reader would otherwise fail only when the table opens)."""
    if "calibration" in spec:
        try:
            target = referenced_file(path, spec["calibration"])
        except ValueError as exc:
            raise KeyedError("calibration", str(exc)) from exc
        if not target.is_file() or not os.access(target, os.R_OK):
            raise KeyedError("calibration", f"no readable file {target}")
        spec["calibration"] = str(target)
    return spec
