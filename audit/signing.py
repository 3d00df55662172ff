"""Ed25519 keys and signed checkpoints.

A checkpoint body follows the shape of a C2SP signed-note checkpoint (origin, tree size,
base64 root hash, one per line) so that the text a regulator verifies is self-describing.
"""

from __future__ import annotations

import base64
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat


class SigningKeyError(ValueError):
    """A signing key that cannot be loaded (bad encoding, wrong length, unsafe file)."""


def checkpoint_body(origin: str, size: int, root: bytes) -> bytes:
    return f"{origin}\n{size}\n{base64.b64encode(root).decode('ascii')}\n".encode()


def public_key_bytes(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def key_id(key: Ed25519PublicKey) -> str:
    return hashlib.sha256(public_key_bytes(key)).hexdigest()[:16]


def load_public_key(text: str) -> Ed25519PublicKey:
    try:
        raw = base64.b64decode(text.strip(), validate=True)
        return Ed25519PublicKey.from_public_bytes(raw)
    except ValueError as exc:
        raise SigningKeyError(f"not a base64 Ed25519 public key: {exc}") from exc


@dataclass(frozen=True)
class Signer:
    private_key: Ed25519PrivateKey

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self.private_key.public_key()

    @property
    def key_id(self) -> str:
        return key_id(self.public_key)

    @property
    def public_key_b64(self) -> str:
        return base64.b64encode(public_key_bytes(self.public_key)).decode("ascii")

    def sign(self, body: bytes) -> str:
        return base64.b64encode(self.private_key.sign(body)).decode("ascii")

    @classmethod
    def from_seed_b64(cls, text: str) -> Signer:
        try:
            seed = base64.b64decode(text.strip(), validate=True)
            return cls(Ed25519PrivateKey.from_private_bytes(seed))
        except ValueError as exc:
            raise SigningKeyError(
                f"signing key must be base64 of a 32-byte Ed25519 seed: {exc}"
            ) from exc

    @classmethod
    def generate(cls) -> Signer:
        return cls(Ed25519PrivateKey.generate())

    def seed_b64(self) -> str:
        from cryptography.hazmat.primitives.serialization import NoEncryption, PrivateFormat

        raw = self.private_key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        return base64.b64encode(raw).decode("ascii")


def verify_signature(public_key: Ed25519PublicKey, body: bytes, signature_b64: str) -> bool:
    try:
        public_key.verify(base64.b64decode(signature_b64, validate=True), body)
    except (InvalidSignature, ValueError):
        return False
    return True


def load_or_create_signer(path: Path, configured: str | None = None) -> Signer:
    """The configured key wins; otherwise the key file, created with mode 0600 on first start.

    The public half is written beside it (``<file>.pub``) for regulators to verify with.
    Several processes of one studio may start at once on one data folder: the key is
    written whole to a file of its own and linked into place, which only one of them can
    do, so every process signs with the one key that is there, never half of one.
    """
    if configured:
        signer = Signer.from_seed_b64(configured)
    elif path.exists():
        signer = _read_key(path)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        signer = Signer.generate()
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as handle:  # mkstemp's file is 0600
                handle.write(signer.seed_b64() + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(name, path)
            except FileExistsError:  # another process started at the same moment: its key
                signer = _read_key(path)
        finally:
            os.unlink(name)
    pub = path.with_name(path.name + ".pub")
    if not configured and not pub.exists():
        fd, name = tempfile.mkstemp(prefix=f".{pub.name}.", dir=pub.parent)
        with os.fdopen(fd, "w") as handle:
            handle.write(signer.public_key_b64 + "\n")
        os.chmod(name, 0o644)
        os.replace(name, pub)
    return signer


def _read_key(path: Path) -> Signer:
    mode = path.stat().st_mode & 0o077
    if mode:
        raise SigningKeyError(f"{path} is readable by group/others (mode {oct(mode)}); chmod 600")
    return Signer.from_seed_b64(path.read_text())
