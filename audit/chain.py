"""The hash chain: how one event's hash is computed from its content and its predecessor."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from audit.canonical import canonical_json

GENESIS_HASH = "0" * 64
DOMAIN = b"livetable-event-v1\x00"


def utc_timestamp(moment: datetime | None = None) -> str:
    """Fixed-width ISO-8601 UTC with microseconds, so the text form is canonical too."""
    moment = (moment or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class EventBody:
    """Everything of an event that is hashed, apart from its sequence number and link."""

    table_id: str
    round_id: str | None
    type: str
    actor: str
    ts: str
    payload: dict[str, Any]

    def canonical(self, payload_canonical: bytes | None = None) -> bytes:
        """RFC 8785 bytes of the whole event. The keys are fixed and sort as
        actor < payload < round_id < table_id < ts < type, so the payload's own canonical
        bytes (computed once and also stored) are spliced in rather than encoded twice."""
        if payload_canonical is None:
            payload_canonical = canonical_json(self.payload)
        head = canonical_json({"actor": self.actor})[:-1]
        tail = canonical_json(
            {"round_id": self.round_id, "table_id": self.table_id, "ts": self.ts, "type": self.type}
        )[1:]
        return head + b',"payload":' + payload_canonical + b"," + tail


def event_hash(seq: int, prev_hash: str, canonical: bytes) -> str:
    """SHA-256 over domain tag, 8-byte big-endian sequence, 32-byte previous hash, body."""
    digest = hashlib.sha256()
    digest.update(DOMAIN)
    digest.update(seq.to_bytes(8, "big"))
    digest.update(bytes.fromhex(prev_hash))
    digest.update(canonical)
    return digest.hexdigest()
