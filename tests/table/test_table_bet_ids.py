"""Bet ids: time-ordered UUIDv7 ids, one a bet, however many are drawn at once."""

from __future__ import annotations

import time
import uuid

from table_service.table.service import new_bet_id, new_bet_ids


def _millis(bet_id: str) -> int:
    return uuid.UUID(bet_id).int >> 80


def test_a_request_s_ids_are_distinct_uuid7_of_this_millisecond() -> None:
    before = time.time_ns() // 1_000_000
    ids = new_bet_ids(500)
    after = time.time_ns() // 1_000_000
    assert len(ids) == len(set(ids)) == 500
    for bet_id in ids:
        parsed = uuid.UUID(bet_id)
        assert (parsed.version, parsed.variant) == (7, uuid.RFC_4122)
        assert parsed.hex == bet_id
        assert before <= _millis(bet_id) <= after
    # the random bits are each id's own (not one draw repeated, not a counter)
    assert len({uuid.UUID(i).int & (1 << 62) - 1 for i in ids}) == 500


def test_ids_drawn_later_sort_after() -> None:
    first = new_bet_id()
    while time.time_ns() // 1_000_000 <= _millis(first):
        pass  # a later millisecond
    later = new_bet_ids(3)
    assert all(first < bet_id for bet_id in later)
    assert new_bet_ids(0) == []
