"""Where every ``livetable`` process finds its settings: ``LIVETABLE_*`` environment
variables over an optional TOML file, and the settings that every command, the drivers'
included, reads before anything else (how to log).

It sits with the drivers, the lowest layer that has commands, so that a shoe or camera
command configures its logging as the table service does without importing it. The
table service's :class:`table_service.config.Settings` extends :class:`BaseSettings`.

Precedence (highest first): constructor arguments, environment, the TOML file named by
``LIVETABLE_CONFIG`` (or ``./livetable.toml`` when present), defaults.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings as PydanticBaseSettings
from pydantic_settings import (
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)


class SettingsFileError(ValueError):
    """The configuration file cannot be read, is not UTF-8 text, or is not TOML."""


def _toml_file() -> Path | None:
    named = os.environ.get("LIVETABLE_CONFIG")
    if named:
        return Path(named)
    local = Path("livetable.toml")
    return local if local.exists() else None


def check_config_file() -> Path | None:
    """The configuration file in force, read and parsed; :class:`SettingsFileError` says in
    one line, naming the file, why it cannot be used (every command checks it first)."""
    path = _toml_file()
    if path is None:
        return None
    where = "LIVETABLE_CONFIG " if os.environ.get("LIVETABLE_CONFIG") else ""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SettingsFileError(
            f"configuration file {where}{path}: cannot read: {exc.strerror or exc}"
        ) from exc
    try:
        tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise SettingsFileError(
            f"configuration file {where}{path}: not UTF-8 text "
            f"(byte 0x{raw[exc.start]:02x} at offset {exc.start}); it is TOML"
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise SettingsFileError(f"configuration file {where}{path}: not valid TOML: {exc}") from exc
    return path


class BaseSettings(PydanticBaseSettings):
    """The ``LIVETABLE_*`` settings every command reads: the log's format and level."""

    model_config = SettingsConfigDict(env_prefix="LIVETABLE_", extra="ignore")

    log_format: Literal["console", "json"] = "console"
    log_level: str | None = Field(
        None, description="Log level; default: the command's own (INFO, WARNING for data commands)"
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[PydanticBaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        toml = check_config_file()
        if toml is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml))
        return tuple(sources)
