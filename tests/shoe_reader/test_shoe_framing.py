"""The framed wire format: CRC, encoding, and the incremental parser."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoe_reader.framing import (
    MAX_FRAME_LEN,
    BadFrame,
    Frame,
    FrameEncodeError,
    FrameParser,
    crc16,
    encode_frame,
    seq_distance,
)


def test_crc_is_ccitt_false_check_value() -> None:
    assert crc16(b"123456789") == 0x29B1


def test_encode_layout_and_crc() -> None:
    frame = encode_frame(7, "CRD", "TD")
    assert frame == b"\x02007|CRD|TD\x03" + f"{crc16(b'007|CRD|TD'):04X}".encode() + b"\r\n"


@pytest.mark.parametrize(
    ("seq", "frame_type", "payload"),
    [
        (1000, "CRD", "AS"),
        (-1, "CRD", "AS"),
        (1, "crd", "AS"),
        (1, "CR", "AS"),
        (1, "ERR", "x\x03"),
    ],
)
def test_encode_refuses_what_the_wire_cannot_carry(seq: int, frame_type: str, payload: str) -> None:
    with pytest.raises(FrameEncodeError):
        encode_frame(seq, frame_type, payload)


def test_encode_refuses_frames_over_64_bytes() -> None:
    with pytest.raises(FrameEncodeError, match="maximum"):
        encode_frame(1, "ERR", "E1;" + "x" * 60)


def test_frame_split_across_reads() -> None:
    parser = FrameParser()
    frame = encode_frame(12, "CRD", "QH")
    out: list[Frame | BadFrame] = []
    for i in range(len(frame)):
        out += parser.feed(frame[i : i + 1])
    assert out == [Frame(12, "CRD", "QH", frame)]


def test_several_frames_in_one_read_with_noise_between() -> None:
    a, b, c = encode_frame(1, "CRD", "AS"), encode_frame(2, "HBT", "U"), encode_frame(3, "CUT")
    out = FrameParser().feed(b"\xff\x00junk" + a + b"\r\n~~" + b + b"\x03\x03" + c + b"zz")
    assert [(f.seq, f.type) for f in out if isinstance(f, Frame)] == [
        (1, "CRD"),
        (2, "HBT"),
        (3, "CUT"),
    ]
    assert not [f for f in out if isinstance(f, BadFrame)]


def test_bad_crc_is_rejected_with_its_seq() -> None:
    frame = bytearray(encode_frame(42, "CRD", "AS"))
    frame[9] = ord("K")  # the card, not the CRC: CRC now wrong
    (bad,) = FrameParser().feed(bytes(frame))
    assert isinstance(bad, BadFrame) and bad.reason == "CRC mismatch" and bad.seq == 42


def test_lowercase_crc_digits_are_rejected() -> None:
    frame = encode_frame(5, "CRD", "9C")
    bad = frame[:-6] + frame[-6:-2].lower() + b"\r\n"
    if bad == frame:  # CRC happened to have no letters: force one
        pytest.skip("CRC without hex letters")
    (out,) = FrameParser().feed(bad)
    assert isinstance(out, BadFrame)


def test_unknown_type_is_rejected_even_with_a_good_crc() -> None:
    (out,) = FrameParser().feed(encode_frame(3, "XYZ", "1"))
    assert isinstance(out, BadFrame) and out.seq == 3 and "unknown TYPE" in out.reason


def test_frame_cut_short_by_a_new_stx_is_rejected_and_the_next_one_parsed() -> None:
    good = encode_frame(9, "CRD", "7D")
    out = FrameParser().feed(good[:8] + good)
    assert isinstance(out[0], BadFrame) and out[0].reason == "truncated frame" and out[0].seq == 9
    assert out[1] == Frame(9, "CRD", "7D", good)


def test_oversized_garbage_is_discarded_and_parsing_resumes() -> None:
    parser = FrameParser()
    out = parser.feed(b"\x02" + b"A" * (MAX_FRAME_LEN + 10))
    assert len(out) == 1 and isinstance(out[0], BadFrame) and out[0].reason == "oversized frame"
    good = encode_frame(1, "HBT", "L")
    assert parser.feed(b"AAAA\x03ABCD\r\n" + good) == [Frame(1, "HBT", "L", good)]


def test_oversized_frame_with_etx_is_discarded() -> None:
    body = b"001|ERR|" + b"x" * 60
    raw = b"\x02" + body + b"\x03" + f"{crc16(body):04X}".encode() + b"\r\n"
    good = encode_frame(2, "HBT", "U")
    out = FrameParser().feed(raw + good)
    assert isinstance(out[0], BadFrame) and out[0].reason == "oversized frame"
    assert out[-1] == Frame(2, "HBT", "U", good)


def test_missing_crlf_is_bad_layout() -> None:
    frame = encode_frame(4, "EMP")
    (out,) = FrameParser().feed(frame[:-2] + b"XX")
    assert isinstance(out, BadFrame) and out.reason == "missing CR LF"


def test_seq_distance_wraps() -> None:
    assert seq_distance(999, 0) == 1
    assert seq_distance(998, 2) == 4
    assert seq_distance(5, 5) == 0


frames = st.builds(
    encode_frame,
    st.integers(0, 999),
    st.sampled_from(["CRD", "HBT", "CUT", "UNR", "EMP", "LID", "ERR", "HLO"]),
    st.sampled_from(["", "AS", "TD", "L", "U", "O", "E7;Card jam"]),
)


@given(st.binary(max_size=600), st.lists(st.integers(1, 80), max_size=30))
def test_fuzz_parser_never_raises_and_only_accepts_crc_valid_frames(
    data: bytes, cuts: list[int]
) -> None:
    parser = FrameParser()
    pos = 0
    out: list[Frame | BadFrame] = []
    for n in cuts:
        out += parser.feed(data[pos : pos + n])
        pos += n
    out += parser.feed(data[pos:])
    for item in out:
        if isinstance(item, Frame):
            body = item.raw[1 : item.raw.index(3)]
            assert int(item.raw[-6:-2], 16) == crc16(body)
            assert len(item.raw) <= MAX_FRAME_LEN


@settings(max_examples=100)
@given(
    st.lists(st.one_of(frames, st.binary(max_size=30)), max_size=20),
    st.lists(st.integers(1, 40), max_size=40),
)
def test_fuzz_chunking_does_not_change_the_result(parts: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(parts)
    whole = FrameParser().feed(stream)
    parser = FrameParser()
    pieces: list[Frame | BadFrame] = []
    pos = 0
    for n in cuts:
        pieces += parser.feed(stream[pos : pos + n])
        pos += n
    pieces += parser.feed(stream[pos:])
    assert [f for f in pieces if isinstance(f, Frame)] == [f for f in whole if isinstance(f, Frame)]


@given(st.lists(frames, min_size=1, max_size=10), st.binary(max_size=20))
def test_valid_frames_survive_noise_that_has_no_stx(frames_: list[bytes], noise: bytes) -> None:
    noise = noise.replace(b"\x02", b"")
    stream = b"".join(noise + f for f in frames_)
    got = [f.raw for f in FrameParser().feed(stream) if isinstance(f, Frame)]
    assert got == frames_
