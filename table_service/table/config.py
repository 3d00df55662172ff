"""Table configuration: game, shoe, limits, paytable, and the reader attached to it.

A table file (TOML) lists one or more ``[[tables]]``. The configuration a table runs
under is recorded in its ``table_opened`` event (paytable text included), so a replay of
the log settles with exactly the terms that were live, whatever the file says today.
"""

from __future__ import annotations

import tomllib
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from table_service.rules.baccarat import Paytable
from table_service.rules.baccarat.live import default_paytable_text
from table_service.rules.game import LiveGame, RulesRefusal
from table_service.rules.games import GAMES, find_game


class ConfigError(ValueError):
    """A table configuration that cannot run (bad file, bad value, unreadable paytable)."""


class StakeLimits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    min_stake: int = Field(100, ge=1)
    max_stake: int = Field(5_000_000, ge=1)


class ShoeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    port: str = Field(description="pyserial URL or device path, e.g. /dev/ttyUSB0")
    dialect: Literal["framed", "ascii"] = "framed"
    baud: int = 9600


class CameraConfig(BaseModel):
    """A camera over the shoe: alone, or with ``shoe`` to cross-check every card."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(description="device index (0), video file, RTSP/HTTP URL, or sim:NAME")
    calibration: str = Field(description="file written by `livetable camera calibrate`")
    roi: str | None = Field(None, description="region of interest x,y,w,h in frame pixels")
    window_seconds: float = Field(
        3.0, gt=0, le=60, description="with a shoe too: how long both may take to see a card"
    )

    @field_validator("roi")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        if value is not None:
            from shoe_reader.camera.recognize import parse_roi

            parse_roi(value)
        return value


class TableConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    table_id: str = Field(min_length=1, max_length=48, pattern=r"^[A-Za-z0-9_.-]+$")
    game: str = Field("baccarat", description="a registered game: rules/games.py")
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
        game = GAMES.get(str(data.get("game", "baccarat")))
        for key, method in (("decks", "decks_for"), ("betting_seconds", "betting_seconds_for")):
            default = getattr(game, method, None)
            if data.get(key) is None and default is not None:
                try:
                    data = {**data, key: default(_game_rules(data))}
                except RulesRefusal as exc:
                    raise ValueError(str(exc)) from exc
        return data

    @model_validator(mode="after")
    def _game_accepts(self) -> TableConfig:
        if self.game not in GAMES:
            raise ValueError(f"unknown game {self.game!r}; known: {sorted(GAMES)}")
        rules = self.rules  # the game checks decks, paytable and its own rule keys
        unknown = sorted(set(self.bet_limits) - set(self.game_impl.bet_types(rules)))
        if unknown:
            raise ValueError(f"limits for unknown bet types {unknown}")
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

    @property
    def paytable(self) -> Paytable:
        """A baccarat table's paytable."""
        paytable = getattr(self.rules, "paytable", None)
        if not isinstance(paytable, Paytable):
            raise ConfigError(f"table {self.table_id}: a {self.game} table has no paytable")
        return paytable

    def limits_for(self, bet_type: str) -> StakeLimits:
        return self.bet_limits.get(bet_type, self.limits)

    def snapshot(self) -> dict[str, Any]:
        """The configuration as recorded in the log (no floats: seconds in milliseconds)."""
        data = self.model_dump(mode="json", exclude={"shoe", "camera", "betting_seconds"})
        data["betting_ms"] = round(self.betting_seconds * 1000)
        if data["paytable_toml"] is None and self.game == "baccarat":
            data["paytable_toml"] = default_paytable_text()
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
    rules = dict(data.get("game_rules") or {})
    if data.get("profile") is not None:
        if rules.get("profile", data["profile"]) != data["profile"]:
            raise ValueError("give the profile once: profile or game_rules.profile")
        rules["profile"] = data["profile"]
    return rules


def load_tables(path: Path) -> list[TableConfig]:
    """Read a table file; ``paytable = "file.toml"`` and ``profile_file = "file.toml"``
    are resolved next to it."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    raw_tables = data.get("tables")
    if not isinstance(raw_tables, list) or not raw_tables:
        raise ConfigError(f"{path}: needs at least one [[tables]] entry")
    tables: list[TableConfig] = []
    for index, raw in enumerate(raw_tables):
        raw = dict(raw)
        if "reader" in raw:
            raw.update(_reader(raw.pop("reader"), path))
        paytable_file = raw.pop("paytable", None)
        if paytable_file is not None:
            try:
                raw["paytable_toml"] = (path.parent / paytable_file).read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"{path}: tables[{index}].paytable: {exc}") from exc
        profile_file = raw.pop("profile_file", None)  # a Xì Dách table's own profile
        if profile_file is not None:
            try:
                text = (path.parent / profile_file).read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"{path}: tables[{index}].profile_file: {exc}") from exc
            raw["game_rules"] = {**dict(raw.get("game_rules") or {}), "profile_toml": text}
        try:
            table = TableConfig(**raw)
        except ValueError as exc:
            raise ConfigError(f"{path}: tables[{index}]: {exc}") from exc
        tables.append(table)
    ids = [t.table_id for t in tables]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{path}: duplicate table ids {ids}")
    return tables


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
    and a ``camera`` table; a calibration file is resolved next to the table file.
    """
    if not isinstance(spec, dict):
        raise ValueError("reader must be a table: reader = { kind = ..., ... }")
    spec = dict(spec)
    kind = spec.pop("kind", "serial")
    if kind == "serial":
        return {"shoe": spec}
    if kind == "camera":
        return {"camera": _camera(spec, path)}
    if kind == "both":
        extra = sorted(set(spec) - {"shoe", "camera"})
        if extra or "shoe" not in spec or "camera" not in spec:
            raise ValueError("reader kind 'both' takes a shoe = {...} and a camera = {...}")
        return {"shoe": spec["shoe"], "camera": _camera(dict(spec["camera"]), path)}
    raise ValueError(f"reader kind must be serial, camera or both, not {kind!r}")


def _camera(spec: dict[str, Any], path: Path) -> dict[str, Any]:
    if "calibration" in spec:
        spec["calibration"] = str(path.parent / str(spec["calibration"]))
    return spec
