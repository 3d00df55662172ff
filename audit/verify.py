"""Independent verification of the log: chain links, event hashes, Merkle roots, signatures.

The verifier works on plain rows (from the database or from an export file), so a
regulator's copy is checked by exactly the code that checks the live database. It stops
at the first problem and names the first bad sequence number, diagnosing the usual
tamperings (altered, missing, inserted, reordered rows; truncated tail; foreign key).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from audit.canonical import NonCanonicalValue
from audit.chain import GENESIS_HASH, EventBody, event_hash
from audit.merkle import MerkleFrontier
from audit.note import (
    ALG_ED25519,
    NoteError,
    VerifierKey,
    checkpoint_text,
    open_note,
    parse_checkpoint,
)
from audit.signing import verify_signature


class EventRow(Protocol):
    seq: int
    table_id: str
    round_id: str | None
    type: str
    actor: str
    ts: str
    prev_hash: str
    hash: str

    @property
    def payload(self) -> Any: ...


class CheckpointRow(Protocol):
    size: int
    origin: str
    root_hash: str
    key_id: str
    signature: str
    note: str | None


Trusted = Mapping[str, Ed25519PublicKey] | Sequence[VerifierKey]


def _verifiers(trusted: Trusted, origin: str) -> list[VerifierKey]:
    if isinstance(trusted, Mapping):
        return [VerifierKey(origin, ALG_ED25519, key) for key in trusted.values()]
    return list(trusted)


def checkpoint_problem(cp: CheckpointRow, trusted: Trusted) -> str | None:
    """Why ``cp`` is not a checkpoint signed by a trusted key (None when it is).

    The signed note is what a regulator's client checks, so when it is stored it is the
    authority: its signature must verify and its text must be exactly the row's origin,
    size and root. Checkpoints written before notes fall back to the bare signature.
    """
    try:
        body = checkpoint_text(cp.origin, cp.size, bytes.fromhex(cp.root_hash))
    except (NoteError, ValueError) as exc:
        return f"unusable checkpoint: {exc}"
    verifiers = _verifiers(trusted, cp.origin)
    note = getattr(cp, "note", None)
    if note:
        try:
            opened = open_note(note, verifiers)
            parsed = parse_checkpoint(opened.text)
        except NoteError as exc:
            return f"signed note: {exc}"
        if opened.text != body or parsed.size != cp.size:
            return "signed note does not match the checkpoint's origin, size and root"
        return None
    for verifier in verifiers:
        if verifier.name == cp.origin and verify_signature(
            verifier.public_key, body.encode(), cp.signature
        ):
            return None
    return f"no trusted key signed it (key id {cp.key_id})"


@dataclass(frozen=True)
class Problem:
    seq: int
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"sequence {self.seq}: {self.kind}: {self.detail}"


@dataclass
class VerifyReport:
    events: int = 0
    checkpoints_checked: int = 0
    sealed_size: int = 0
    problem: Problem | None = None
    notes: list[str] = field(default_factory=list)
    tail_start: tuple[int, str] | None = None  # (seq, ts) of the first unsealed event
    last_checkpoint_at: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None

    @property
    def first_bad_seq(self) -> int | None:
        return self.problem.seq if self.problem else None

    @property
    def unsealed(self) -> int:
        return max(0, self.events - self.sealed_size)


def _payload(row: EventRow) -> dict[str, Any]:
    raw = row.payload
    return json.loads(raw) if isinstance(raw, str) else raw


def verify_log(
    rows: Iterable[EventRow],
    checkpoints: Iterable[CheckpointRow],
    trusted_keys: Trusted,
) -> VerifyReport:
    """``rows`` must be in sequence order; ``trusted_keys`` are note verifier keys (or a
    mapping of any id to public keys, whose note names are then the checkpoints' origin)."""
    report = VerifyReport()
    pending = sorted(checkpoints, key=lambda c: c.size)
    next_cp = 0
    frontier = MerkleFrontier()
    expected, prev, prev_prev = 1, GENESIS_HASH, None
    last_sealed = 0
    tail_start: tuple[int, str] | None = None

    def fail(seq: int, kind: str, detail: str) -> VerifyReport:
        report.problem = Problem(seq, kind, detail)
        return report

    for row in rows:
        if row.seq != expected:
            if row.seq > expected:
                return fail(expected, "missing", f"events {expected}..{row.seq - 1} are absent")
            return fail(row.seq, "out of order", f"expected {expected}")
        if row.prev_hash != prev:
            if prev_prev is not None and row.prev_hash == prev_prev:
                return fail(row.seq - 1, "inserted", "this row is not part of the chain")
            return fail(row.seq, "broken link", "prev_hash does not match the previous event")
        if not getattr(row, "redacted", False):  # a bundle's out-of-scope event: links only
            try:
                body = EventBody(
                    row.table_id, row.round_id, row.type, row.actor, row.ts, _payload(row)
                ).canonical()
            except (ValueError, NonCanonicalValue) as exc:
                return fail(row.seq, "unreadable", str(exc))
            if event_hash(row.seq, row.prev_hash, body) != row.hash:
                return fail(row.seq, "altered", "content does not match its hash")
        if tail_start is None:
            tail_start = (row.seq, row.ts)
        frontier.append(bytes.fromhex(row.hash))
        report.events += 1
        prev_prev, prev = prev, row.hash
        expected += 1
        while next_cp < len(pending) and pending[next_cp].size == frontier.size:
            cp = pending[next_cp]
            problem = checkpoint_problem(cp, trusted_keys)
            if problem is not None:
                return fail(cp.size, "checkpoint signature", problem)
            if frontier.root().hex() != cp.root_hash:
                return fail(
                    last_sealed + 1,
                    "checkpoint root",
                    f"Merkle root of events 1..{cp.size} differs from the signed checkpoint; "
                    f"the change lies in {last_sealed + 1}..{cp.size}",
                )
            last_sealed = cp.size
            tail_start = None
            report.last_checkpoint_at = getattr(cp, "created_at", None)
            report.checkpoints_checked += 1
            next_cp += 1
    report.sealed_size = last_sealed
    if next_cp < len(pending):
        cp = pending[next_cp]
        return fail(
            expected,
            "truncated",
            f"signed checkpoint covers {cp.size} events but the log ends at {expected - 1}",
        )
    report.tail_start = tail_start
    if report.unsealed and tail_start is not None:
        report.notes.append(
            f"{report.unsealed} event(s) after the last signed checkpoint "
            f"(sequence {tail_start[0]} on, the first at {tail_start[1]})"
        )
    return report


def verify_database(session: Any, trusted_keys: Trusted) -> VerifyReport:
    """Verify the whole log in the database, streaming rows in sequence order."""
    from sqlalchemy import select

    from audit.models import AuditCheckpoint, AuditEvent

    checkpoints = list(session.scalars(select(AuditCheckpoint)))
    rows = session.scalars(
        select(AuditEvent).order_by(AuditEvent.seq).execution_options(yield_per=2000)
    )
    return verify_log(rows, checkpoints, trusted_keys)
