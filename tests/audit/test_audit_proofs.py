"""RFC 9162 proofs: the real Certificate Transparency proofs that golang.org/x/mod ships,
every (index, size) and (old, new) pair of our own trees up to 300 leaves, checked against
the RFC's recursive definitions written out independently here."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from audit.merkle import leaf_hash, merkle_root, node_hash
from audit.proof import (
    ProofError,
    consistency_proof,
    inclusion_proof,
    list_subtree,
    verify_consistency,
    verify_inclusion,
)

VECTORS = Path(__file__).parent / "vectors" / "argon2020"
MAX = 300


def _load(name: str) -> dict[str, Any]:
    vectors: dict[str, Any] = json.loads((VECTORS / name).read_text())
    return vectors


def _b64(items: list[str]) -> list[bytes]:
    return [base64.b64decode(x) for x in items]


def test_certificate_transparency_inclusion_proof_of_argon2020() -> None:
    sth = _load("sth.json")
    leaf = base64.b64decode(_load("entries.json")["entries"][0]["leaf_input"])
    proof = _load("proof.json")
    root = base64.b64decode(sth["sha256_root_hash"])
    verify_inclusion(
        proof["leaf_index"], sth["tree_size"], leaf_hash(leaf), _b64(proof["audit_path"]), root
    )
    with pytest.raises(ProofError):
        verify_inclusion(10001, sth["tree_size"], leaf_hash(leaf), _b64(proof["audit_path"]), root)
    with pytest.raises(ProofError):
        verify_inclusion(
            10000, sth["tree_size"], leaf_hash(leaf + b"x"), _b64(proof["audit_path"]), root
        )


def test_certificate_transparency_consistency_proof_of_argon2020() -> None:
    sth = _load("sth.json")
    new_root = base64.b64decode(sth["sha256_root_hash"])
    old_root = base64.b64decode("AuIZ5V6sDUj1vn3Y1K85oOaQ7y+FJJKtyRTl1edIKBQ=")
    proof = _b64(_load("consistency.json")["consistency"])
    verify_consistency(3654490, sth["tree_size"], old_root, new_root, proof)
    with pytest.raises(ProofError):
        verify_consistency(3654491, sth["tree_size"], old_root, new_root, proof)
    with pytest.raises(ProofError):
        verify_consistency(3654490, sth["tree_size"], new_root, new_root, proof)
    with pytest.raises(ProofError):
        verify_consistency(3654490, sth["tree_size"], old_root, new_root, proof[:-1])


# -- the RFC's definitions, recursively, as a reference ------------------------------------
def _mth(d: list[bytes]) -> bytes:
    if not d:
        return hashlib.sha256(b"").digest()
    if len(d) == 1:
        return leaf_hash(d[0])
    k = 1
    while k * 2 < len(d):
        k *= 2
    return node_hash(_mth(d[:k]), _mth(d[k:]))


def _path(m: int, d: list[bytes]) -> list[bytes]:
    if len(d) == 1:
        return []
    k = 1
    while k * 2 < len(d):
        k *= 2
    if m < k:
        return [*_path(m, d[:k]), _mth(d[k:])]
    return [*_path(m - k, d[k:]), _mth(d[:k])]


def _subproof(m: int, d: list[bytes], whole: bool) -> list[bytes]:
    if m == len(d):
        return [] if whole else [_mth(d)]
    k = 1
    while k * 2 < len(d):
        k *= 2
    if m <= k:
        return [*_subproof(m, d[:k], whole), _mth(d[k:])]
    return [*_subproof(m - k, d[k:], False), _mth(d[:k])]


LEAVES = [hashlib.sha256(f"event {i}".encode()).digest() for i in range(MAX)]
SUBTREE = list_subtree(LEAVES)
ROOTS = [merkle_root(LEAVES[:n]) for n in range(MAX + 1)]


def test_every_inclusion_proof_up_to_300() -> None:
    for size in range(1, MAX + 1):
        for index in range(size):
            proof = inclusion_proof(index, size, SUBTREE)
            if size <= 64 or index % 17 == 0:
                assert proof == _path(index, LEAVES[:size])
            verify_inclusion(index, size, leaf_hash(LEAVES[index]), proof, ROOTS[size])
            if proof:
                bad = [*proof[:-1], b"\0" * 32]
                with pytest.raises(ProofError):
                    verify_inclusion(index, size, leaf_hash(LEAVES[index]), bad, ROOTS[size])


def test_every_consistency_proof_up_to_300() -> None:
    for new in range(1, MAX + 1):
        for old in range(1, new + 1):
            proof = consistency_proof(old, new, SUBTREE)
            if new <= 64 or old % 13 == 0:
                assert proof == (_subproof(old, LEAVES[:new], True) if old < new else [])
            verify_consistency(old, new, ROOTS[old], ROOTS[new], proof)
            if old < new:
                with pytest.raises(ProofError):
                    verify_consistency(
                        old, new, ROOTS[old - 1] if old > 1 else b"\1" * 32, ROOTS[new], proof
                    )
                with pytest.raises(ProofError):
                    verify_consistency(old, new, ROOTS[old], ROOTS[new - 1], proof)


@given(st.integers(1, MAX), st.data())
def test_a_proof_for_another_size_never_verifies(new: int, data: st.DataObject) -> None:
    old = data.draw(st.integers(1, new))
    proof = consistency_proof(old, new, SUBTREE)
    other = data.draw(st.integers(1, MAX).filter(lambda n: n != new))
    if old <= other:
        with pytest.raises(ProofError):
            verify_consistency(old, other, ROOTS[old], ROOTS[other], proof)


def test_impossible_requests_are_refused() -> None:
    with pytest.raises(ProofError):
        inclusion_proof(5, 5, SUBTREE)
    with pytest.raises(ProofError):
        consistency_proof(6, 5, SUBTREE)
    with pytest.raises(ProofError):
        verify_consistency(6, 5, ROOTS[5], ROOTS[5], [])
    with pytest.raises(ProofError):
        verify_consistency(5, 5, ROOTS[5], ROOTS[4], [])
