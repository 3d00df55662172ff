"""Temporal voting: many frames of one card become exactly one reader event.

A card sliding out of the shoe is in view for a dozen frames or more: first
half hidden, then whole, then leaving. Each frame's read is a vote; the pass
ends when the region has been empty for a few frames, and only then is the
card reported — once — as the clear winner of the confident votes, or as an
unreadable card for the supervisor to enter by hand. A card left lying in the
region is reported as soon as its votes are settled, and not again; if it is
replaced by another card before the region empties, the new card is reported
once its own votes are settled.

Each event carries when its card came into view (the capture time of the first
frame of the pass, or of the run that reported a swapped card), and
:meth:`Voter.pending_since` says how far back a report still to come may reach:
the cross-check with a serial shoe needs both, since the report itself comes
only once the card has gone.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

import structlog

from shoe_reader.camera.recognize import CORNERS_DISAGREE, FrameRead
from shoe_reader.events import (
    BLURRED,
    COVERED,
    OUTSIDE,
    UNKNOWN,
    CardSeen,
    ReaderEvent,
    UnreadableCard,
)

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class VotingRules:
    """When a pass yields a card, and when it yields an unreadable card."""

    min_confidence: float = 0.5  # a frame's read below this is not a vote
    min_votes: int = 3  # confident frames needed for a card
    sure_votes: int = 2
    sure: float = 0.95
    """Or this many frames read this confidently, with no frame of the pass reading another
    card or disputed between two (a hand over the card in most of the pass's frames leaves
    two clear ones: measured on the development decks at the "studio" level, no frame
    misread above 0.66)."""
    lean_votes: int = 2
    lean_frames: int = 4
    """Or this many confident frames, and in all this many frames that either read the card
    confidently or lean to it (their face, clear where it is not covered, and a corner say
    it, and nothing in them says another card: see :attr:`CardRead.face`), with nothing in
    the pass against it: no other card read or leaned to, however weakly, no frame disputed.
    A hand over one end of the card leaves two clear frames, and the rest still show the
    same card by two sources each too weak alone; a confident misread of one frame is never
    the whole pass (measured on the development decks at the "studio" level: misread frames
    come with other frames that say the true card)."""
    index_over_pips: bool = True
    """A frame whose face reads another rank of the card's suit while its index reads the card
    the pass's confident frames read does not count against it (a finger over a pip, or a
    glare spot washing one out, leaves a four's face on a five; a shadow has added one): the
    index prints the rank, the face only counts pips. A dispute between two suits still counts,
    whichever way (a smeared club's index has read a spade, a covered diamond's face a heart),
    and so does one whose index reads another card than the confident frames (ancient_french's
    five of spades, read as the four by its face in three frames where the index said five in
    four more). Measured on the development decks at the "studio" level (2,800 passes): the
    index was right in 79 frames of such disputes and the face in 41, and no pass had a
    confident frame misread that an index in a dispute said too."""
    lean_sure_votes: int = 1
    """Or, in place of ``lean_votes`` confident frames, this many read at least ``sure``, with
    as many frames in all (``lean_frames``) that read the card or lean to it, and nothing in the
    pass against it: a hand over one end of the card in all but one frame, the others showing
    the card by its face and a corner each. Measured on the development decks at the "studio"
    level: a card the pass did not show was leaned to in at most two frames of a pass (this
    asks three), and a frame read as another card at 0.95 or more always came with frames
    reading or leaning to the card shown."""
    rank_splits: bool = True
    """A frame whose corners disagree between the card and cards of other ranks only (a six's
    index half hidden is a nine's turned, a six's an eight's) does not count against the card
    the pass's sure frames read (``sure_votes``): every frame the development decks and the
    check decks read confidently as a card not shown was that card's rank in the other suit
    of its colour (a smeared club a spade, a heart a diamond), and a split with such a card
    still counts, as a dispute between face and index does."""
    index_leans: bool = True
    """A frame not read confidently also leans to the card its corner indices read on their
    own when its face, not clear enough to tell the card, says the card's suit (see
    :attr:`CardRead.index` and :attr:`CardRead.face_suit`: a finger over the pips that tell a
    seven of hearts from an eight leaves the hearts' shape and colour) and nothing in the
    frame says another card: the rank from the index, the suit from both. The suit alone of a
    corner is never enough (ancient_french's ace of clubs had its corner say the ace of spades
    in seven of eight frames): the face must tell it."""
    index_in_leans: bool = True
    """A frame leaning to the card by its face and corners whose corner indices also read the
    card on their own (:attr:`CardRead.index`) counts, for ``index_frames``, as a frame leaning
    by index and face suit does, its index fit too: the face saying the whole card is more
    than its suit. anglo_modern's three of diamonds at seed 19 (pass 23), blurred, no hand:
    six frames whose face, corners and index all say 3D (index fit up to 0.961), none read
    confidently, nothing else said; unreadable, as such frames did not count for the rule.
    Measured as ``face_alone`` is, and on seed 2024 (the first 40 passes of each deck), the
    check decks and other decks' frames read with a similar deck's calibration (seed 2024, 40
    passes a pair): that pass is the only one it changes."""
    index_frames: int = 5
    """Or, with no frame read confidently at all, this many frames that lean to the card (one
    of them by index and face suit at least, and the index fitting this deck's print of the
    card to ``deck_fit`` in one of those), with nothing in the pass against it: no frame
    disputed, no other card said, however weakly (0: never). A hand over one corner and the
    pips that tell the card from its neighbours, the other corner clear in every frame.
    Measured on the development decks at the "studio" level (2,800 passes of seed 2024, 360
    of seed 7): no pass leaned to a card not shown in more than one frame."""
    pips_lean: bool = True
    """A frame whose face reads another rank of the card's suit while its index reads the card
    (see ``index_over_pips``) also leans to the card, for ``lean_frames``, and is then not
    against it: plastic's three of spades (pass 109) was read at 1.00 in one frame, and in the
    four others a finger over a pip left a two's face, the index saying the three. Measured on
    the cached studio frames of eleven development decks (seed 2024, 2,200 passes), such
    disputes' index said the card shown in 77 frames, the face in 12; a card not shown had such
    a frame in 15 passes, one each, and in none of them a confident frame (this rule asks one
    sure frame, or ``lean_votes`` confident ones, and ``lean_frames`` in all)."""
    alone_frames: int = 6
    """Or, with a confident frame or more, this many frames in all that read the card
    confidently, lean to it, or whose corner index alone reads it (see :attr:`CardRead.index`;
    the face, not clear, neither says the card nor rules it out), with nothing in the pass
    against it: no other card read or said however weakly, no frame disputed (0: never). A
    hand over the face and one corner in all but one frame (svg-standard's two of diamonds,
    pass 199: read at 0.88 once, its one corner reading it alone in five more). A corner's
    suit alone is no read (it said the twin suit in 18 of 144 such frames on the cached studio
    frames of eleven development decks, seed 2024), but there a card not shown was read, leaned
    to or read by a lone corner in at most three frames of a pass, and only in passes that
    read the card shown in three frames or more."""
    face_alone: bool = True
    """A frame not read confidently whose face alone reads the card clearly (see
    :attr:`CardRead.face`: clear where it is not covered), its corners saying nothing at all,
    also counts for ``alone_frames``, as a corner index read alone does. A glare spot on the
    card's path (fixed in the frame, the card sliding under it) can wash out the one index a
    hand leaves uncovered: its ink too faint to fit this deck's print (0.66-0.88) or to say
    a rank, the face, clear beside the hand, is refused for want of its index, and the pass
    had no more than one or two frames read (plastic's nine of spades at seed 23, pass 11:
    one frame read, three leaning, three with the face alone). Measured on the cached
    "studio" frames of the development decks (seed 23, 1,400 passes; seeds 13 and 19, 720 of
    the six hard decks): a face alone said a card not shown in no frame (the card shown in
    seven passes), and on other decks' frames read with a similar deck's calibration (seed
    23, six pairs, 600 passes) in none either, no more passes reported; nor on seed 2024 (the
    first 40 passes of each deck, and 240 of the pairs) and the check decks (8 passes each).
    The rule still asks for a confident frame, the pass's deck fit and nothing in the pass
    against the card."""
    deck_fit_leans: bool = True
    """The pass's deck fit (see ``deck_fit``) is also taken over the frames that lean to the
    card on its index (a frame read weakly as the card, or whose corners read it with the face
    agreeing or saying its suit, see ``index_leans``): their index fits this deck's print as a
    confident frame's does, and a frame whose index fits at ``deck_fit`` shows the print is
    this deck's whatever the frame's confidence (a fit just over ``INDEX_MIN`` is what keeps
    such a frame from being confident). anglo's two of hearts at seed 23 (pass 54): five
    frames read, their index fitting at 0.91-0.947, a frame leaning to it at 0.951. Frames
    saying the card by their face and corners only, with no index fit measured, do not count.
    Measured as ``face_alone`` is, and on other decks' frames read with a similar deck's
    calibration (seed 23, six pairs, 100 passes each; seed 2024, 40): not one more pass
    reported."""
    min_share: float = 0.8  # the winner's share of the confident votes
    gap_frames: int = 3  # empty frames that end a pass
    min_present_frames: int = 3  # shorter glimpses are not a card pass
    settle_votes: int = 12  # a card lying still is reported after this many votes
    deck_fit: float = 0.95
    """The best fit of the card's index with this deck's print of it, over the pass's votes,
    below which the card is not reported (a blurred frame cannot tell this deck's index from
    another deck's; one sharp enough frame of the pass must)."""


@dataclass
class _Pass:
    first_frame: int
    first_captured: float | None = None
    present_frames: int = 0
    absent_run: int = 0
    emitted: bool = False
    emitted_card: str = ""
    run_code: str = ""  # the current unbroken run of confident reads of one card
    run_length: int = 0
    run_confidence: float = 0.0
    run_best: tuple[float, int] = (0.0, 0)
    run_captured: float | None = None
    votes: Counter[str] = field(default_factory=Counter)
    confidence_sum: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    best: dict[str, tuple[float, int]] = field(default_factory=dict)
    deck: dict[str, float] = field(default_factory=dict)  # best deck_fit per card
    reasons: Counter[str] = field(default_factory=Counter)
    causes: Counter[str] = field(default_factory=Counter)  # of the frames not read
    best_rejected: float = 0.0
    sure: Counter[str] = field(default_factory=Counter)  # votes of at least ``sure``
    disputed: int = 0  # frames whose face and index, or two corners, read two cards
    ranks: Counter[str] = field(default_factory=Counter)  # see VotingRules.index_over_pips
    splits: Counter[str] = field(default_factory=Counter)  # see VotingRules.rank_splits
    leans: Counter[str] = field(default_factory=Counter)  # see VotingRules.lean_votes
    indexed: Counter[str] = field(default_factory=Counter)  # see VotingRules.index_leans
    lean_deck: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    alone: Counter[str] = field(default_factory=Counter)  # see VotingRules.alone_frames
    lean_fit: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    """The best deck fit per card over the frames leaning to it on its index (see
    VotingRules.deck_fit_leans)."""
    pointed: set[str] = field(default_factory=set)  # what frames not read say, however weakly

    def index_lean(self, card: str, fit: float) -> None:
        """A frame leaning to ``card`` on its index (see VotingRules.index_leans and
        index_in_leans), its index fitting this deck's print at ``fit``."""
        self.indexed[card] += 1
        self.lean_deck[card] = max(self.lean_deck[card], fit)


class Voter:
    """Folds per-frame reads into reader events; feed frames in order, then ``finish``."""

    def __init__(self, reader_id: str, rules: VotingRules | None = None) -> None:
        self.reader_id = reader_id
        self.rules = rules or VotingRules()
        self._pass: _Pass | None = None

    def feed(self, frame: int, seen: FrameRead, captured: float | None = None) -> list[ReaderEvent]:
        """``captured``: when the frame was grabbed (monotonic), carried by the events."""
        p = self._pass
        if not seen.present:
            if p is None:
                return []
            p.absent_run += 1
            if p.absent_run >= self.rules.gap_frames:
                return self._close()
            return []
        if p is None:
            p = self._pass = _Pass(first_frame=frame, first_captured=captured)
        p.absent_run = 0
        p.present_frames += 1
        read = seen.read
        if read is None:
            p.reasons[seen.why or "card not whole in view"] += 1
            p.causes[seen.cause] += 1
            return []
        if read.code is None or read.confidence < self.rules.min_confidence:
            split = read.reason.startswith(CORNERS_DISAGREE)
            p.disputed += read.disputed or split
            if split:
                for code in read.corners:
                    if all(c[0] != code[0] for c in read.corners if c != code):
                        p.splits[code] += 1
            if read.dispute:
                face, index = read.dispute
                if face[1] == index[1] and face[0] != index[0]:
                    p.ranks[index] += 1
            says = [c for c in (read.code, read.face) if c] + list(read.corners)
            p.pointed.update(says)
            if len(says) >= 2 and len(set(says)) == 1 and not read.disputed:
                p.leans[says[0]] += 1
                if self.rules.index_in_leans and read.index == says[0]:
                    p.index_lean(read.index, read.deck_fit)
                if self.rules.deck_fit_leans and says[0] in (read.code, read.index):
                    # (A read with no code nor index has no index fit: deck_fit is unset.)
                    p.lean_fit[says[0]] = max(p.lean_fit[says[0]], read.deck_fit)
            elif (
                self.rules.index_leans
                and read.index
                and read.face_suit == read.index[1:]
                and set(says) <= {read.index}
                and not read.disputed
            ):
                p.leans[read.index] += 1
                p.index_lean(read.index, read.deck_fit)
                p.pointed.add(read.index)
                if self.rules.deck_fit_leans:
                    p.lean_fit[read.index] = max(p.lean_fit[read.index], read.deck_fit)
            elif read.index and set(says) <= {read.index} and not read.disputed:
                p.alone[read.index] += 1
                p.pointed.add(read.index)
            elif (
                self.rules.face_alone
                and read.face
                and says == [read.face]
                and not read.index
                and not read.disputed
            ):
                p.alone[read.face] += 1  # (the face, already in ``pointed``)
            p.reasons[read.reason or f"low confidence read {read.code}"] += 1
            p.causes[read.cause or BLURRED] += 1
            p.best_rejected = max(p.best_rejected, read.confidence)
            return []
        code = read.code
        if code != p.run_code:
            p.run_code, p.run_length, p.run_confidence, p.run_best = code, 0, 0.0, (0.0, frame)
            p.run_captured = captured
        p.run_length += 1
        p.run_confidence += read.confidence
        if read.confidence > p.run_best[0]:
            p.run_best = (read.confidence, frame)
        p.votes[code] += 1
        p.sure[code] += read.confidence >= self.rules.sure
        p.confidence_sum[code] += read.confidence
        p.deck[code] = max(p.deck.get(code, 0.0), read.deck_fit)
        if code not in p.best or read.confidence > p.best[code][0]:
            p.best[code] = (read.confidence, frame)
        if not p.emitted and p.votes[code] >= self.rules.settle_votes:
            event = self._decide(p)
            if isinstance(event, CardSeen):
                p.emitted = True
                p.emitted_card = event.card
                return [event]
        elif (
            p.emitted
            and code != p.emitted_card
            and p.run_length >= self.rules.settle_votes
            and p.deck[code] >= self.rules.deck_fit
        ):
            # The card that was reported has been swapped for another without
            # the region ever emptying: an unbroken run of confident reads of a
            # new card reports it (stray misreads never form such a run).
            p.emitted_card = code
            _conf, best_frame = p.run_best
            return [
                CardSeen(
                    reader_id=self.reader_id,
                    card=code,
                    confidence=round(p.run_confidence / p.run_length, 3),
                    frame=best_frame,
                    captured=p.run_captured,
                )
            ]
        return []

    def pending_since(self) -> float | None:
        """The capture time of the earliest frame a report still to come can start at
        (``None``: nothing seen so far is still to be reported).

        A pass not yet reported will be, from its first frame; a reported card lying
        in view can still be swapped for another, reported from the start of the
        current run of the other card's reads.
        """
        p = self._pass
        if p is None:
            return None
        if not p.emitted:
            return p.first_captured
        if p.run_code and p.run_code != p.emitted_card:
            return p.run_captured
        return None

    def finish(self) -> list[ReaderEvent]:
        """The stream ended: close a pass still open."""
        return self._close() if self._pass is not None else []

    def _close(self) -> list[ReaderEvent]:
        p = self._pass
        self._pass = None
        if p is None or p.emitted:
            return []
        if p.present_frames < self.rules.min_present_frames and not p.votes:
            log.debug("glimpse ignored", frame=p.first_frame, frames=p.present_frames)
            return []
        return [self._decide(p)]

    def _decide(self, p: _Pass) -> CardSeen | UnreadableCard:
        total = sum(p.votes.values())
        if total == 0 and self.rules.index_frames and len(p.pointed) == 1 and not p.disputed:
            # No confident frame: the card every frame that says anything leans to (see
            # VotingRules.index_frames), its confidence half the share of frames leaning.
            (code,) = p.pointed
            if (
                p.leans[code] >= self.rules.index_frames
                and p.indexed[code]
                and p.lean_deck[code] >= self.rules.deck_fit
            ):
                return CardSeen(
                    reader_id=self.reader_id,
                    card=code,
                    confidence=round(p.leans[code] / (2 * p.present_frames), 3),
                    frame=p.first_frame,
                    captured=p.first_captured,
                )
        if total == 0:
            why = p.reasons.most_common(1)[0][0] if p.reasons else "no read"
            return UnreadableCard(
                reader_id=self.reader_id,
                reason=f"no confident read in {p.present_frames} frames ({why})",
                confidence=round(p.best_rejected, 3),
                frame=p.first_frame,
                captured=p.first_captured,
                cause=_cause(p.causes),
            )
        code, n = p.votes.most_common(1)[0]
        share = n / total
        confidence, frame = p.best[code]
        # A pass disputed (face against index) in more frames than it is read is not this card:
        # a finger over the middle pip made a five a four in three frames of ancient_french,
        # the index saying otherwise in four more.
        clean = n == total and not p.disputed  # nothing in the pass against the card
        against = p.disputed - (p.ranks[code] if self.rules.index_over_pips else 0)
        split = p.splits[code] if self.rules.rank_splits else 0
        # Faces a pip short, with the card's index (see VotingRules.pips_lean).
        pips = p.ranks[code] if self.rules.index_over_pips and self.rules.pips_lean else 0
        enough = (
            (n >= self.rules.min_votes and against <= n)
            or (p.sure[code] >= self.rules.sure_votes and n == total and against <= split)
            or (
                (n >= self.rules.lean_votes or p.sure[code] >= self.rules.lean_sure_votes)
                and n + p.leans[code] + pips >= self.rules.lean_frames
                and n == total
                and p.disputed == pips
                and p.pointed <= {code}
            )
            or (
                self.rules.alone_frames > 0
                and n + p.leans[code] + p.alone[code] >= self.rules.alone_frames
                and clean
                and p.pointed <= {code}
            )
        )
        fit = max(p.deck[code], p.lean_fit[code])
        if enough and share >= self.rules.min_share and fit < self.rules.deck_fit:
            return UnreadableCard(
                reader_id=self.reader_id,
                reason=(
                    f"blurred in {p.present_frames} frames: {code}x{n}, but its index never "
                    f"sharp enough to tell this deck's print (best fit {fit:.3f}, "
                    f"{self.rules.deck_fit:.2f} needed)"
                ),
                confidence=round(share * confidence, 3),
                frame=frame,
                captured=p.first_captured,
                cause=BLURRED,
            )
        if enough and share >= self.rules.min_share:
            mean = p.confidence_sum[code] / n
            return CardSeen(
                reader_id=self.reader_id,
                card=code,
                confidence=round(mean * share, 3),
                frame=frame,
                captured=p.first_captured,
            )
        tally = ", ".join(f"{c}x{k}" for c, k in p.votes.most_common(4))
        why = "conflicting reads" if len(p.votes) > 1 else "too few confident reads"
        return UnreadableCard(
            reader_id=self.reader_id,
            reason=f"{why} in {p.present_frames} frames: {tally}",
            confidence=round(share * confidence, 3),
            frame=frame,
            captured=p.first_captured,
            # Confident reads of two cards: a person looks at the card, never a second try.
            cause=UNKNOWN if len(p.votes) > 1 else _cause(p.causes),
        )


def _cause(causes: Counter[str]) -> str:
    """A pass's cause from its frames' (see :class:`~shoe_reader.events.UnreadableCard`):
    unknown if frames clear enough to tell said so twice or more and as often as any other
    cause, else the commonest of covered, blurred and outside (blurred if none)."""
    unknown = causes[UNKNOWN]
    others = [(causes[c], c) for c in (COVERED, OUTSIDE, BLURRED) if causes[c]]
    if unknown >= 2 and all(unknown >= n for n, _c in others):
        return UNKNOWN
    return max(others)[1] if others else BLURRED
