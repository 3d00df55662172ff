"""Runtime configuration: ``LIVETABLE_*`` environment variables over an optional TOML file.

Precedence (highest first): constructor arguments, environment, the TOML file named by
``LIVETABLE_CONFIG`` (or ``./livetable.toml`` when present), defaults. The embedded default
needs no configuration at all: SQLite in ``./livetable-data``.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import (
    BaseSettings,
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


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LIVETABLE_", extra="ignore")

    data_dir: Path = Field(Path("livetable-data"), description="Folder for SQLite and the key")
    database_url: str | None = Field(
        None, description="SQLAlchemy URL; default SQLite <data_dir>/livetable.db"
    )
    log_format: Literal["console", "json"] = "console"
    log_level: str | None = Field(
        None, description="Log level; default: the command's own (INFO, WARNING for data commands)"
    )
    checkpoint_every: int = Field(1000, ge=1, description="Sign a checkpoint every N events")
    log_origin: str = Field(
        "livetable",
        description="Origin line of signed checkpoints and note key name (no spaces, no '+'); "
        "a URL-like name such as studio.example/livetable is recommended",
    )
    tlog_public: bool = Field(False, description="Serve /tlog/ and audit proofs without a token")
    checkpoint_max_age: int = Field(
        300, ge=1, description="Seconds a new event may wait for a checkpoint (serve; --strict)"
    )
    read_model_check_seconds: int = Field(
        300, ge=0, description="serve: check read models against the log every N s (0: off)"
    )
    signing_key: str | None = Field(
        None, description="Ed25519 private key, base64 of the 32-byte seed (overrides the file)"
    )
    signing_key_file: Path | None = Field(None, description="default <data_dir>/signing-key")
    host: str = "127.0.0.1"
    port: int = 8000
    table_config: Path | None = Field(None, description="Table config TOML for `serve`")
    sqlite_busy_timeout_ms: int = 10_000
    max_body_bytes: int = Field(1_000_000, ge=1024, description="Largest request body")
    read_pool_size: int = Field(8, ge=1, le=64, description="Connections for read-only work")
    max_amount: int = Field(
        10**12, ge=1, le=10**12, description="Largest stake or transfer, in minor units"
    )
    max_balance: int = Field(
        10**15, ge=1, le=10**15, description="Largest balance an account may reach"
    )
    stream_max_public_per_table: int = Field(
        2000, ge=1, description="Anonymous stream subscribers per table at once"
    )
    stream_max_public_per_address: int = Field(
        50, ge=1, description="Anonymous stream subscribers per client address at once"
    )
    stream_replay_concurrency: int = Field(
        8, ge=1, le=1000, description="Stream clients sending a replay page at once"
    )
    stream_replay_rate: int = Field(
        10_000, ge=100, description="Replay frames a second, all stream clients together"
    )
    stream_replay_share: float = Field(
        0.5,
        gt=0,
        le=1,
        description="Most of the event loop's time stream replays may take (they also wait"
        " for write requests in flight)",
    )
    stream_compression: bool = Field(
        False,
        description="serve: offer permessage-deflate on WebSockets (each frame compressed"
        " per subscriber: CPU for bandwidth)",
    )
    stream_websocket: Literal["websockets-sansio", "websockets"] = Field(
        "websockets-sansio",
        description="serve: uvicorn's WebSocket implementation; websockets-sansio (uvicorn"
        " 0.55's own choice, pinned here) fans a frame out in 23-25 us a subscriber against"
        " 27 for the older websockets, and 28 against 34 us of CPU a frame at 200"
        " subscribers (benchmarks/fanout.py, PostgreSQL, load 5-8)",
    )
    stream_replay_workers: int = Field(
        2, ge=1, le=32, description="Threads that read stream replays (apart from writes)"
    )
    request_threads: int = Field(
        4,
        ge=1,
        le=64,
        description="Threads that run the API's blocking endpoints at once (reads, views, the"
        " studio's directory); more such requests wait for one on the event loop",
    )
    gil_switch_ms: float = Field(
        1.0,
        ge=0.1,
        le=100,
        description="serve: the longest a thread runs Python while another waits for the"
        " interpreter (sys.setswitchinterval; Python's own is 5 ms)",
    )
    nats_url: str | None = Field(
        None, description="Also publish the stream to NATS JetStream at this URL"
    )
    nats_stream: str = Field("LIVETABLE", description="The studio's JetStream stream")
    nats_subject_root: str = Field(
        "livetable",
        pattern=r"^[A-Za-z0-9_-]+$",
        description="The first token of the studio's NATS subjects (one studio per root: "
        "two streams on one server cannot share subjects)",
    )
    node_id: str | None = Field(
        None, description="This serve process in the studio's leases; default host:port"
    )
    advertise_url: str | None = Field(
        None, description="Where clients reach this process; default http://host:port"
    )
    metrics_address: str | None = Field(
        None,
        description="serve, operator-feed: Prometheus metrics on this HOST:PORT (port 0: any "
        "free port; never the API's port); default: none (the demo: 127.0.0.1:9464)",
    )
    metrics_path: str = Field(
        "/metrics", pattern=r"^/[A-Za-z0-9/_.-]*$", description="Path of the metrics listener"
    )
    memory_trace_seconds: float = Field(
        0.0,
        ge=0,
        description="serve: sample memory (RSS and tracemalloc's top growth) "
        "every N s, for a soak (0: off; tracing costs CPU and memory)",
    )
    memory_trace_file: Path | None = Field(
        None, description="serve: the memory samples as JSON lines"
    )
    takeover_seconds: float = Field(
        10.0, gt=0, le=600, description="A dead process's tables run elsewhere within this"
    )

    @field_validator("log_origin")
    @classmethod
    def _origin(cls, value: str) -> str:
        from audit.note import NoteError, check_key_name

        try:
            return check_key_name(value, what="log origin")
        except NoteError as exc:
            raise ValueError(str(exc)) from exc

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
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

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'livetable.db').resolve()}"

    @property
    def resolved_signing_key_file(self) -> Path:
        return self.signing_key_file or self.data_dir / "signing-key"

    def ensure_data_dir(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
