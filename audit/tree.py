"""The log's Merkle tree as served: subtree hashes from the database, cached where final.

Leaf ``i`` is the RFC 9162 leaf hash of event ``i + 1``'s 32-byte chain hash. A perfect,
aligned subtree of 256 leaves or more never changes once its leaves exist, so its hash
is cached for the life of the process; everything else is computed from those and from
at most a tile of leaves read per call.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from audit.merkle import EMPTY_ROOT, leaf_hash, node_hash
from audit.proof import consistency_proof, inclusion_proof

TILE_WIDTH = 256


def _split(n: int) -> int:
    return 1 << ((n - 1).bit_length() - 1)


class LogTree:
    """Subtree hashes over the events table (thread-safe, bounded caches)."""

    def __init__(self, sessions: sessionmaker[Session], *, max_cached_tiles: int = 4096) -> None:
        self._sessions = sessions
        self._lock = threading.Lock()
        self._perfect: dict[tuple[int, int], bytes] = {}
        self._tiles: OrderedDict[int, list[bytes]] = OrderedDict()
        self._max_tiles = max_cached_tiles

    # -- leaves --------------------------------------------------------------------------
    def _read_leaves(self, session: Session, lo: int, hi: int) -> list[bytes]:
        rows = session.execute(
            text("SELECT seq, hash FROM audit_events WHERE seq > :lo AND seq <= :hi ORDER BY seq"),
            {"lo": lo, "hi": hi},
        ).all()
        if len(rows) != hi - lo or (rows and (rows[0][0] != lo + 1 or rows[-1][0] != hi)):
            raise LookupError(f"events {lo + 1}..{hi} are not all in the log")
        return [leaf_hash(bytes.fromhex(h)) for _, h in rows]

    def leaf_hashes(self, session: Session, lo: int, hi: int) -> list[bytes]:
        """Leaf hashes ``[lo, hi)``; full tiles are cached, partial ones are not."""
        out: list[bytes] = []
        index = lo
        while index < hi:
            tile = index // TILE_WIDTH
            start, end = tile * TILE_WIDTH, (tile + 1) * TILE_WIDTH
            with self._lock:
                cached = self._tiles.get(tile)
                if cached is not None:
                    self._tiles.move_to_end(tile)
            if cached is None:
                stop = min(end, hi)
                leaves = self._read_leaves(session, start, stop)
                if stop == end:
                    with self._lock:
                        self._tiles[tile] = leaves
                        while len(self._tiles) > self._max_tiles:
                            self._tiles.popitem(last=False)
                cached = leaves
            take_to = min(end, hi)
            out.extend(cached[index - start : take_to - start])
            index = take_to
        return out

    # -- subtrees ------------------------------------------------------------------------
    def subtree_function(self, session: Session) -> Callable[[int, int], bytes]:
        def subtree(lo: int, hi: int) -> bytes:
            n = hi - lo
            if n <= TILE_WIDTH and lo // TILE_WIDTH == (hi - 1) // TILE_WIDTH:
                return _mth(self.leaf_hashes(session, lo, hi))
            perfect = n & (n - 1) == 0 and lo % n == 0
            if perfect:
                with self._lock:
                    found = self._perfect.get((lo, hi))
                if found is not None:
                    return found
            k = _split(n)
            digest = node_hash(subtree(lo, lo + k), subtree(lo + k, hi))
            if perfect:
                with self._lock:
                    self._perfect[(lo, hi)] = digest
            return digest

        return subtree

    def root(self, size: int) -> bytes:
        if size == 0:
            return EMPTY_ROOT
        with self._sessions() as session:
            return self.subtree_function(session)(0, size)

    def leaf(self, index: int) -> bytes:
        with self._sessions() as session:
            return self.leaf_hashes(session, index, index + 1)[0]

    def inclusion(self, index: int, size: int) -> list[bytes]:
        with self._sessions() as session:
            return inclusion_proof(index, size, self.subtree_function(session))

    def consistency(self, old: int, new: int) -> list[bytes]:
        with self._sessions() as session:
            return consistency_proof(old, new, self.subtree_function(session))

    def tile(self, level: int, index: int, width: int) -> bytes:
        """The hashes of tile ``level/index``, ``width`` of them (c2sp.org/tlog-tiles)."""
        span = TILE_WIDTH**level
        first = index * TILE_WIDTH
        with self._sessions() as session:
            subtree = self.subtree_function(session)
            if level == 0:
                return b"".join(self.leaf_hashes(session, first, first + width))
            return b"".join(
                subtree((first + i) * span, (first + i + 1) * span) for i in range(width)
            )

    def entries(self, index: int, width: int) -> bytes:
        """An entry bundle: each leaf (the 32-byte chain hash) with a uint16 length."""
        lo = index * TILE_WIDTH
        with self._sessions() as session:
            rows = session.execute(
                text("SELECT hash FROM audit_events WHERE seq > :lo AND seq <= :hi ORDER BY seq"),
                {"lo": lo, "hi": lo + width},
            ).all()
        if len(rows) != width:
            raise LookupError("entries not in the log")
        return b"".join(b"\x00\x20" + bytes.fromhex(h) for (h,) in rows)


def _mth(hashes: list[bytes]) -> bytes:
    """Merkle Tree Hash over leaf hashes already computed."""
    if len(hashes) == 1:
        return hashes[0]
    k = _split(len(hashes))
    return node_hash(_mth(hashes[:k]), _mth(hashes[k:]))
