"""An independent witness (c2sp.org/tlog-witness semantics, pull model).

It runs apart from the log — at the regulator, with its own key and its own storage — and
cosigns a checkpoint only if it is signed by the log's key and is consistent with the
last checkpoint it cosigned: never a smaller tree, never a second root for one size,
never a larger tree without a valid consistency proof. What it has cosigned is kept on
its own disk, so a log rewritten later (even re-signed with the studio's key) cannot be
made to agree with it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from audit.cosign import Cosigner
from audit.note import NoteError, VerifierKey, check_key_name, open_note, parse_checkpoint
from audit.proof import ProofError, verify_consistency

log = structlog.get_logger(__name__)

ProofSource = Callable[[int, int], list[bytes]]


class WitnessRefused(Exception):
    """The witness will not cosign this checkpoint; ``code`` says why."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason


@dataclass(frozen=True)
class Witnessed:
    origin: str
    size: int
    root: bytes
    note: str
    timestamp: int

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "size": self.size,
            "root": base64.b64encode(self.root).decode("ascii"),
            "note": self.note,
            "timestamp": self.timestamp,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Witnessed:
        return cls(
            data["origin"],
            int(data["size"]),
            base64.b64decode(data["root"]),
            data["note"],
            int(data["timestamp"]),
        )


def _write_atomic(path: Path, text: str, mode: int = 0o600) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class Witness:
    """A witness's key and state in one directory (``witness-key``, ``logs/``)."""

    def __init__(self, state_dir: Path, name: str | None = None) -> None:
        self.dir = state_dir
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "logs").mkdir(exist_ok=True)
        key_file = self.dir / "witness-key"
        if key_file.exists():
            if key_file.stat().st_mode & 0o077:
                raise NoteError(f"{key_file} is readable by group/others; chmod 600")
            data = json.loads(key_file.read_text())
            stored_name = data["name"]
            if name is not None and name != stored_name:
                raise NoteError(f"this witness is {stored_name!r}, not {name!r}")
            private = Ed25519PrivateKey.from_private_bytes(base64.b64decode(data["seed"]))
            self.cosigner = Cosigner(stored_name, private)
        else:
            chosen = check_key_name(name or f"{socket.gethostname()}/witness", what="witness name")
            private = Ed25519PrivateKey.generate()
            seed = private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
            _write_atomic(
                key_file, json.dumps({"name": chosen, "seed": base64.b64encode(seed).decode()})
            )
            self.cosigner = Cosigner(chosen, private)

    @property
    def verifier_key(self) -> VerifierKey:
        return self.cosigner.verifier_key

    def _log_dir(self, origin: str) -> Path:
        path = self.dir / "logs" / hashlib.sha256(origin.encode()).hexdigest()[:16]
        path.mkdir(exist_ok=True)
        return path

    def latest(self, origin: str) -> Witnessed | None:
        path = self._log_dir(origin) / "latest.json"
        if not path.exists():
            return None
        return Witnessed.from_json(json.loads(path.read_text()))

    def _record_refusal(self, origin: str, refused: WitnessRefused, note: str) -> None:
        with (self._log_dir(origin) / "refusals.jsonl").open("a", encoding="utf-8") as out:
            line = {"at": int(time.time()), "code": refused.code, "reason": refused.reason}
            out.write(json.dumps({**line, "note": note}) + "\n")

    def add_checkpoint(
        self, log_key: VerifierKey, note_text: str, proofs: ProofSource, now: int | None = None
    ) -> str:
        """Check ``note_text`` and return this witness's cosignature line, or refuse."""
        try:
            note = open_note(note_text, [log_key])
            checkpoint = parse_checkpoint(note.text)
        except NoteError as exc:
            raise WitnessRefused(
                "bad_signature", f"not a checkpoint signed by {log_key.name}: {exc}"
            ) from exc
        if checkpoint.origin != log_key.name:
            raise WitnessRefused("wrong_origin", f"origin {checkpoint.origin!r} is not the log's")
        last = self.latest(checkpoint.origin)
        try:
            self._check(last, checkpoint.size, checkpoint.root, proofs)
        except WitnessRefused as refused:
            self._record_refusal(checkpoint.origin, refused, note_text)
            log.warning("witness.refused", code=refused.code, reason=refused.reason)
            raise
        timestamp = int(time.time()) if now is None else now
        if last is not None and timestamp < last.timestamp:
            timestamp = last.timestamp  # never move backwards in time
        seen = Witnessed(checkpoint.origin, checkpoint.size, checkpoint.root, note.text, timestamp)
        directory = self._log_dir(checkpoint.origin)
        # Persist before answering: a cosignature must never exist for a state we forgot.
        with (directory / "history.jsonl").open("a", encoding="utf-8") as out:
            out.write(json.dumps(seen.to_json()) + "\n")
            out.flush()
            os.fsync(out.fileno())
        _write_atomic(directory / "latest.json", json.dumps(seen.to_json()))
        return self.cosigner.cosign(note.text, timestamp)

    @staticmethod
    def _check(last: Witnessed | None, size: int, root: bytes, proofs: ProofSource) -> None:
        if last is None:
            return  # first sight of this log: trusted on first use
        if size < last.size:
            raise WitnessRefused(
                "smaller_tree", f"size {size} is smaller than the cosigned size {last.size}"
            )
        if size == last.size:
            if root != last.root:
                raise WitnessRefused(
                    "fork", f"a different root for size {size} than the one cosigned"
                )
            return
        try:
            proof = proofs(last.size, size)
            verify_consistency(last.size, size, last.root, root, proof)
        except ProofError as exc:
            raise WitnessRefused(
                "inconsistent",
                f"size {size} is not an extension of cosigned size {last.size}: {exc}",
            ) from exc


# -- polling a log over HTTP -------------------------------------------------------------
def poll_once(witness: Witness, client: Any, log_key: VerifierKey) -> tuple[int, str]:
    """Fetch the log's checkpoint, cosign it and hand the cosignature back.

    ``client`` is an ``httpx.Client`` whose base URL is the log (with a token if the log's
    tlog endpoint is not public). Returns (size, cosignature line).
    """
    response = client.get("/tlog/checkpoint")
    response.raise_for_status()

    def proofs(old: int, new: int) -> list[bytes]:
        answer = client.get("/api/v1/audit/proof/consistency", params={"old": old, "new": new})
        if answer.status_code != 200:
            raise ProofError(f"the log answered {answer.status_code} for a consistency proof")
        return [base64.b64decode(h) for h in answer.json()["hashes"]]

    line = witness.add_checkpoint(log_key, response.text, proofs)
    size = parse_checkpoint(open_note(response.text, [log_key]).text).size
    posted = client.post(
        "/api/v1/audit/cosignatures",
        json={"size": size, "cosigner_key": str(witness.verifier_key), "line": line},
    )
    posted.raise_for_status()
    return size, line
