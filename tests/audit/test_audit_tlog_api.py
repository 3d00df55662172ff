"""The read-only tlog-tiles endpoint and the proof API, checked the way a standard client
would: the note with nothing but the verifier key, the tree from the tiles alone, the
proofs against the root it signed."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from audit.note import VerifierKey, open_note, parse_checkpoint
from audit.proof import verify_consistency, verify_inclusion
from audit.store import NewEvent
from audit.tiles import TilePathError, TileRef, encode_index, parse_tile_path
from table_service.app import create_app
from table_service.principals import add_principal
from table_service.runtime import Runtime

N = 600  # two full level-0 tiles, a partial one of 88, a partial level-1 tile of 2


def _fill(runtime: Runtime, n: int, start: int = 0) -> None:
    for chunk in range(start, start + n, 100):
        with runtime.sessions.begin() as session:
            runtime.store.append(
                session,
                [
                    NewEvent("t1", "e", "test", {"i": i})
                    for i in range(chunk, min(chunk + 100, start + n))
                ],
            )


Log = tuple[Runtime, TestClient, str]
"""The runtime, a regulator's client and a dealer's token."""


@pytest.fixture
def log(make_runtime: Callable[..., Runtime]) -> Log:
    runtime = make_runtime(checkpoint_every=100_000, log_origin="studio.example/livetable")
    with runtime.sessions.begin() as session:
        token = add_principal(session, runtime.store, "reg", "regulator", actor="test")
        dealer = add_principal(session, runtime.store, "dl", "dealer", actor="test")
    _fill(runtime, N - 2)  # two principal events are leaves too
    with runtime.sessions.begin() as session:
        runtime.store.checkpoint(session)
    client = TestClient(create_app(runtime))
    client.headers["Authorization"] = f"Bearer {token}"
    return runtime, client, dealer


def _mth(hashes: list[bytes]) -> bytes:
    """RFC 9162 over already-hashed leaves, written independently of the product."""
    if len(hashes) == 1:
        return hashes[0]
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    return hashlib.sha256(b"\x01" + _mth(hashes[:k]) + _mth(hashes[k:])).digest()


def _split(data: bytes) -> list[bytes]:
    assert len(data) % 32 == 0
    return [data[i : i + 32] for i in range(0, len(data), 32)]


def test_a_standard_client_checks_everything_with_only_the_verifier_key(log: Log) -> None:
    runtime, client, _ = log
    vkey = VerifierKey.parse(str(runtime.store.note_signer.verifier_key))
    response = client.get("/tlog/checkpoint")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    note = open_note(response.text, [vkey])
    cp = parse_checkpoint(note.text)
    assert (cp.origin, cp.size) == ("studio.example/livetable", N)

    # The tree from level-0 tiles alone.
    leaves: list[bytes] = []
    for index in range(N // 256):
        tile = client.get(f"/tlog/tile/0/{encode_index(index)}")
        assert tile.status_code == 200 and len(tile.content) == 8192
        assert "immutable" in tile.headers["cache-control"]
        leaves += _split(tile.content)
    partial = client.get(f"/tlog/tile/0/{encode_index(N // 256)}.p/{N % 256}")
    assert partial.status_code == 200
    leaves += _split(partial.content)
    assert len(leaves) == N and _mth(leaves) == cp.root

    # Level-1 hashes are the roots of the full level-0 tiles.
    level1 = client.get("/tlog/tile/1/000.p/2")
    assert _split(level1.content) == [_mth(leaves[:256]), _mth(leaves[256:512])]

    # Entry bundles hash to the level-0 tile.
    bundle = client.get("/tlog/tile/entries/001").content
    entries = [bundle[i + 2 : i + 34] for i in range(0, len(bundle), 34)]
    assert all(bundle[i : i + 2] == b"\x00\x20" for i in range(0, len(bundle), 34))
    assert [hashlib.sha256(b"\x00" + e).digest() for e in entries] == leaves[256:512]

    # Proofs from the API verify against the signed root.
    for seq in (1, 2, 255, 256, 257, 513, N):
        body = client.get("/api/v1/audit/proof/inclusion", params={"seq": seq, "size": N}).json()
        hashes = [base64.b64decode(h) for h in body["hashes"]]
        verify_inclusion(seq - 1, N, leaves[seq - 1], hashes, cp.root)
    for old in (1, 100, 256, 300, 512, N):
        body = client.get("/api/v1/audit/proof/consistency", params={"old": old, "new": N}).json()
        hashes = [base64.b64decode(h) for h in body["hashes"]]
        verify_consistency(old, N, _mth(leaves[:old]), cp.root, hashes)


def test_tiles_beyond_the_checkpoint_and_bad_paths_are_404(log: Log) -> None:
    runtime, client, _ = log
    _fill(runtime, 300, start=N)  # not yet checkpointed
    assert client.get("/tlog/tile/0/002").status_code == 404  # full tile 2 needs 768 signed
    assert client.get(f"/tlog/tile/0/002.p/{N % 256 + 1}").status_code == 404
    for bad in ("0/2", "0/x000/002", "0/002.p/0", "0/002.p/256", "64/000", "0/002.p/088"):
        response = client.get(f"/tlog/tile/{bad}")
        assert response.status_code == 404, bad
        assert response.json()["error"] == "not_found"
    assert (
        client.get("/api/v1/audit/proof/inclusion", params={"seq": 5, "size": 10**6}).status_code
        == 404
    )
    refused = client.get("/api/v1/audit/proof/inclusion", params={"seq": 50, "size": 10})
    assert refused.status_code == 422
    assert (
        client.get("/api/v1/audit/proof/consistency", params={"old": 9, "new": 5}).status_code
        == 422
    )


def test_access_needs_a_reader_token_unless_public(
    log: Log, make_runtime: Callable[..., Runtime]
) -> None:
    runtime, _, dealer = log
    anonymous = TestClient(create_app(runtime))
    assert anonymous.get("/tlog/checkpoint").status_code == 401
    dealer_client = TestClient(create_app(runtime))
    dealer_client.headers["Authorization"] = f"Bearer {dealer}"
    assert dealer_client.get("/tlog/tile/0/000").status_code == 403
    assert dealer_client.get("/api/v1/audit/proof/inclusion?seq=1&size=1").status_code == 403
    runtime.settings.tlog_public = True
    try:
        assert anonymous.get("/tlog/checkpoint").status_code == 200
        assert anonymous.get("/tlog/tile/0/000").status_code == 200
    finally:
        runtime.settings.tlog_public = False


def test_tile_paths() -> None:
    assert encode_index(1234067) == "x001/x234/067"
    assert encode_index(0) == "000"
    assert parse_tile_path("0/x001/x234/067.p/5") == TileRef(0, 1234067, 5)
    assert parse_tile_path("entries/000") == TileRef(None, 0, 256)
    assert TileRef(2, 1000, 7).path == "tile/2/x001/000.p/7"
    for bad in ("0/1234067", "0/x01/067", "00/000", "0/000.p/x", "a/000", "0/x000/000"):
        with pytest.raises(TilePathError):
            parse_tile_path(bad)
