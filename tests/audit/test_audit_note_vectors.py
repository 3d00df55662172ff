"""Signed notes against the published vectors of Go's golang.org/x/mod/sumdb/note, byte for
byte; checkpoint bodies and cosignatures against c2sp.org's formats."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from audit.cosign import Cosigner, parse_cosigner_key, verify_cosignature
from audit.note import (
    InvalidNoteSignature,
    MalformedNote,
    NoteError,
    NoteSigner,
    UnverifiedNote,
    VerifierKey,
    check_key_name,
    checkpoint_text,
    open_note,
    parse_checkpoint,
    parse_note,
    sign_note,
)
from audit.signing import Signer
from audit.store import EventStore

PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
PETER_SIG = (
    "\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdng"
    "otpRZb6KE6RyyBwJnAM=\n"
)
ENOCH_SIG = (
    "\u2014 EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwn"
    "WLox33WWd1RvMc+QQ=\n"
)


def test_signing_reproduces_the_go_vector_byte_for_byte() -> None:
    signer = NoteSigner.parse(PETER_SKEY)
    assert str(signer.verifier_key) == PETER_VKEY
    assert signer.key_id.hex() == "c74f20a3"
    assert signer.private_key_text() == PETER_SKEY
    assert sign_note(TEXT, signer) == TEXT + "\n" + PETER_SIG


def test_verifier_key_round_trip_and_manglings_are_refused() -> None:
    key = VerifierKey.parse(PETER_VKEY)
    assert str(key) == PETER_VKEY and key.name == "PeterNeumann"
    raw = PETER_VKEY.encode()
    for i in range(len(raw)):  # every byte changed by one: refused
        mangled = bytearray(raw)
        mangled[i] = (mangled[i] + 1) % 256
        with pytest.raises((NoteError, UnicodeDecodeError)):
            VerifierKey.parse(bytes(mangled).decode("latin-1"))
    for cut in (1, 10, len(PETER_VKEY) - 1):  # truncations: refused
        with pytest.raises(NoteError):
            VerifierKey.parse(PETER_VKEY[:cut])
    with pytest.raises(NoteError):  # wrong length key, with adjusted key hash
        VerifierKey.parse(
            "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY=="
        )
    with pytest.raises(NoteError):  # unknown algorithm, with adjusted key hash
        VerifierKey.parse("PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")


def test_open_verifies_known_keys_and_keeps_unknown_signatures() -> None:
    peter, enoch = VerifierKey.parse(PETER_VKEY), VerifierKey.parse(ENOCH_VKEY)
    note = open_note(TEXT + "\n" + PETER_SIG + ENOCH_SIG, [peter])
    assert note.text == TEXT
    assert [(s.name, s.key_id.hex()) for s in note.signatures] == [("PeterNeumann", "c74f20a3")]
    assert [(s.name, s.key_id.hex()) for s in note.unverified] == [("EnochRoot", "af0cfe78")]
    both = open_note(TEXT + "\n" + PETER_SIG + ENOCH_SIG, [peter, enoch])
    assert [s.name for s in both.signatures] == ["PeterNeumann", "EnochRoot"]
    with pytest.raises(UnverifiedNote, match="no verifiable signatures") as caught:
        open_note(TEXT + "\n" + PETER_SIG + ENOCH_SIG, [])
    assert len(caught.value.note.unverified) == 2
    with pytest.raises(NoteError, match="ambiguous key EnochRoot\\+af0cfe78"):
        open_note(TEXT + "\n" + ENOCH_SIG, [enoch, peter, enoch])
    assert open_note(TEXT + "\n" + PETER_SIG, [enoch, peter, enoch]).signatures


def test_open_refuses_bad_notes_like_go() -> None:
    peter = VerifierKey.parse(PETER_VKEY)
    with pytest.raises(MalformedNote):
        open_note(TEXT + "\n" + PETER_SIG * 101, [peter])
    with pytest.raises(InvalidNoteSignature, match="invalid signature for key PeterNeumann"):
        open_note(TEXT + "\n" + PETER_SIG[:60] + "ABCD" + PETER_SIG[60:], [peter])
    for bad in (
        TEXT,
        TEXT + "\n",
        TEXT + "\n" + PETER_SIG[:-1],
        "\x01" + TEXT + "\n" + PETER_SIG,
        TEXT + "\n" + "\u2014 Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgY"
        "N1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=",
        TEXT + "\n" + PETER_SIG + "Unexpected line.\n",
    ):
        with pytest.raises(MalformedNote):
            open_note(bad, [peter])
    with pytest.raises(MalformedNote):
        open_note(b"\xff" + (TEXT + "\n" + PETER_SIG).encode(), [peter])
    # Duplicates: one verified, the unknown ones kept once each.
    abcd = ENOCH_SIG[:60] + "ABCD" + ENOCH_SIG[60:]
    note = open_note(TEXT + "\n" + PETER_SIG + PETER_SIG + ENOCH_SIG + ENOCH_SIG + abcd, [peter])
    assert len(note.signatures) == 1 and len(note.unverified) == 2


def test_key_names_and_origins() -> None:
    for good in ("studio.example/livetable", "livetable", "PeterNeumann"):
        assert check_key_name(good) == good
    for bad in ("", "evil\n999", "a b", "a+b", "tab\there", "nbsp\u00a0x", "x\u2028y"):
        with pytest.raises(NoteError):
            check_key_name(bad)
    with pytest.raises(NoteError):
        EventStore(Signer.generate(), origin="evil\n999")
    with pytest.raises(NoteError):
        checkpoint_text("has space", 1, b"\0" * 32)


def test_checkpoint_body_and_parse() -> None:
    root = bytes(range(32))
    body = checkpoint_text("studio.example/livetable", 12, root)
    assert body == ("studio.example/livetable\n12\n" + base64.b64encode(root).decode() + "\n")
    parsed = parse_checkpoint(body)
    assert (parsed.origin, parsed.size, parsed.root) == ("studio.example/livetable", 12, root)
    for bad in (
        "o\n012\n" + base64.b64encode(root).decode() + "\n",
        "o\n-1\n" + base64.b64encode(root).decode() + "\n",
        "o\n1\n" + base64.b64encode(root[:31]).decode() + "\n",
        "o\n1\n",
        "o o\n1\n" + base64.b64encode(root).decode() + "\n",
    ):
        with pytest.raises(MalformedNote):
            parse_checkpoint(bad)


def test_the_c2sp_cosignature_example_parses_and_key_ids_follow_the_spec() -> None:
    example = (
        "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n"
        "\u2014 example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7"
        "u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n"
        "\u2014 witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dl"
        "rDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==\n"
    )
    note = parse_note(example)
    cp = parse_checkpoint(note.text)
    assert cp.size == 20852163
    witness = note.unverified[1]
    raw = base64.b64decode(witness.signature_b64)
    assert len(raw) == 4 + 8 + 64
    assert int.from_bytes(raw[4:12], "big") == 1679315147  # the spec's "time 1679315147"


def test_cosign_and_verify() -> None:
    cosigner = Cosigner("witness.example/w1", Ed25519PrivateKey.generate())
    vkey = parse_cosigner_key(str(cosigner.verifier_key))
    assert str(vkey).split("+")[2].startswith("B")  # base64 of 0x04 ...
    body = checkpoint_text("studio.example/livetable", 5, b"\1" * 32)
    line = cosigner.cosign(body, 1_700_000_000)
    sig = parse_note(body + "\n" + line).unverified[0]
    assert verify_cosignature(vkey, body, sig) == 1_700_000_000
    other = checkpoint_text("studio.example/livetable", 5, b"\2" * 32)
    with pytest.raises(NoteError):
        verify_cosignature(vkey, other, sig)
    with pytest.raises(NoteError):  # a cosigner key is not a note signing key
        VerifierKey.parse(str(vkey))
