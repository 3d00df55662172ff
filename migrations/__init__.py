"""Alembic environment of livetable, usable without an alembic.ini on disk."""

from __future__ import annotations

from pathlib import Path

from alembic.config import Config

HERE = Path(__file__).resolve().parent


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(HERE))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config
