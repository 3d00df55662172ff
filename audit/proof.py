"""Inclusion and consistency proofs of RFC 9162 (sections 2.1.3 and 2.1.4).

Generation works over any ``subtree(lo, hi)`` function giving the Merkle Tree Hash of the
leaves ``[lo, hi)``, so the same code serves proofs from the database, from tiles or from
a list in a test. Verification follows the RFC's algorithms step by step and is what the
witness and the bundle verifier run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from audit.merkle import leaf_hash, node_hash

Subtree = Callable[[int, int], bytes]


class ProofError(ValueError):
    """A proof that does not prove what it claims, or a request for an impossible proof."""


def _split(n: int) -> int:
    """The largest power of two strictly smaller than ``n`` (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


def inclusion_proof(index: int, size: int, subtree: Subtree) -> list[bytes]:
    """PATH(index, D[0:size])."""
    if not 0 <= index < size:
        raise ProofError(f"leaf index {index} is not in a tree of size {size}")
    path: list[bytes] = []
    lo, hi, m = 0, size, index
    while hi - lo > 1:
        k = _split(hi - lo)
        if m < k:
            path.append(subtree(lo + k, hi))
            hi = lo + k
        else:
            path.append(subtree(lo, lo + k))
            lo, m = lo + k, m - k
    path.reverse()
    return path


def consistency_proof(old: int, new: int, subtree: Subtree) -> list[bytes]:
    """PROOF(old, D[0:new]); empty when ``old`` is 0 or equal to ``new``."""
    if not 0 <= old <= new:
        raise ProofError(f"no consistency proof from size {old} to size {new}")
    if old == 0 or old == new:
        return []
    path: list[bytes] = []
    lo, hi, m, whole = 0, new, old, True
    while True:
        if m == hi - lo:
            if not whole:
                path.append(subtree(lo, hi))
            break
        k = _split(hi - lo)
        if m <= k:
            path.append(subtree(lo + k, hi))
            hi = lo + k
        else:
            path.append(subtree(lo, lo + k))
            lo, m, whole = lo + k, m - k, False
    path.reverse()
    return path


def root_from_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """RFC 9162 2.1.3.2: the root the proof leads to from the leaf hash."""
    if not 0 <= index < size:
        raise ProofError(f"leaf index {index} is not in a tree of size {size}")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            raise ProofError("inclusion proof is too long")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("inclusion proof is too short")
    return r


def verify_inclusion(
    index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes
) -> None:
    if root_from_inclusion(index, size, leaf, proof) != root:
        raise ProofError(f"leaf {index} is not in the tree of size {size} with that root")


def verify_consistency(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """RFC 9162 2.1.4.2; raises :class:`ProofError` unless the proof holds."""
    if not 0 <= old <= new:
        raise ProofError(f"size {new} is smaller than size {old}")
    if old == new:
        if proof:
            raise ProofError("a proof between equal sizes must be empty")
        if old_root != new_root:
            raise ProofError(f"two different roots for size {old}")
        return
    if old == 0:
        if proof:
            raise ProofError("a proof from the empty tree must be empty")
        return
    if not proof:
        raise ProofError("empty consistency proof")
    path = list(proof)
    if old & (old - 1) == 0:
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError("consistency proof is too long")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("consistency proof is too short")
    if fr != old_root:
        raise ProofError(f"the proof does not lead to the root of size {old}")
    if sr != new_root:
        raise ProofError(f"the proof does not lead to the root of size {new}")


def list_subtree(leaves: Sequence[bytes]) -> Subtree:
    """``subtree`` over raw leaves held in memory (tests, small exports)."""
    hashes = [leaf_hash(x) for x in leaves]
    cache: dict[tuple[int, int], bytes] = {}

    def subtree(lo: int, hi: int) -> bytes:
        if hi - lo == 1:
            return hashes[lo]
        found = cache.get((lo, hi))
        if found is None:
            k = _split(hi - lo)
            found = node_hash(subtree(lo, lo + k), subtree(lo + k, hi))
            cache[(lo, hi)] = found
        return found

    return subtree
