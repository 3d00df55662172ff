"""Temporal voting: one event per card pass, never two, never a guess."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from shoe_reader.camera.recognize import CardRead, FrameRead
from shoe_reader.camera.voting import Voter, VotingRules
from shoe_reader.events import (
    BLURRED,
    COVERED,
    OUTSIDE,
    UNKNOWN,
    CardSeen,
    ReaderEvent,
    UnreadableCard,
)

EMPTY = FrameRead(present=False, read=None, why="no card in view")
PARTIAL = FrameRead(present=True, read=None, why="card touches the edge of the region")


def seen(code: str | None, confidence: float = 0.9, reason: str = "") -> FrameRead:
    return FrameRead(present=True, read=CardRead(code, confidence, reason))


def run(frames: list[FrameRead], rules: VotingRules | None = None) -> list[ReaderEvent]:
    voter = Voter("cam-1", rules)
    events: list[ReaderEvent] = []
    for i, f in enumerate(frames):
        events += voter.feed(i, f)
    return events + voter.finish()


def test_a_sliding_card_yields_one_card_event_with_its_best_frame() -> None:
    frames = [EMPTY] * 2 + [PARTIAL] * 4 + [seen("QH", 0.7)] * 3 + [seen("QH", 0.95)]
    frames += [seen("QH", 0.8)] * 2 + [PARTIAL] * 3 + [EMPTY] * 5
    events = run(frames)
    assert len(events) == 1
    card = events[0]
    assert isinstance(card, CardSeen)
    assert card.card == "QH"
    assert card.frame == 9
    assert card.reader_id == "cam-1"
    assert card.confidence is not None and 0.7 < card.confidence <= 0.95
    assert card.to_json()["event"] == "card"


def test_the_event_comes_when_the_card_has_left() -> None:
    voter = Voter("cam")
    frames = [seen("7S")] * 5 + [EMPTY, EMPTY]
    assert [e for i, f in enumerate(frames) for e in voter.feed(i, f)] == []
    assert len(voter.feed(7, EMPTY)) == 1  # the third empty frame closes the pass


def test_a_short_dropout_inside_a_pass_does_not_split_it() -> None:
    frames = [seen("5D")] * 4 + [EMPTY, EMPTY] + [seen("5D")] * 4 + [EMPTY] * 3
    events = run(frames)
    assert [e.card for e in events if isinstance(e, CardSeen)] == ["5D"]


def test_two_passes_two_events() -> None:
    frames = [seen("5D")] * 4 + [EMPTY] * 3 + [seen("KC")] * 4 + [EMPTY] * 3
    assert [getattr(e, "card", None) for e in run(frames)] == ["5D", "KC"]


def test_only_low_confidence_reads_give_an_unreadable_card_not_a_guess() -> None:
    frames = [seen("8H", 0.3)] * 10 + [EMPTY] * 3
    events = run(frames)
    assert len(events) == 1
    assert isinstance(events[0], UnreadableCard)
    assert "no confident read in 10 frames" in events[0].reason
    assert events[0].confidence == 0.3
    assert events[0].to_json()["event"] == "unreadable"


def test_conflicting_confident_reads_give_an_unreadable_card() -> None:
    frames = [seen("8H")] * 4 + [seen("8D")] * 3 + [EMPTY] * 3
    (event,) = run(frames)
    assert isinstance(event, UnreadableCard)
    assert "conflicting reads" in event.reason
    assert "8Hx4" in event.reason and "8Dx3" in event.reason


def test_a_clear_majority_outvotes_a_stray_misread() -> None:
    frames = [seen("8H")] * 9 + [seen("8D")] + [EMPTY] * 3
    (event,) = run(frames)
    assert isinstance(event, CardSeen)
    assert event.card == "8H"
    assert event.confidence is not None
    assert event.confidence < 0.9  # the stray vote costs confidence


def test_too_few_votes_is_not_enough() -> None:
    frames = [PARTIAL] * 6 + [seen("2C")] * 2 + [EMPTY] * 3
    (event,) = run(frames)
    assert isinstance(event, UnreadableCard)
    assert "too few confident reads" in event.reason


def test_two_sure_reads_and_nothing_against_them_are_enough() -> None:
    """A hand over the card in most frames of its pass leaves two clear ones: two reads of
    0.95 or more, with no frame reading another card or a dispute, report the card; a
    weaker second read, a confident read of another card, or a frame whose face and index
    (or two corners) disagree leave it unreadable."""
    hidden = seen(None, 0.0, "face not clear")
    sure = [PARTIAL, hidden, seen("2C", 1.0), hidden, seen("2C", 0.96), hidden, EMPTY, EMPTY]
    (event,) = run([*sure, EMPTY])
    assert isinstance(event, CardSeen) and event.card == "2C"
    for spoiler in (
        seen("2C", 0.9),
        seen("2S", 0.8),
        FrameRead(True, CardRead(None, 0.0, "face and index disagree", disputed=True)),
        seen(None, 0.0, "corners disagree: 2C and 2S"),
    ):
        at = 2 if spoiler.read is not None and spoiler.read.code == "2C" else 5
        frames = [*sure[:at], spoiler, *sure[at + 1 :], EMPTY]
        (event,) = run(frames)
        assert isinstance(event, UnreadableCard), spoiler


def test_a_glimpse_of_one_or_two_frames_is_ignored() -> None:
    assert run([EMPTY, PARTIAL, PARTIAL, EMPTY, EMPTY, EMPTY, EMPTY]) == []


def test_a_card_lying_still_is_reported_once_without_waiting_for_it_to_leave() -> None:
    voter = Voter("cam", VotingRules(settle_votes=5))
    out = [e for i in range(40) for e in voter.feed(i, seen("JS"))]
    assert [e.card for e in out if isinstance(e, CardSeen)] == ["JS"]
    assert isinstance(out[0], CardSeen) and out[0].frame == 0
    assert [e for i in range(40, 45) for e in voter.feed(i, EMPTY)] == []
    assert voter.finish() == []


def test_the_end_of_the_stream_closes_an_open_pass() -> None:
    voter = Voter("cam")
    for i in range(5):
        assert voter.feed(i, seen("AD")) == []
    (event,) = voter.finish()
    assert isinstance(event, CardSeen) and event.card == "AD"


CODES = ["AS", "TD", "7H", "QC", "2D", "KH"]


@st.composite
def passes(draw: st.DrawFn) -> tuple[list[FrameRead], list[str]]:
    """Card passes separated by gaps; inside a pass, partial frames, dropouts shorter than
    the gap, low-confidence misreads and at most one confident misread per five good reads."""
    frames: list[FrameRead] = []
    truth: list[str] = []
    for _ in range(draw(st.integers(0, 5))):
        code = draw(st.sampled_from(CODES))
        truth.append(code)
        frames += [PARTIAL] * draw(st.integers(0, 6))
        good = draw(st.integers(4, 20))
        stray = draw(st.integers(0, good // 5))
        body = [seen(code, draw(st.floats(0.5, 1.0)))] * good + [seen("9S", 0.9)] * stray
        body += [seen("3C", draw(st.floats(0.0, 0.49))) for _ in range(draw(st.integers(0, 6)))]
        body += [EMPTY] * draw(st.integers(0, 2))
        body = draw(st.permutations(body))
        frames += [seen(code), *body, seen(code)]
        frames += [PARTIAL] * draw(st.integers(0, 6))
        frames += [EMPTY] * draw(st.integers(3, 8))
    return frames, truth


@settings(max_examples=100)
@given(passes())
def test_exactly_one_event_per_pass_and_it_is_the_card(
    case: tuple[list[FrameRead], list[str]],
) -> None:
    frames, truth = case
    events = run(frames)
    assert [e.card for e in events if isinstance(e, CardSeen)] == truth
    assert len(events) == len(truth)


def test_a_settled_card_swapped_for_another_reports_the_new_card_once() -> None:
    voter = Voter("cam", VotingRules(settle_votes=5))
    frames = [seen("JS")] * 20 + [seen("4H")] * 20 + [EMPTY] * 5
    out = [e for i, f in enumerate(frames) for e in voter.feed(i, f)] + voter.finish()
    assert [(e.card, e.frame) for e in out if isinstance(e, CardSeen)] == [("JS", 0), ("4H", 20)]
    assert len(out) == 2


def test_stray_misreads_of_a_settled_card_do_not_report_a_second_card() -> None:
    voter = Voter("cam", VotingRules(settle_votes=5))
    frames = ([seen("JS")] * 4 + [seen("JC", 0.6)]) * 12 + [EMPTY] * 5
    out = [e for i, f in enumerate(frames) for e in voter.feed(i, f)] + voter.finish()
    assert [getattr(e, "card", e.event) for e in out] == ["JS"]


def _cause_of(frames: list[FrameRead]) -> tuple[str, str]:
    (event,) = run(frames + [EMPTY] * 3)
    assert isinstance(event, UnreadableCard)
    return event.cause, event.reason


def test_a_pass_not_read_says_why_so_the_dealer_can_show_the_card_again() -> None:
    def weak(cause: str) -> FrameRead:
        return FrameRead(True, CardRead(None, 0.0, "not clear", cause=cause))

    assert _cause_of([PARTIAL] * 6)[0] == OUTSIDE
    assert _cause_of([PARTIAL] * 2 + [weak(COVERED)] * 4)[0] == COVERED
    assert _cause_of([weak(BLURRED)] * 3 + [weak(COVERED)] * 2 + [seen("QH")])[0] == BLURRED
    # A face the deck does not have (seen clearly, twice or more) is no case for a second try.
    assert _cause_of([weak(UNKNOWN)] * 3 + [weak(BLURRED)] * 2)[0] == UNKNOWN
    assert _cause_of([weak(UNKNOWN)] + [weak(BLURRED)] * 4)[0] == BLURRED
    # Two cards read confidently: a person looks at the card.
    assert _cause_of([seen("QH")] * 3 + [seen("QD")] * 3)[0] == UNKNOWN
    event = UnreadableCard(reader_id="cam-1", cause=COVERED)
    assert event.show_again and not UnreadableCard(reader_id="cam-1", cause=UNKNOWN).show_again


def test_a_card_is_reported_only_if_one_frame_showed_its_index_is_this_decks() -> None:
    """A frame too blurred to tell this deck's index print from another deck's may vote;
    the pass is reported only if one of its frames was sharp enough to tell."""

    def blurred(fit: float) -> FrameRead:
        return FrameRead(True, CardRead("QH", 0.9, deck_fit=fit))

    cause, reason = _cause_of([blurred(0.93)] * 6)
    assert cause == BLURRED and "never sharp enough" in reason
    events = run([blurred(0.93)] * 5 + [blurred(0.97)] + [EMPTY] * 3)
    assert [e.card for e in events if isinstance(e, CardSeen)] == ["QH"]


def test_an_unreadable_card_of_a_reader_that_cannot_say_why_keeps_its_json_line() -> None:
    line = UnreadableCard(reader_id="shoe", reason="bad read").to_json()
    assert "cause" not in line
    assert UnreadableCard(reader_id="cam", cause=BLURRED).to_json()["cause"] == BLURRED


def test_a_pass_disputed_in_more_frames_than_it_is_read_is_not_reported() -> None:
    """ancient_french's five of spades under a finger over its middle pip (benchmark, studio
    level, pass 129): the face read the four of spades confidently in three frames and, in four
    more, the index said another card against it (a dispute). Three votes are a card only if
    the pass's disputes are no more than its votes; the same three with three disputes are."""
    dispute = FrameRead(True, CardRead(None, 0.0, "face and index disagree", disputed=True))
    against = [seen("4S", 1.0)] * 3 + [dispute] * 4
    (event,) = run(against)
    assert isinstance(event, UnreadableCard)
    (event,) = run([seen("4S", 1.0)] * 3 + [dispute] * 3)
    assert isinstance(event, CardSeen) and event.card == "4S"


def lean(face: str, corners: tuple[str, ...], code: str | None = None) -> FrameRead:
    """A frame not read confidently, whose face (clear where not covered) and corners say
    what they say (see CardRead.face)."""
    return FrameRead(True, CardRead(code, 0.3 if code else 0.0, "not clear", cause=COVERED,
                                    face=face, corners=corners))  # fmt: skip


def test_two_confident_frames_and_frames_leaning_to_the_card_are_enough() -> None:
    """A hand over one end of the card leaves two confident frames; the others, each too
    weak alone, still show the same card by their face and a corner. Two confident frames
    with two such frames and nothing against report the card; one confident frame never does
    (a single frame misreads), nor a lean with one source only, nor a pass where any frame
    says another card, however weakly."""
    covered = lean("", ())
    base = [seen("QD", 0.83), seen("QD", 0.9), lean("QD", ("QD",)), lean("QD", ("QD",), "QD")]
    (event,) = run([*base, covered, covered, EMPTY, EMPTY, EMPTY])
    assert isinstance(event, CardSeen) and event.card == "QD"
    for frames in (
        [seen("QD", 0.83), lean("QD", ("QD",)), lean("QD", ("QD",)), lean("QD", ("QD",))],
        [*base[:3], lean("QD", ())],  # one source only: not a lean
        [*base, lean("QD", ("QD", "QH"))],  # a corner says another card
        [*base, lean("QH", ())],  # the face says another card
        [*base, lean("", (), "QC")],  # a weak read of another card
        [*base, FrameRead(True, CardRead(None, 0.0, "face and index disagree", disputed=True))],
    ):
        (event,) = run([*frames, EMPTY, EMPTY, EMPTY])
        assert isinstance(event, UnreadableCard), frames


def test_corners_split_between_the_sure_card_and_another_rank_do_not_count_against_it() -> None:
    """svg-jolly-royal's six of spades (benchmark, studio level, pass 72): two frames read it
    at 0.98 and 1.00, and in one more its corners said the six and the nine of spades (a six's
    index half hidden is a nine's turned). Two sure frames with such a split report the card;
    a split with the card's rank in another suit (the confident misreads seen were all such),
    a split between two other cards, or the rule off leave it unreadable."""

    def split(*codes: str) -> FrameRead:
        why = f"corners disagree: {' and '.join(codes)}"
        return FrameRead(True, CardRead(None, 0.0, why, cause=COVERED, corners=codes))

    hidden = seen(None, 0.0, "face not clear")
    sure = [PARTIAL, seen("6S", 0.98), PARTIAL, seen("6S", 1.0), split("6S", "9S"), hidden]
    (event,) = run([*sure, EMPTY, EMPTY, EMPTY])
    assert isinstance(event, CardSeen) and event.card == "6S"
    (event,) = run([*sure, EMPTY, EMPTY, EMPTY], VotingRules(rank_splits=False))
    assert isinstance(event, UnreadableCard)
    for spoiler in (split("6S", "6C"), split("6S", "9S", "6C"), split("8S", "9S")):
        (event,) = run([*sure[:4], spoiler, hidden, EMPTY, EMPTY, EMPTY])
        assert isinstance(event, UnreadableCard), spoiler


def by_index(card: str, suit: str, corners: tuple[str, ...] | None = None) -> FrameRead:
    """A frame not read confidently whose corners read ``card`` on their own and whose face
    says the suit ``suit`` (not the card: a finger over the pips that tell it)."""
    said = (card,) if corners is None else corners
    read = CardRead(None, 0.0, "index not clear: one corner reads it", cause=COVERED,
                    corners=said, index=card, face_suit=suit, deck_fit=0.97)  # fmt: skip
    return FrameRead(True, read)


def test_a_corner_with_the_faces_suit_leans_to_the_card_and_the_corner_alone_does_not() -> None:
    """anglo_modern's eight of hearts with a finger over one corner and the pips that tell it
    from the seven (benchmark, studio level, pass 120): no frame read, one corner said 8H in
    all eight, the face said hearts. Frames whose index reads the card and whose face says
    its suit lean to it: five of them and nothing else in the pass read it; the suit of the
    corner alone, four frames, another card said once, a dispute, an index never this deck's
    print, or the rule off leave it unreadable. With one sure frame, three such frames are
    the leans the pass asks (VotingRules.lean_sure_votes)."""
    hidden = seen(None, 0.0, "face not clear")
    frames = [by_index("8H", "H")] * 5 + [hidden]
    (event,) = run([*frames, EMPTY, EMPTY, EMPTY])
    assert isinstance(event, CardSeen) and event.card == "8H" and (event.confidence or 1.0) < 0.5
    no_suit = [by_index("8H", "")] * 5  # the face says no suit: the corner's suit alone
    wrong_suit = [by_index("8H", "D")] * 5
    dispute = FrameRead(True, CardRead(None, 0.0, "face and index disagree", disputed=True))
    other = FrameRead(True, CardRead(None, 0.0, "not clear", corners=("7H",)))
    foreign = [replace(f, read=replace(f.read, deck_fit=0.93)) for f in frames if f.read]
    for spoiled in (
        no_suit,
        wrong_suit,
        frames[1:],
        [*frames, other],
        [*frames, dispute],
        [*frames, by_index("8H", "H", ("8H", "6H"))],
        foreign,
    ):
        (event,) = run([*spoiled, EMPTY, EMPTY, EMPTY])
        assert isinstance(event, UnreadableCard), spoiled
    (event,) = run([*frames, EMPTY, EMPTY, EMPTY], VotingRules(index_leans=False))
    assert isinstance(event, UnreadableCard)
    (event,) = run([seen("8H", 0.97), *frames[:3], hidden, EMPTY, EMPTY, EMPTY])
    assert isinstance(event, CardSeen) and event.card == "8H"
    (event,) = run([seen("8H", 0.97), *no_suit[:3], hidden, EMPTY, EMPTY, EMPTY])
    assert isinstance(event, UnreadableCard)


def test_faces_a_pip_short_with_the_cards_index_lean_to_the_sure_card() -> None:
    """plastic's three of spades (benchmark, studio level, pass 109): read at 1.00 in one frame;
    in the four others a finger over a pip left a two's face, the index saying the three. Such
    frames lean to the card the index reads: one sure frame and three of them report it. A
    dispute with the card's twin suit, one whose index reads another card, too few frames, or
    the rule off leave the pass unreadable."""

    def short(face: str, index: str) -> FrameRead:
        why = f"face and index disagree: face reads {face}, index reads {index}"
        read = CardRead(None, 0.0, why, disputed=True, cause=COVERED, dispute=(face, index))
        return FrameRead(True, read)

    frames = [seen("3S", 1.0), *[short("2S", "3S")] * 3]
    (event,) = run([*frames, EMPTY, EMPTY, EMPTY])
    assert isinstance(event, CardSeen) and event.card == "3S"
    (event,) = run([seen("3S", 0.8), seen("3S", 0.7), *frames[1:3], EMPTY, EMPTY, EMPTY])
    assert isinstance(event, CardSeen) and event.card == "3S"
    for spoiled in (
        [*frames[:3], short("3C", "3S")],  # the twin suit: a dispute that counts
        [*frames[:3], short("2S", "4S")],  # the index says another card
        [seen("3S", 0.9), *frames[1:]],  # no sure frame, one confident
        frames[:3],
    ):
        (event,) = run([*spoiled, EMPTY, EMPTY, EMPTY])
        assert isinstance(event, UnreadableCard), spoiled
    (event,) = run([*frames, EMPTY, EMPTY, EMPTY], VotingRules(pips_lean=False))
    assert isinstance(event, UnreadableCard)


def test_a_confident_frame_and_a_lone_corner_in_five_more_read_the_card() -> None:
    """svg-standard's two of diamonds under a hand (benchmark, studio level, pass 199): read at
    0.88 in one frame; in five more its one corner read 2D alone, the face unable to say (a
    corner's suit alone is not a read: see VotingRules.alone_frames). Six such frames with
    nothing else in the pass report the card; five, no confident frame, a frame saying
    another card (the twin suit too), a dispute, or the rule off do not."""
    frames = [seen("2D", 0.88), *[by_index("2D", "")] * 5]
    (event,) = run([*frames, EMPTY, EMPTY, EMPTY])
    assert isinstance(event, CardSeen) and event.card == "2D"
    dispute = FrameRead(True, CardRead(None, 0.0, "face and index disagree", disputed=True))
    for spoiled in (
        frames[:5],
        [by_index("2D", "")] * 6,
        [*frames, by_index("2H", "")],
        [*frames, FrameRead(True, CardRead(None, 0.0, "not clear", corners=("2H",)))],
        [*frames, dispute],
    ):
        (event,) = run([*spoiled, EMPTY, EMPTY, EMPTY])
        assert isinstance(event, UnreadableCard), spoiled
    (event,) = run([*frames, EMPTY, EMPTY, EMPTY], VotingRules(alone_frames=0))
    assert isinstance(event, UnreadableCard)


def test_a_face_alone_counts_with_lone_corners_and_never_against_anything() -> None:
    """plastic's nine of spades under a hand, a glare spot over its other index (seed 23, pass
    11): one frame read (0.78), three leaning to the card, three whose face alone says it.
    Seven such frames with nothing else in the pass report the card (``face_alone``, counted
    as a lone corner is, see ``alone_frames``); with no confident frame, a corner or face
    saying another card, a dispute, or the rule off, the pass is unreadable."""
    alone = lean("9S", ())
    frames = [seen("9S", 0.78), *[lean("9S", ("9S",))] * 3, alone, alone, alone]
    (event,) = run([*frames, EMPTY, EMPTY, EMPTY])
    assert isinstance(event, CardSeen) and event.card == "9S"
    dispute = FrameRead(True, CardRead(None, 0.0, "face and index disagree", disputed=True))
    for spoiled in (
        [*[lean("9S", ("9S",))] * 3, alone, alone, alone, alone],  # nothing confident
        frames[:5],  # five frames in all
        [*frames, lean("9C", ())],  # a face alone saying the twin
        [*frames, lean("", ("9C",))],  # a corner saying another card
        [*frames, dispute],
    ):
        (event,) = run([*spoiled, EMPTY, EMPTY, EMPTY])
        assert isinstance(event, UnreadableCard), spoiled
    (event,) = run([*frames, EMPTY, EMPTY, EMPTY], VotingRules(face_alone=False))
    assert isinstance(event, UnreadableCard)


def test_a_frame_leaning_to_the_card_on_its_index_can_show_the_print_is_this_decks() -> None:
    """anglo's two of hearts, blurred (seed 23, pass 54): five frames read it, their index
    fitting this deck's print at 0.947 at best; a frame read weakly as the card, its face and
    corner agreeing, fits at 0.951 and shows the print is this deck's (``deck_fit_leans``).
    A frame saying the card by its face and corner only (no index fit measured, no code) does
    not, nor does a leaning frame with the rule off."""
    read = [FrameRead(True, CardRead("2H", 0.7, deck_fit=0.947))] * 5
    weak = FrameRead(True, CardRead("2H", 0.03, "index not clear", face="2H", corners=("2H",),
                                    deck_fit=0.951))  # fmt: skip
    (event,) = run([*read, weak, EMPTY, EMPTY, EMPTY])
    assert isinstance(event, CardSeen) and event.card == "2H"
    for frames, rules in (
        ([*read, lean("2H", ("2H",))], VotingRules()),  # deck_fit unset: not a measure
        ([*read, weak], VotingRules(deck_fit_leans=False)),
    ):
        (event,) = run([*frames, EMPTY, EMPTY, EMPTY], rules)
        assert isinstance(event, UnreadableCard) and "never sharp enough" in event.reason


def test_frames_whose_face_corners_and_index_say_the_card_count_as_index_leans() -> None:
    """anglo_modern's three of diamonds, blurred (seed 19, pass 23): no frame read, six whose
    face, corners and index all say 3D, one of them fitting this deck's print at 0.961. They
    count for ``index_frames`` as frames leaning by index and face suit do
    (``index_in_leans``): the pass is the card. Four such frames, one whose index fits only
    at 0.93, a dispute, or the rule off leave it unreadable."""

    def whole(fit: float) -> FrameRead:
        return FrameRead(True, CardRead(None, 0.0, "index not this deck's 3D", face="3D",
                                        corners=("3D",), index="3D", deck_fit=fit))  # fmt: skip

    frames = [whole(0.93)] * 5 + [whole(0.961)]
    (event,) = run([*frames, EMPTY, EMPTY, EMPTY])
    assert isinstance(event, CardSeen) and event.card == "3D"
    dispute = FrameRead(True, CardRead(None, 0.0, "face and index disagree", disputed=True))
    for spoiled, rules in (
        (frames[2:], VotingRules()),
        ([whole(0.93)] * 6, VotingRules()),
        ([*frames, dispute], VotingRules()),
        (frames, VotingRules(index_in_leans=False)),
    ):
        (event,) = run([*spoiled, EMPTY, EMPTY, EMPTY], rules)
        assert isinstance(event, UnreadableCard), spoiled
