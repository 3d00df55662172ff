"""Signed notes (c2sp.org/signed-note) and checkpoints (c2sp.org/tlog-checkpoint).

A checkpoint is only useful to a regulator if a standard client can check it with nothing
but a verifier key, so the note text, the key ID and the key encodings follow the spec to
the byte (the tests reproduce the vectors of Go's ``golang.org/x/mod/sumdb/note``).
Parsing is strict: anything a conforming parser could read differently is refused.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import unicodedata
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

ALG_ED25519 = 0x01
ALG_COSIGNATURE_V1 = 0x04
SIG_PREFIX = "\u2014 "  # em dash, space
MAX_SIGNATURES = 100


class NoteError(ValueError):
    """A note, key or name that does not follow the signed-note format."""


class MalformedNote(NoteError):
    def __init__(self, detail: str = "malformed note") -> None:
        super().__init__(detail)


class UnverifiedNote(NoteError):
    """No signature of the note could be checked with the keys given."""

    def __init__(self, note: Note) -> None:
        super().__init__("note has no verifiable signatures")
        self.note = note


class InvalidNoteSignature(NoteError):
    pass


def check_key_name(name: str, *, what: str = "key name") -> str:
    """A key name (and so a log origin): non-empty, no Unicode space, no ``+``.

    A space or newline in an origin would let a crafted origin pose as extra checkpoint
    lines (``"evil\\n999"`` reads as size 999), so it is refused before anything is signed.
    """
    if not isinstance(name, str) or not name:
        raise NoteError(f"{what} must not be empty")
    if "+" in name:
        raise NoteError(f"{what} {name!r} must not contain '+'")
    for char in name:
        if char.isspace() or unicodedata.category(char) in ("Zs", "Zl", "Zp", "Cc", "Cf"):
            raise NoteError(f"{what} {name!r} must not contain spaces or control characters")
    return name


def key_id(name: str, key_material: bytes) -> bytes:
    """SHA-256(name ‖ 0x0A ‖ alg ‖ public key)[:4]; ``key_material`` starts with the alg."""
    return hashlib.sha256(name.encode() + b"\n" + key_material).digest()[:4]


def _raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


@dataclass(frozen=True)
class VerifierKey:
    """``<name>+<key ID hex>+<base64(alg ‖ public key)>``."""

    name: str
    alg: int
    public_key: Ed25519PublicKey

    @property
    def key_material(self) -> bytes:
        return bytes([self.alg]) + _raw_public(self.public_key)

    @property
    def key_id(self) -> bytes:
        return key_id(self.name, self.key_material)

    def __str__(self) -> str:
        material = base64.b64encode(self.key_material).decode("ascii")
        return f"{self.name}+{self.key_id.hex()}+{material}"

    @classmethod
    def parse(cls, text: str, *, algs: tuple[int, ...] = (ALG_ED25519,)) -> VerifierKey:
        text = text.strip()
        parts = text.split("+", 2)
        if len(parts) != 3:
            raise NoteError("malformed verifier key: want <name>+<hash>+<key>")
        name, hash_hex, material_b64 = parts
        check_key_name(name)
        if len(hash_hex) != 8 or hash_hex != hash_hex.lower():
            raise NoteError("malformed verifier key: the key hash is 8 lower-case hex digits")
        try:
            expected = bytes.fromhex(hash_hex)
            material = base64.b64decode(material_b64, validate=True)
        except (ValueError, binascii.Error) as exc:
            raise NoteError(f"malformed verifier key: {exc}") from exc
        if base64.b64encode(material).decode("ascii") != material_b64:
            raise NoteError("malformed verifier key: non-canonical base64")
        if len(material) != 33 or material[0] not in algs:
            raise NoteError("malformed verifier key: unknown algorithm or wrong key length")
        if key_id(name, material) != expected:
            raise NoteError("malformed verifier key: key hash does not match the key")
        public = Ed25519PublicKey.from_public_bytes(material[1:])
        return cls(name, material[0], public)

    def verify(self, message: bytes, signature: bytes) -> bool:
        try:
            self.public_key.verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True


@dataclass(frozen=True)
class NoteSigner:
    """An Ed25519 note signer: a key name and a private key."""

    name: str
    private_key: Ed25519PrivateKey

    def __post_init__(self) -> None:
        check_key_name(self.name)

    @property
    def verifier_key(self) -> VerifierKey:
        return VerifierKey(self.name, ALG_ED25519, self.private_key.public_key())

    @property
    def key_id(self) -> bytes:
        return self.verifier_key.key_id

    def signature_line(self, text: str) -> str:
        """``— <name> base64(key ID ‖ signature)\\n`` over the note text."""
        signature = self.private_key.sign(text.encode("utf-8"))
        return f"{SIG_PREFIX}{self.name} {base64.b64encode(self.key_id + signature).decode()}\n"

    def private_key_text(self) -> str:
        """The Go ``note`` package's encoding: ``PRIVATE+KEY+<name>+<hash>+<base64>``."""
        seed = self.private_key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        material = base64.b64encode(bytes([ALG_ED25519]) + seed).decode("ascii")
        return f"PRIVATE+KEY+{self.name}+{self.key_id.hex()}+{material}"

    @classmethod
    def parse(cls, text: str) -> NoteSigner:
        parts = text.strip().split("+", 4)
        if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"]:
            raise NoteError("malformed signer key")
        _, _, name, hash_hex, material_b64 = parts
        check_key_name(name)
        try:
            material = base64.b64decode(material_b64, validate=True)
        except (ValueError, binascii.Error) as exc:
            raise NoteError(f"malformed signer key: {exc}") from exc
        if len(material) != 33 or material[0] != ALG_ED25519:
            raise NoteError("malformed signer key: unknown algorithm or wrong length")
        signer = cls(name, Ed25519PrivateKey.from_private_bytes(material[1:]))
        if len(hash_hex) != 8 or signer.key_id.hex() != hash_hex:
            raise NoteError("malformed signer key: key hash does not match")
        return signer


@dataclass(frozen=True)
class Signature:
    name: str
    key_id: bytes
    signature_b64: str

    @property
    def raw(self) -> bytes:
        """The signature bytes after the 4-byte key ID."""
        return base64.b64decode(self.signature_b64)[4:]

    def line(self) -> str:
        return f"{SIG_PREFIX}{self.name} {self.signature_b64}\n"


@dataclass(frozen=True)
class Note:
    text: str
    signatures: tuple[Signature, ...] = ()
    unverified: tuple[Signature, ...] = field(default=())

    def render(self) -> str:
        return self.text + "\n" + "".join(s.line() for s in self.signatures + self.unverified)


def _check_text(text: str) -> None:
    for char in text:
        if char != "\n" and unicodedata.category(char) in ("Cc", "Cs"):
            raise MalformedNote()


def parse_note(data: bytes | str) -> Note:
    """Split a note into text and signature lines, unverified; strict about the shape."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedNote() from exc
    _check_text(data)
    split = data.rfind("\n\n")
    if split < 0:
        raise MalformedNote()
    text, sig_block = data[: split + 1], data[split + 2 :]
    if not sig_block.endswith("\n"):
        raise MalformedNote()
    lines = sig_block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise MalformedNote()
    signatures: list[Signature] = []
    for line in lines:
        if not line.startswith(SIG_PREFIX):
            raise MalformedNote()
        rest = line[len(SIG_PREFIX) :]
        name, space, b64 = rest.partition(" ")
        if not space or " " in b64:
            raise MalformedNote()
        try:
            check_key_name(name)
            raw = base64.b64decode(b64, validate=True)
        except (NoteError, ValueError, binascii.Error) as exc:
            raise MalformedNote() from exc
        if len(raw) < 5:
            raise MalformedNote()
        signatures.append(Signature(name, raw[:4], b64))
    return Note(text, (), tuple(signatures))


def open_note(data: bytes | str, verifiers: list[VerifierKey]) -> Note:
    """Parse and verify: every signature by a known key must be valid; at least one is.

    Signatures by keys not given are kept as unverified (a cosigner the caller does not
    know). Two verifiers with the same name and key ID are ambiguous, as in Go's package.
    """
    parsed = parse_note(data)
    verified: list[Signature] = []
    unverified: list[Signature] = []
    seen: set[tuple[str, bytes, str]] = set()
    for sig in parsed.unverified:
        matches = [v for v in verifiers if v.name == sig.name and v.key_id == sig.key_id]
        if len(matches) > 1:
            raise NoteError(f"ambiguous key {sig.name}+{sig.key_id.hex()}")
        key = (sig.name, sig.key_id, sig.signature_b64)
        if not matches:
            if key not in seen:
                unverified.append(sig)
                seen.add(key)
            continue
        verifier = matches[0]
        if verifier.alg != ALG_ED25519 or not verifier.verify(parsed.text.encode("utf-8"), sig.raw):
            raise InvalidNoteSignature(f"invalid signature for key {sig.name}+{sig.key_id.hex()}")
        if key not in seen:
            verified.append(sig)
            seen.add(key)
    note = Note(parsed.text, tuple(verified), tuple(unverified))
    if not verified:
        raise UnverifiedNote(note)
    return note


def sign_note(text: str, *signers: NoteSigner) -> str:
    """The note text followed by one signature line per signer."""
    if not text.endswith("\n"):
        raise MalformedNote()
    _check_text(text)
    return text + "\n" + "".join(s.signature_line(text) for s in signers)


# -- checkpoints (c2sp.org/tlog-checkpoint) ------------------------------------------------
@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def body(self) -> str:
        root = base64.b64encode(self.root).decode("ascii")
        return f"{self.origin}\n{self.size}\n{root}\n" + "".join(e + "\n" for e in self.extensions)


def checkpoint_text(origin: str, size: int, root: bytes) -> str:
    check_key_name(origin, what="log origin")
    return Checkpoint(origin, size, root).body()


def parse_checkpoint(text: str) -> Checkpoint:
    """The body of a checkpoint note: origin, decimal size, base64 32-byte root, extensions."""
    if not text.endswith("\n"):
        raise MalformedNote("checkpoint: must end with a newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3:
        raise MalformedNote("checkpoint: fewer than three lines")
    origin, size_text, root_text, *extensions = lines
    try:
        check_key_name(origin, what="checkpoint origin")
    except NoteError as exc:
        raise MalformedNote(f"checkpoint: {exc}") from exc
    if (
        not size_text.isdigit()
        or not size_text.isascii()
        or (size_text != "0" and size_text.startswith("0"))
    ):
        raise MalformedNote("checkpoint: the size is a decimal without leading zeros")
    try:
        root = base64.b64decode(root_text, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise MalformedNote(f"checkpoint: root: {exc}") from exc
    if len(root) != 32:
        raise MalformedNote("checkpoint: the root hash must be 32 bytes")
    if any(not e for e in extensions):
        raise MalformedNote("checkpoint: empty extension line")
    return Checkpoint(origin, int(size_text), root, tuple(extensions))
