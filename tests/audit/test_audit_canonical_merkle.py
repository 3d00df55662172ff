from __future__ import annotations

import hashlib
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from audit.canonical import NonCanonicalValue, canonical_json
from audit.chain import GENESIS_HASH, EventBody, event_hash
from audit.merkle import EMPTY_ROOT, MerkleFrontier, leaf_hash, merkle_root, node_hash

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def test_canonical_sorts_keys_and_strips_whitespace() -> None:
    assert (
        canonical_json({"b": 1, "a": [True, None, "é"]}) == '{"a":[true,null,"é"],"b":1}'.encode()
    )


@pytest.mark.parametrize("bad", [1.5, {"x": 0.1}, [1, 2.0], {1: "non-string key"}, b"bytes"])
def test_canonical_refuses_floats_and_non_json(bad: object) -> None:
    with pytest.raises(NonCanonicalValue):
        canonical_json(bad)


@given(json_values)
def test_fast_path_equals_the_rfc8785_reference(value: object) -> None:
    import rfc8785

    # rfc8785 types its input as its own (private) JSON type; these are JSON values
    assert canonical_json(value) == rfc8785.dumps(value)  # type: ignore[arg-type]


def test_every_character_is_written_as_the_standard_library_writes_it() -> None:
    """The fast encoder (orjson) and the standard library's agree on every character, as a
    key and as a value, so a log written before or after the switch hashes the same."""
    import orjson

    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]  # lone surrogates:
    for start in range(0, len(chars), 4096):  # orjson refuses them, the other path runs
        block = chars[start : start + 4096]
        value = {"k" + ch: [ch, ch + "x", 1] for ch in block}
        expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert orjson.dumps(value, option=orjson.OPT_SORT_KEYS) == expected.encode(), start
    ascii_value = {chr(c): chr(c) * 2 for c in range(128)}
    expected = json.dumps(ascii_value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_json(ascii_value) == expected.encode()


def test_a_lone_surrogate_and_deep_nesting_take_the_other_paths() -> None:
    import rfc8785

    deep: object = 1
    for _ in range(300):  # past orjson's 255 levels
        deep = [deep]
    assert canonical_json(deep) == b"[" * 300 + b"1" + b"]" * 300
    with pytest.raises(rfc8785.CanonicalizationError):
        canonical_json({"x": "\ud800"})


@given(json_values)
def test_canonical_is_a_fixed_point(value: object) -> None:
    once = canonical_json(value)
    assert canonical_json(json.loads(once)) == once


def _reference_mth(leaves: list[bytes]) -> bytes:
    """RFC 9162 section 2.1.1, written recursively as in the RFC."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaf_hash(leaves[0])
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return node_hash(_reference_mth(leaves[:k]), _reference_mth(leaves[k:]))


# Test vector shared by Certificate Transparency implementations (8 leaves).
CT_LEAVES = [
    b"",
    b"\x00",
    b"\x10",
    b"\x20\x21",
    b"\x30\x31",
    b"\x40\x41\x42\x43",
    b"\x50\x51\x52\x53\x54\x55\x56\x57",
    bytes(range(0x60, 0x70)),
]


def test_merkle_root_matches_the_ct_test_vector() -> None:
    assert merkle_root(CT_LEAVES).hex() == (
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"
    )
    assert merkle_root([]) == EMPTY_ROOT
    assert merkle_root(CT_LEAVES[:1]).hex() == (
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
    )


@given(st.lists(st.binary(max_size=8), max_size=70), st.integers(0, 70))
def test_frontier_equals_rfc_definition_and_resumes(leaves: list[bytes], cut: int) -> None:
    cut = min(cut, len(leaves))
    first = MerkleFrontier()
    first.extend(leaves[:cut])
    resumed = MerkleFrontier.from_json(first.size, first.to_json())
    resumed.extend(leaves[cut:])
    assert resumed.root() == _reference_mth(leaves)
    assert first.root() == _reference_mth(leaves[:cut])


def test_event_hash_binds_sequence_link_and_content() -> None:
    body = EventBody("t1", "r1", "card_scanned", "dealer:d", "2026-01-01T00:00:00.000000Z", {})
    base = event_hash(1, GENESIS_HASH, body.canonical())
    assert base != event_hash(2, GENESIS_HASH, body.canonical())
    assert base != event_hash(1, "1" * 64, body.canonical())
    other = EventBody("t1", "r1", "card_scanned", "dealer:e", body.ts, {})
    assert base != event_hash(1, GENESIS_HASH, other.canonical())


@given(json_values, st.text(max_size=12), st.none() | st.text(max_size=8), st.text(max_size=8))
def test_event_body_splice_equals_the_reference(
    payload: object, actor: str, round_id: str | None, event_type: str
) -> None:
    import rfc8785

    body = EventBody(
        "t1", round_id, event_type, actor, "2026-01-01T00:00:00.000000Z", {"p": payload}
    )
    reference = rfc8785.dumps(
        {
            "actor": actor,
            "payload": {"p": payload},  # type: ignore[dict-item]  # a JSON value, typed object
            "round_id": round_id,
            "table_id": "t1",
            "ts": body.ts,
            "type": event_type,
        }
    )
    assert body.canonical() == reference


# Lists long enough for the bulk look at flat records (audit.canonical._flat_records).
flat_records = st.lists(
    st.dictionaries(
        st.text(max_size=6),
        st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=6),
        max_size=5,
    ),
    min_size=8,
    max_size=20,
)
not_canonical = st.sampled_from(
    [2**53, -(2**53), 2**64, 0.5, float("nan"), float("inf"), b"x", {1.5}, object()]
)


@given(flat_records)
def test_long_lists_of_flat_records_equal_the_reference(records: list[dict[str, object]]) -> None:
    import rfc8785

    for value in (records, {"round_id": "r", "results": records}, tuple(records)):
        # rfc8785 types its input as its own (private) JSON type; these are JSON values
        assert canonical_json(value) == rfc8785.dumps(value)  # type: ignore[arg-type]


@given(flat_records, st.data())
def test_a_bad_value_or_key_in_a_long_list_of_records_is_refused_with_its_path(
    records: list[dict[str, object]], data: st.DataObject
) -> None:
    """The bulk look leaves integers' range and keys to the encoder: a bad one anywhere
    is still refused, with the path the full walk names."""
    at = data.draw(st.integers(0, len(records) - 1))
    if data.draw(st.booleans()):
        key = data.draw(st.text(max_size=4))
        records[at] = {**records[at], key: data.draw(not_canonical)}
        where = f"$.results[{at}].{key}"
    else:
        # a key that is not a string is the point
        records[at] = {**records[at], data.draw(st.sampled_from([1, None, b"k"])): 1}  # type: ignore[dict-item, misc]
        where = f"$.results[{at}]: object keys"
    with pytest.raises(NonCanonicalValue, match=re.escape(where)):
        canonical_json({"round_id": "r", "results": records})
