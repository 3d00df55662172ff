"""Regulator export bundles: everything needed to check a period offline, in plain files.

``events.jsonl`` (the chain; events outside the requested table or period keep only their
links and hashes, so every checkpoint and proof still verifies), ``checkpoints/<size>.note``
(each signed note with the witnesses' cosignatures), ``verifier.key``, ``rules/`` (every
table configuration in force, as its ``table_opened`` event recorded it), ``rounds.jsonl``
(each round's settle input and the ledger's record of its bets) and ``MANIFEST.sha256``.

The verifier trusts none of the derived files: it re-derives every settle input from the
events, settles it through the rules code and compares with both the log and the ledger.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from audit.canonical import canonical_json
from audit.cosign import verify_cosignature
from audit.export import ROW_TYPES, ExportError, check_field_types
from audit.models import AuditCheckpoint
from audit.note import (
    ALG_ED25519,
    NoteError,
    VerifierKey,
    parse_checkpoint,
    parse_note,
)
from audit.proof import ProofError, consistency_proof, list_subtree, verify_consistency
from audit.published import note_with_cosignatures
from audit.verify import (
    HeldCheckpoint,
    Trusted,
    VerifyReport,
    check_extends,
    held_checkpoint,
    verify_log,
)
from table_service.regulator.records import fold_records
from table_service.regulator.replay import (
    ReplayError,
    ReplayTotals,
    fold_rounds,
    replay_round,
    rules_hash,
)
from table_service.table.view import bundle_files

log = structlog.get_logger(__name__)

FORMAT = "livetable-bundle/1"
MANIFEST = "MANIFEST.sha256"


class BundleError(ValueError):
    """A bundle that does not verify; the message names the first problem."""


# -- writing -------------------------------------------------------------------------------
@dataclass
class Scope:
    table_id: str | None = None
    date_from: str | None = None  # ISO date or timestamp prefix, inclusive
    date_to: str | None = None  # inclusive (a date covers the whole day)

    def in_period(self, ts: str) -> bool:
        if self.date_from and ts < self.date_from:
            return False
        return not (self.date_to and ts[: len(self.date_to)] > self.date_to)

    def table_ok(self, table_id: str) -> bool:
        return self.table_id is None or table_id == self.table_id


@dataclass
class BundleSummary:
    events: int
    redacted: int
    rounds: int
    checkpoints: int
    size: int


@dataclass(frozen=True, slots=True)
class _Event:
    """An event row as stored: the payload stays the canonical JSON text it was hashed as."""

    seq: int
    table_id: str
    round_id: str | None
    type: str
    actor: str
    ts: str
    payload_text: str
    prev_hash: str
    hash: str

    @property
    def payload(self) -> Any:
        return json.loads(self.payload_text)

    def line(self) -> str:
        head = json.dumps(
            {
                "seq": self.seq,
                "table_id": self.table_id,
                "round_id": self.round_id,
                "type": self.type,
                "actor": self.actor,
                "ts": self.ts,
            },
            ensure_ascii=False,
        )[:-1]
        tail = json.dumps({"prev_hash": self.prev_hash, "hash": self.hash})[1:]
        return f'{head}, "payload": {self.payload_text}, {tail}\n'


def _events(session: Session, size: int, where: str = "") -> Iterator[_Event]:
    """Stream events straight from the driver (the ORM costs more than the export)."""
    connection = session.connection().execution_options(yield_per=5000)
    result = connection.execute(
        text(
            "SELECT seq, table_id, round_id, type, actor, ts, payload, prev_hash, hash"
            f" FROM audit_events WHERE seq <= :size {where} ORDER BY seq"
        ),
        {"size": size},
    )
    for row in result:
        yield _Event(*row)


def _recorded(session: Session, round_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """bet id → stake, result and return as the ledger holds them."""
    from table_service.models import BetRow, LedgerEntry

    out: dict[str, dict[str, Any]] = {}
    wanted = list(round_ids)
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        for bet in session.scalars(select(BetRow).where(BetRow.round_id.in_(chunk))):
            out[bet.bet_id] = {
                "round_id": bet.round_id,
                "account": bet.account_id,
                "type": bet.bet_type,
                "stake": bet.stake,
                "result": bet.result,
                "returned": bet.returned,
            }
        bets = select(BetRow.bet_id).where(BetRow.round_id.in_(chunk))
        entries = session.scalars(select(LedgerEntry).where(LedgerEntry.bet_id.in_(bets)))
        for entry in entries:
            record = out.get(entry.bet_id or "")
            if record is None:
                continue
            if entry.kind == "stake":
                record["stake"] = -entry.amount
            elif entry.kind == "return":
                record["returned"] = entry.amount
    return out


def write_bundle(
    session: Session, public_key: Any, origin: str, out: Path, scope: Scope | None = None
) -> BundleSummary:
    """Write a bundle of the log up to its latest checkpoint into the new folder ``out``."""
    scope = scope or Scope()
    latest = session.scalars(
        select(AuditCheckpoint).order_by(AuditCheckpoint.size.desc()).limit(1)
    ).first()
    if latest is None:
        raise BundleError("the log has no checkpoint yet: sign one first (audit checkpoint)")
    out.mkdir(parents=True, exist_ok=False)
    (out / "checkpoints").mkdir()
    (out / "rules").mkdir()
    size = latest.size

    # Which rounds are in scope: their table, and opened within the period.
    in_scope: set[str] = set()
    for event in _events(session, size, "AND type = 'betting_opened'"):
        if scope.table_ok(event.table_id) and scope.in_period(event.ts):
            in_scope.add(event.payload["round_id"])
    everything = scope.table_id is None and not scope.date_from and not scope.date_to

    def wanted(event: _Event) -> bool:
        if everything:
            return True
        if not scope.table_ok(event.table_id):
            return False
        if event.type == "table_opened":
            return not scope.date_to or event.ts[: len(scope.date_to)] <= scope.date_to
        if event.round_id is not None:
            return event.round_id in in_scope
        from_round = (
            event.payload.get("from_round") if '"from_round"' in event.payload_text else None
        )
        if from_round is not None:
            return from_round in in_scope
        return scope.in_period(event.ts)

    kept: list[_Event] = []
    redacted = count = 0
    with (out / "events.jsonl").open("w", encoding="utf-8") as handle:
        for event in _events(session, size):
            count += 1
            if wanted(event):
                kept.append(event)
                handle.write(event.line())
            else:
                redacted += 1
                line = {"seq": event.seq, "prev_hash": event.prev_hash, "hash": event.hash}
                handle.write(json.dumps({**line, "redacted": True}) + "\n")

    checkpoints = 0
    for cp in session.scalars(select(AuditCheckpoint).order_by(AuditCheckpoint.size)):
        text = note_with_cosignatures(session, cp, public_key)
        (out / "checkpoints" / f"{cp.size}.note").write_text(text, encoding="utf-8")
        checkpoints += 1
    (out / "verifier.key").write_text(
        str(VerifierKey(origin, ALG_ED25519, public_key)) + "\n", encoding="utf-8"
    )

    folded = fold_rounds(kept)
    for ref, config in folded.rules.items():
        name = ref.replace("@", "-")
        (out / "rules" / f"{name}.json").write_text(
            canonical_json(config).decode("utf-8") + "\n", encoding="utf-8"
        )
        paytable = config.get("paytable_toml")
        if isinstance(paytable, str):
            (out / "rules" / f"{name}.paytable.toml").write_text(paytable, encoding="utf-8")
    records = fold_records(kept)
    with (out / "shoes.jsonl").open("w", encoding="utf-8") as handle:
        for shoe in records.shoes:
            handle.write(json.dumps(shoe, ensure_ascii=False) + "\n")
    recorded = _recorded(session, sorted(folded.rounds))
    rounds = 0
    with (out / "rounds.jsonl").open("w", encoding="utf-8") as handle:
        for fold in sorted(folded.rounds.values(), key=lambda f: f.first_seq):
            line = _round_line(fold, folded.rules[fold.rules_ref])
            line["record"] = records.rounds.get(fold.round_id)
            line["recorded"] = [
                {"bet_id": bet_id, **{k: v for k, v in recorded[bet_id].items() if k != "round_id"}}
                for bet_id in fold.bets
                if bet_id in recorded
            ]
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
            rounds += 1
    header = {"format": FORMAT, "origin": origin, "size": size, "events": count}
    if scope.table_id or scope.date_from or scope.date_to:
        header["scope"] = {"table": scope.table_id, "from": scope.date_from, "to": scope.date_to}
    (out / "bundle.json").write_text(json.dumps(header, indent=2) + "\n", encoding="utf-8")
    _write_manifest(out)
    return BundleSummary(count, redacted, rounds, checkpoints, size)


def _round_line(fold: Any, config: dict[str, Any]) -> dict[str, Any]:
    return {
        "game": fold.game,
        "table_id": fold.table_id,
        "round_id": fold.round_id,
        "status": fold.status,
        "rules": f"rules/{fold.rules_ref.replace('@', '-')}.json",
        "rules_sha256": rules_hash(config),
        "settle_input": fold.settle_input(),
    }


def _files(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name != MANIFEST
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_manifest(root: Path) -> None:
    names = _files(root)
    undeclared = bundle_files([*names, MANIFEST])  # made for a regulator: declared so
    if undeclared:
        log.warning("bundle.undeclared_files", files=undeclared)
    lines = [f"{_sha256(root / name)}  {name}\n" for name in names]
    (root / MANIFEST).write_text("".join(lines), encoding="utf-8")


# -- verifying ------------------------------------------------------------------------------
@dataclass
class _Row:
    seq: int
    prev_hash: str
    hash: str
    table_id: str = ""
    round_id: str | None = None
    type: str = ""
    actor: str = ""
    ts: str = ""
    payload: Any = None
    redacted: bool = False


@dataclass
class _Checkpoint:
    size: int
    origin: str
    root_hash: str
    key_id: str
    signature: str
    note: str | None


@dataclass
class BundleReport:
    events: int = 0
    redacted: int = 0
    checkpoints: int = 0
    proofs: int = 0
    witnessed_size: dict[str, int] = field(default_factory=dict)
    extends: tuple[int, int, int] | None = None  # (held size, newest size, proof hashes)
    newest_note: str | None = None
    newest_size: int | None = None
    totals: ReplayTotals = field(default_factory=ReplayTotals)
    replayed: bool = False
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        t = self.totals
        if not self.replayed:
            return (
                f"OK: {self.events} events, {self.checkpoints} checkpoints, "
                f"{self.proofs} consistency proofs verified (no replay)"
            )
        return (
            f"OK: {self.events} events, {t.rounds} rounds replayed, {t.bets} bets, "
            f"staked {t.staked}, returned {t.returned}"
        )


def check_manifest(root: Path) -> None:
    manifest = root / MANIFEST
    if not manifest.exists():
        raise BundleError(f"{MANIFEST} is missing")
    listed: dict[str, str] = {}
    try:
        text = manifest.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise BundleError(f"{MANIFEST}: not UTF-8 text") from exc
    for number, line in enumerate(text.splitlines(), start=1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or not name or name in listed:
            raise BundleError(f"{MANIFEST}:{number}: malformed line")
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise BundleError(f"{MANIFEST}:{number}: {name!r} is outside the bundle")
        listed[name] = digest
    present = set(_files(root))
    for name in sorted(present - set(listed)):
        raise BundleError(f"{name}: not in {MANIFEST}")
    for name, digest in listed.items():
        if name not in present:
            raise BundleError(f"{name}: listed in {MANIFEST} but missing")
        if _sha256(root / name) != digest:
            raise BundleError(f"{name}: SHA-256 differs from {MANIFEST}")


def read_bundle_events(root: Path) -> list[_Row]:
    """The bundle's events (redacted ones with links and hashes only)."""
    path = root / "events.jsonl"
    rows: list[_Row] = []
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                try:
                    item = json.loads(line)
                    if not isinstance(item, dict):
                        raise TypeError("not a JSON object")
                    check_field_types(item, ROW_TYPES)
                    if not isinstance(item.get("redacted", False), bool):
                        raise TypeError("redacted must be true or false")
                    rows.append(_Row(**item))
                except (json.JSONDecodeError, TypeError, ExportError) as exc:
                    raise BundleError(f"events.jsonl:{number}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise BundleError("events.jsonl: not UTF-8 text") from exc
    return rows


def _read_checkpoints(root: Path) -> list[_Checkpoint]:
    out: list[_Checkpoint] = []
    paths = list((root / "checkpoints").glob("*.note"))
    for path in paths:
        if not path.stem.isdigit() or not path.stem.isascii():
            raise BundleError(f"checkpoints/{path.name}: a checkpoint file is named <size>.note")
    for path in sorted(paths, key=lambda p: int(p.stem)):
        try:
            text = path.read_text(encoding="utf-8")
            body = parse_checkpoint(parse_note(text).text)
        except (NoteError, UnicodeDecodeError) as exc:
            raise BundleError(f"{path.name}: {exc}") from exc
        if str(body.size) != path.stem:
            raise BundleError(f"{path.name}: holds a checkpoint of size {body.size}")
        out.append(_Checkpoint(body.size, body.origin, body.root.hex(), "", "", text))
    return out


def verify_bundle(
    root: Path,
    *,
    verifier_key: VerifierKey | None = None,
    witness_keys: Sequence[VerifierKey] = (),
    replay: bool = False,
    since: HeldCheckpoint | str | None = None,
    trusted: Trusted | None = None,
) -> BundleReport:
    """Verify a bundle; raises :class:`BundleError` naming the first problem.

    Every event must lie under a checkpoint signed by the log's key (a bundle ends at a
    checkpoint by construction); with ``since``, the bundle's newest checkpoint must extend
    the one the regulator holds (RFC 9162 consistency proof over the bundle's leaves).
    ``trusted`` (public keys by id) may stand for ``verifier_key``; with neither, the
    bundle's own ``verifier.key`` is used, and said to be."""
    check_manifest(root)
    report = BundleReport()
    keys: Trusted
    if trusted is not None:
        keys = trusted
    elif verifier_key is not None:
        keys = [verifier_key]
    else:
        try:
            keys = [VerifierKey.parse((root / "verifier.key").read_text(encoding="utf-8"))]
        except (OSError, NoteError, UnicodeDecodeError) as exc:
            raise BundleError(f"verifier.key: {exc}") from exc
        report.notes.append("log key taken from the bundle (pin it with --verifier-key)")
    held = None
    if since is not None:
        try:
            held = held_checkpoint(since, keys)
        except NoteError as exc:
            raise BundleError(f"checkpoint held: {exc}") from exc
    rows = read_bundle_events(root)
    checkpoints = _read_checkpoints(root)
    if not checkpoints:
        raise BundleError("the bundle holds no checkpoint")
    chain: VerifyReport = verify_log(rows, checkpoints, keys)
    if not chain.ok:
        raise BundleError(f"chain: {chain.problem}")
    report.events = chain.events
    report.redacted = sum(1 for r in rows if r.redacted)
    report.checkpoints = chain.checkpoints_checked
    report.newest_note, report.newest_size = checkpoints[-1].note, checkpoints[-1].size

    # Every consecutive pair of checkpoints: a consistency proof from the tree, verified.
    subtree = list_subtree([bytes.fromhex(r.hash) for r in rows])
    if held is not None:
        check_extends(chain, held, subtree)
        if not chain.ok:
            raise BundleError(f"checkpoint held: {chain.problem}")
        report.extends = chain.extends
    previous: _Checkpoint | None = None
    for cp in checkpoints:
        if previous is not None:
            try:
                proof = consistency_proof(previous.size, cp.size, subtree)
                verify_consistency(
                    previous.size,
                    cp.size,
                    bytes.fromhex(previous.root_hash),
                    bytes.fromhex(cp.root_hash),
                    proof,
                )
            except ProofError as exc:
                raise BundleError(f"checkpoints {previous.size} → {cp.size}: {exc}") from exc
            report.proofs += 1
        previous = cp

    for key in witness_keys:
        notes = [(cp.size, cp.note or "") for cp in checkpoints]
        report.witnessed_size[str(key)] = check_witness(key, notes)

    if replay:
        _replay(root, rows, report)
    return report


def check_witness(key: VerifierKey, notes: Sequence[tuple[int, str]]) -> int:
    """Every cosignature by ``key`` on these (size, note) must verify, and the newest
    checkpoint must have one: a log rewritten after the witness saw it cannot show the
    witness's signature. Returns the newest size the witness cosigned."""
    witnessed = 0
    for size, note_text in notes:
        note = parse_note(note_text)
        for sig in note.unverified:
            if sig.name != key.name or sig.key_id != key.key_id:
                continue
            try:
                verify_cosignature(key, note.text, sig)
            except NoteError as exc:
                raise BundleError(f"checkpoint {size}: witness {key.name}: {exc}") from exc
            witnessed = size
    newest = notes[-1][0]
    if witnessed != newest:
        raise BundleError(
            f"checkpoint {newest} is not cosigned by witness {key.name}"
            + (f" (the newest it cosigned is {witnessed})" if witnessed else " (nothing is)")
        )
    return witnessed


def _replay(root: Path, rows: Sequence[_Row], report: BundleReport) -> None:
    folded = fold_rounds(r for r in rows if not r.redacted)
    lines: dict[str, dict[str, Any]] = {}
    with (root / "rounds.jsonl").open(encoding="utf-8") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = json.loads(raw)
                lines[line["round_id"]] = line
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise BundleError(f"rounds.jsonl:{number}: {exc}") from exc
    for round_id in lines:
        if round_id not in folded.rounds:
            raise BundleError(f"rounds.jsonl: round {round_id} has no events in the bundle")
    records = fold_records(r for r in rows if not r.redacted)
    for round_id, line in lines.items():
        if line.get("record") != records.rounds.get(round_id):
            raise BundleError(f"round {round_id}: rounds.jsonl record differs from the events")
    shoes_path = root / "shoes.jsonl"
    if shoes_path.exists():
        shoes = [json.loads(x) for x in shoes_path.read_text(encoding="utf-8").splitlines()]
        if shoes != records.shoes:
            raise BundleError("shoes.jsonl differs from the shoes folded from the events")
    totals = report.totals
    for fold in sorted(folded.rounds.values(), key=lambda f: f.first_seq):
        line = lines.get(fold.round_id)
        if line is None:
            raise BundleError(f"round {fold.round_id}: missing from rounds.jsonl")
        config = folded.rules[fold.rules_ref]
        derived = _round_line(fold, config)
        for key in ("game", "table_id", "status", "rules_sha256", "settle_input"):
            if line.get(key) != derived[key]:
                raise BundleError(
                    f"round {fold.round_id}: rounds.jsonl {key} differs from the events"
                )
        recorded = {item["bet_id"]: item for item in line.get("recorded", [])}
        try:
            replay_round(fold, config, recorded, totals)
        except ReplayError as exc:
            raise BundleError(f"replay: {exc}") from exc
    report.replayed = True
