"""Independent verification of the log: chain links, event hashes, Merkle roots, signatures.

The verifier works on plain rows (from the database or from an export file), so a
regulator's copy is checked by exactly the code that checks the live database. It stops
at the first problem and names the first bad sequence number, diagnosing the usual
tamperings (altered, missing, inserted, reordered rows; truncated tail; foreign key).

A key is a question: did the holder of this key sign this log? So an event that no
checkpoint signed by a trusted key covers is a failure (``unsigned``, naming the first
such sequence number) unless the caller accepts an unsigned tail explicitly; a chain
recomputed after an edit is then caught however well it is re-hashed. And a regulator who
kept a checkpoint from before (:func:`open_held_checkpoint`) has the log prove, with an
RFC 9162 consistency proof, that its newest signed tree extends the one it holds
(:func:`check_extends`): a log truncated or rewritten and re-signed with a stolen key
cannot.
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
from audit.proof import ProofError, Subtree, consistency_proof, verify_consistency
from audit.signing import verify_signature


class EventRecord(Protocol):
    """What a reader of the log reads of an event, wherever it is held (a database row, an
    export's or a bundle's line): the regulator's folds (replay, records, report) read no
    more. The payload is a JSON object, as its text (a row) or parsed (a file's line):
    :func:`event_payload` reads either."""

    @property
    def seq(self) -> int: ...
    @property
    def table_id(self) -> str: ...
    @property
    def round_id(self) -> str | None: ...
    @property
    def type(self) -> str: ...
    @property
    def ts(self) -> str: ...
    @property
    def payload(self) -> Any: ...


class EventRow(EventRecord, Protocol):
    """An event as the chain verifies it: its record, who wrote it and its hashes."""

    @property
    def actor(self) -> str: ...
    @property
    def prev_hash(self) -> str: ...
    @property
    def hash(self) -> str: ...


def event_payload(event: EventRecord) -> dict[str, Any]:
    """The payload as hashed: stored as its JSON text in the database, parsed in files."""
    raw = event.payload
    payload: dict[str, Any] = json.loads(raw) if isinstance(raw, str) else raw
    return payload


class CheckpointRow(Protocol):
    @property
    def size(self) -> int: ...
    @property
    def origin(self) -> str: ...
    @property
    def root_hash(self) -> str: ...
    @property
    def key_id(self) -> str: ...
    @property
    def signature(self) -> str: ...
    @property
    def note(self) -> str | None: ...


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
    newest: CheckpointRow | None = None  # the newest checkpoint verified
    unsigned_accepted: bool = False  # the caller accepted the unsigned tail
    extends: tuple[int, int, int] | None = None  # (held size, newest size, proof hashes)

    @property
    def ok(self) -> bool:
        return self.problem is None

    @property
    def first_bad_seq(self) -> int | None:
        return self.problem.seq if self.problem else None

    @property
    def unsealed(self) -> int:
        return max(0, self.events - self.sealed_size)


def verify_log(
    rows: Iterable[EventRow],
    checkpoints: Iterable[CheckpointRow],
    trusted_keys: Trusted,
    *,
    allow_unsigned_tail: bool = False,
) -> VerifyReport:
    """``rows`` must be in sequence order; ``trusted_keys`` are note verifier keys (or a
    mapping of any id to public keys, whose note names are then the checkpoints' origin).

    Every event must lie under a checkpoint signed by a trusted key; with
    ``allow_unsigned_tail`` the events after the last one are accepted and counted
    (``report.unsealed``), as a live log's newest events are until the next checkpoint."""
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
                    row.table_id, row.round_id, row.type, row.actor, row.ts, event_payload(row)
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
            report.newest = cp
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
        first, unsigned = last_sealed + 1, report.unsealed
        if not allow_unsigned_tail:
            covered = (
                f"the last signed checkpoint covers 1..{last_sealed}"
                if last_sealed
                else "no checkpoint signed by the trusted key covers any"
            )
            return fail(
                first,
                "unsigned",
                f"{unsigned} event(s) from sequence {first} on are not covered by a "
                f"checkpoint signed by the trusted key ({covered})",
            )
        report.unsigned_accepted = True
        report.notes.append(
            f"{unsigned} unsigned event(s) accepted: sequence {first} on, the first at "
            f"{tail_start[1]}; no signed checkpoint vouches for them"
        )
    return report


# -- a checkpoint the regulator already holds ----------------------------------------------
@dataclass(frozen=True)
class HeldCheckpoint:
    """A checkpoint kept from an earlier verification (its signed note, as the log serves
    it at ``/tlog/checkpoint`` or as an export carries it), checked with the trusted key."""

    origin: str
    size: int
    root: bytes
    note: str


def open_held_checkpoint(text: str, trusted_keys: Trusted) -> HeldCheckpoint:
    """Parse and verify a held checkpoint note; :class:`NoteError` names what is wrong.

    The note's own origin line names the log, so the verifier keys of a bare public key
    take that name (a note signed by another key fails, whatever it claims)."""
    from audit.note import parse_note

    origin = parse_checkpoint(parse_note(text).text).origin
    opened = open_note(text, _verifiers(trusted_keys, origin))
    body = parse_checkpoint(opened.text)
    return HeldCheckpoint(body.origin, body.size, body.root, text)


def held_checkpoint(since: HeldCheckpoint | str, trusted_keys: Trusted) -> HeldCheckpoint:
    """``since`` as a verified held checkpoint (note text is opened with the keys)."""
    return since if isinstance(since, HeldCheckpoint) else open_held_checkpoint(since, trusted_keys)


def check_extends(report: VerifyReport, held: HeldCheckpoint, subtree: Subtree) -> None:
    """Prove that the log's newest signed tree extends the held one (RFC 9162 2.1.4).

    ``report`` must come from a successful :func:`verify_log` over the same log whose
    leaves ``subtree`` reads; on failure ``report.problem`` says how the log departs from
    the held checkpoint: truncated (its newest signed tree is smaller, or its checkpoints
    were removed) or rewritten (the proof does not hold)."""
    if not report.ok:
        return
    newest = report.newest
    if newest is not None and newest.origin != held.origin:
        report.problem = Problem(
            1,
            "other log",
            f"the checkpoint held is of log {held.origin!r}, this log signs as {newest.origin!r}",
        )
        return
    newest_size = newest.size if newest is not None else 0
    if held.size == 0:  # the empty tree: every log extends it
        report.extends = (0, newest_size, 0)
        return
    if newest_size < held.size:
        report.problem = Problem(
            newest_size + 1,
            "truncated",
            f"the checkpoint held covers {held.size} events, the newest checkpoint signed in "
            f"this log covers {newest_size} (of {report.events} events present): events or "
            "checkpoints were removed",
        )
        return
    assert newest is not None
    new_root = bytes.fromhex(newest.root_hash)
    try:
        proof = consistency_proof(held.size, newest_size, subtree)
        verify_consistency(held.size, newest_size, held.root, new_root, proof)
    except ProofError as exc:
        report.problem = Problem(
            1,
            "rewritten",
            f"no consistency proof from the checkpoint held (size {held.size}) to this log's "
            f"newest signed checkpoint (size {newest_size}): {exc}; the change lies in "
            f"1..{held.size}",
        )
        return
    report.extends = (held.size, newest_size, len(proof))


def verify_database(
    session: Any,
    trusted_keys: Trusted,
    *,
    allow_unsigned_tail: bool = False,
    since: HeldCheckpoint | str | None = None,
) -> VerifyReport:
    """Verify the whole log in the database, streaming rows in sequence order; with
    ``since`` (a held checkpoint, or its note text: :class:`NoteError` when that does not
    verify), prove that the log extends it (proof hashes from the tree)."""
    from sqlalchemy import select
    from sqlalchemy.orm import sessionmaker

    from audit.models import AuditCheckpoint, AuditEvent
    from audit.tree import LogTree

    held = None if since is None else held_checkpoint(since, trusted_keys)
    checkpoints = list(session.scalars(select(AuditCheckpoint)))
    rows = session.scalars(
        select(AuditEvent).order_by(AuditEvent.seq).execution_options(yield_per=2000)
    )
    report = verify_log(rows, checkpoints, trusted_keys, allow_unsigned_tail=allow_unsigned_tail)
    if held is not None:
        tree = LogTree(sessionmaker(bind=session.get_bind()))
        check_extends(report, held, tree.subtree_function(session))
    return report
