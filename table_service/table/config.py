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

from pydantic import BaseModel, ConfigDict, Field, field_validator

from table_service.rules.baccarat import BET_TYPES, Paytable, paytable_from_dict
from table_service.rules.baccarat.paytable import DEFAULT_PAYTABLE_RESOURCE


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


class TableConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    table_id: str = Field(min_length=1, max_length=48, pattern=r"^[A-Za-z0-9_.-]+$")
    game: Literal["baccarat"] = "baccarat"
    decks: int = Field(8, ge=6, le=8)
    cut_card_depth: int = Field(52, ge=1)
    betting_seconds: float = Field(15.0, gt=0, le=600)
    paytable_toml: str | None = Field(None, description="Paytable text; default: rules doc")
    insurance_bet_types: tuple[str, ...] = ()
    limits: StakeLimits = StakeLimits()
    bet_limits: dict[str, StakeLimits] = Field(default_factory=dict)
    max_bets_per_request: int = Field(5000, ge=1)
    shoe: ShoeConfig | None = None

    @field_validator("bet_limits")
    @classmethod
    def _known_bets(cls, value: dict[str, StakeLimits]) -> dict[str, StakeLimits]:
        unknown = sorted(set(value) - set(BET_TYPES))
        if unknown:
            raise ValueError(f"limits for unknown bet types {unknown}")
        return value

    @cached_property
    def paytable(self) -> Paytable:
        text = self.paytable_toml
        if text is None:
            from importlib import resources

            text = (
                resources.files("table_service.rules.baccarat")
                .joinpath(DEFAULT_PAYTABLE_RESOURCE)
                .read_text("utf-8")
            )
        try:
            return paytable_from_dict(tomllib.loads(text), source=f"table {self.table_id}")
        except (tomllib.TOMLDecodeError, ValueError) as exc:
            raise ConfigError(f"table {self.table_id}: paytable: {exc}") from exc

    def limits_for(self, bet_type: str) -> StakeLimits:
        return self.bet_limits.get(bet_type, self.limits)

    def snapshot(self) -> dict[str, Any]:
        """The configuration as recorded in the log (no floats: seconds in milliseconds)."""
        data = self.model_dump(mode="json", exclude={"shoe", "betting_seconds"})
        data["betting_ms"] = round(self.betting_seconds * 1000)
        if data["paytable_toml"] is None:
            from importlib import resources

            data["paytable_toml"] = (
                resources.files("table_service.rules.baccarat")
                .joinpath(DEFAULT_PAYTABLE_RESOURCE)
                .read_text("utf-8")
            )
        return data

    @classmethod
    def from_snapshot(cls, data: dict[str, Any]) -> TableConfig:
        values = dict(data)
        values["betting_seconds"] = values.pop("betting_ms") / 1000
        return cls(**values)


def load_tables(path: Path) -> list[TableConfig]:
    """Read a table file; ``paytable = "file.toml"`` is resolved next to it."""
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
        paytable_file = raw.pop("paytable", None)
        if paytable_file is not None:
            try:
                raw["paytable_toml"] = (path.parent / paytable_file).read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"{path}: tables[{index}].paytable: {exc}") from exc
        try:
            table = TableConfig(**raw)
            table.paytable  # noqa: B018 - parse now so a bad paytable fails at start
        except ValueError as exc:
            raise ConfigError(f"{path}: tables[{index}]: {exc}") from exc
        tables.append(table)
    ids = [t.table_id for t in tables]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{path}: duplicate table ids {ids}")
    return tables
