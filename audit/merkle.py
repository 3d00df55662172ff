"""Merkle tree hashes of RFC 9162 (Certificate Transparency v2), section 2.1.

Leaves are the events' chain hashes. The frontier (the roots of the perfect subtrees
covering the leaves so far) lets a checkpoint extend the previous one without rereading
the whole log.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(leaf: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + leaf).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


@dataclass
class MerkleFrontier:
    """Incremental RFC 9162 tree: O(log n) state, O(1) amortised append."""

    size: int = 0
    # (height, hash) of perfect subtrees, left to right, strictly decreasing height.
    nodes: list[tuple[int, bytes]] = field(default_factory=list)

    def append(self, leaf: bytes) -> None:
        height, digest = 0, leaf_hash(leaf)
        while self.nodes and self.nodes[-1][0] == height:
            _, left = self.nodes.pop()
            digest = node_hash(left, digest)
            height += 1
        self.nodes.append((height, digest))
        self.size += 1

    def extend(self, leaves: Iterable[bytes]) -> None:
        for leaf in leaves:
            self.append(leaf)

    def root(self) -> bytes:
        """MTH of the leaves so far: fold the subtrees from the right."""
        if not self.nodes:
            return EMPTY_ROOT
        digest = self.nodes[-1][1]
        for _, left in reversed(self.nodes[:-1]):
            digest = node_hash(left, digest)
        return digest

    def to_json(self) -> list[list[int | str]]:
        return [[h, d.hex()] for h, d in self.nodes]

    @classmethod
    def from_json(cls, size: int, data: list[list[int | str]]) -> MerkleFrontier:
        return cls(size=size, nodes=[(int(h), bytes.fromhex(str(d))) for h, d in data])


def merkle_root(leaves: Iterable[bytes]) -> bytes:
    frontier = MerkleFrontier()
    frontier.extend(leaves)
    return frontier.root()
