"""Timestamped Ed25519 cosignatures of checkpoints (c2sp.org/tlog-cosignature, v1).

A cosignature is a witness's statement that, at its timestamp, the checkpoint is the
largest consistent tree it has seen for that origin. It is an ordinary note signature
line, so a checkpoint with its cosignatures is still one signed note.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from audit.note import (
    ALG_COSIGNATURE_V1,
    SIG_PREFIX,
    NoteError,
    Signature,
    VerifierKey,
    check_key_name,
)

MAX_TIMESTAMP = 2**63 - 1


def cosigned_message(checkpoint_body: str, timestamp: int) -> bytes:
    if not 0 <= timestamp <= MAX_TIMESTAMP:
        raise NoteError("cosignature timestamp out of range")
    return f"cosignature/v1\ntime {timestamp}\n{checkpoint_body}".encode()


@dataclass(frozen=True)
class Cosigner:
    name: str
    private_key: Ed25519PrivateKey

    def __post_init__(self) -> None:
        check_key_name(self.name, what="cosigner name")

    @property
    def verifier_key(self) -> VerifierKey:
        return VerifierKey(self.name, ALG_COSIGNATURE_V1, self.private_key.public_key())

    def cosign(self, checkpoint_body: str, timestamp: int) -> str:
        """The signature line ``— <name> base64(key ID ‖ u64 timestamp ‖ signature)``."""
        signature = self.private_key.sign(cosigned_message(checkpoint_body, timestamp))
        raw = self.verifier_key.key_id + timestamp.to_bytes(8, "big") + signature
        return f"{SIG_PREFIX}{self.name} {base64.b64encode(raw).decode('ascii')}\n"


def parse_cosigner_key(text: str) -> VerifierKey:
    """A cosigner's verifier key: ``<name>+<hash>+base64(0x04 ‖ public key)``."""
    return VerifierKey.parse(text, algs=(ALG_COSIGNATURE_V1,))


def cosignature_timestamp(signature: Signature) -> int:
    raw = base64.b64decode(signature.signature_b64)
    if len(raw) != 4 + 8 + 64:
        raise NoteError("a cosignature is key ID, 8-byte timestamp and 64-byte signature")
    return int.from_bytes(raw[4:12], "big")


def verify_cosignature(key: VerifierKey, checkpoint_body: str, signature: Signature) -> int:
    """The cosignature's timestamp if ``signature`` is ``key``'s valid cosignature of the
    checkpoint; raises :class:`NoteError` otherwise."""
    if key.alg != ALG_COSIGNATURE_V1:
        raise NoteError("not a cosignature/v1 key")
    if signature.name != key.name or signature.key_id != key.key_id:
        raise NoteError(f"signature is not by {key.name}+{key.key_id.hex()}")
    raw = base64.b64decode(signature.signature_b64)
    timestamp = cosignature_timestamp(signature)
    if timestamp > MAX_TIMESTAMP or not key.verify(
        cosigned_message(checkpoint_body, timestamp), raw[12:]
    ):
        raise NoteError(f"invalid cosignature by {key.name}+{key.key_id.hex()}")
    return timestamp
