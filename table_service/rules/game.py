"""What a live table asks a game: one protocol every game implements, and its values.

The table service (``table_service.table``) runs the table procedure — shoe, betting
window, seats, timers, incidents, void and refund, money — and asks the game only what
the game alone knows. The interface lives here, under ``rules/``, so each game
implements it without importing upwards (python-chess's ``VARIANTS``, OpenSpiel's
``register_game``/``load_game``). A game is stateless: every method is a pure function
over the game's own frozen round state, so live play, crash recovery, an export replay
and the RTP report run the same code.

The round is a fold of *inputs* — cards in shoe order and :class:`Move`s — through
``apply``. At any point a round state answers :meth:`LiveGame.next` with one of:

- :class:`Spot`: the next card out of the shoe goes there (OpenSpiel's chance node,
  with the shoe choosing);
- :class:`Turn`: the round waits for a decision by one or several actors, with a clock
  (one shared timer per clock key);
- :class:`Complete`: the round has everything it needs; :meth:`LiveGame.settle` it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol

from table_service.rules.cards import Card
from table_service.rules.refusal import RulesRefusal as RulesRefusal  # every game's root

Audience = Literal["public", "dealer"]


# -- what the round waits for ---------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Spot:
    """Where the next card goes: ``code`` is what the dealer console shows (``P1``,
    ``S3H2`` = seat 3 hand 2, ``DEALER``, ``BANKER``); ``face_up`` False for a card the
    public must not see yet."""

    code: str
    seat: int | None = None
    hand: int | None = None
    face_up: bool = True

    @property
    def value(self) -> str:
        """The position's name (the form baccarat's ``Position`` enum gives)."""
        return self.code

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "card",
            "code": self.code,
            "seat": self.seat,
            "hand": self.hand,
            "face_up": self.face_up,
        }


@dataclass(frozen=True, slots=True)
class Turn:
    """The decision(s) awaited. ``actors`` answer independently (several bet-behind
    players on one follow offer); ``clock`` names the timer they share, so a new clock
    key means a new deadline and the same key means the same one."""

    actors: tuple[str, ...]
    seconds: float
    clock: str

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "decision",
            "actors": list(self.actors),
            "ms": round(self.seconds * 1000),  # integers only: this goes into the log
            "clock": self.clock,
        }


@dataclass(frozen=True, slots=True)
class Complete:
    def to_json(self) -> dict[str, Any]:
        return {"kind": "complete"}


Next = Spot | Turn | Complete


@dataclass(frozen=True, slots=True)
class Move:
    """A decision by ``actor`` (``seat:3``, ``behind:<bet id>``, ``banker``):
    ``action`` is the game's word for it (``hit``, ``double``, ``accept``, ``check``);
    ``hand`` counts from 1 where a seat has several hands; ``target`` is a further
    operand (the seat a Xì Dách banker checks)."""

    actor: str
    action: str
    hand: int | None = None
    target: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"actor": self.actor, "action": self.action}
        if self.hand is not None:
            data["hand"] = self.hand
        if self.target is not None:
            data["target"] = self.target
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Move:
        return cls(str(data["actor"]), str(data["action"]), data.get("hand"), data.get("target"))


Input = Card | Move


# -- bets and money -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Bet:
    """A bet as the table took it in the betting window (``seat`` for seat games)."""

    bet_id: str
    account: str
    bet_type: str
    stake: int
    seat: int | None = None


class BetLike(Protocol):
    """A bet's fields as a game reads them: a :class:`Bet`, or the table's request for
    one, so that a request's thousands of bets are checked without a record each
    (:meth:`LiveGame.check_bets`)."""

    @property
    def bet_id(self) -> str: ...

    @property
    def account(self) -> str: ...

    @property
    def bet_type(self) -> str: ...

    @property
    def stake(self) -> int: ...

    @property
    def seat(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class BettingContext:
    """What a game may look at to accept a bet: the game number in the shoe, who sits
    where (seat → account, players seated for this round), the bets already placed in
    this round (in order), and the table's limits."""

    game_number: int
    seats: Mapping[int, str] = field(default_factory=dict)
    placed: Sequence[Bet] = ()
    bank_seat: int | None = None
    """The seat that keeps a seated bank from the last round (Xì Dách ``room``)."""
    bank_from: int | None = None
    """The seat whose bank passes (it fell under the minimum bet or left)."""
    balances: Mapping[str, int] = field(default_factory=dict)
    """The seated players' balances before this request (who qualifies for the bank)."""
    joined: Mapping[int, int] = field(default_factory=dict)
    """Seat → the order in which its player came to the table (1 = first)."""
    bank_joined: int | None = None
    """When the last seated banker came to the table (the bank passes to who came after)."""


@dataclass(frozen=True, slots=True)
class RoundSetup:
    """What a round starts from once betting has closed."""

    round_id: str
    game_number: int
    bets: tuple[Bet, ...]
    seats: Mapping[int, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Stake:
    """One stake on the table. The first stake of a bet has ``stake_id == bet_id``; a
    stake the round adds (double, split, insurance, an accepted follow offer) has its own
    id and is debited from the bet's account when it appears."""

    stake_id: str
    bet_id: str
    bet_type: str
    part: str
    amount: int
    seat: int | None = None
    hand: int | None = None


class Line(NamedTuple):
    """The fate of one stake: ``returned`` is what goes back to the account (0 lost,
    ``stake`` a push or refund).

    A named tuple, not a frozen dataclass: a settlement makes one per stake, and a frozen
    dataclass's ``__init__`` sets each of its eleven fields through
    ``object.__setattr__`` (2.8 us a line: 100 lines were most of baccarat's settle of a
    100-bet round, 0.3 us as a tuple). Immutable and compared by value alike."""

    stake_id: str
    bet_id: str
    bet_type: str
    part: str
    stake: int
    result: str
    returned: int
    reason: str | None = None
    seat: int | None = None
    hand: int | None = None
    commission: int = 0
    """The house's share of the net win on this stake, already out of ``returned``
    (Xì Dách's profile ``commission``): recorded as its own figure on the settled line."""


@dataclass(frozen=True, slots=True)
class Settlement:
    """Every stake's line, the outcome recorded and streamed, the seats released by
    the rules after the round, and a seated bank's net result (None: the house banks)."""

    lines: tuple[Line, ...]
    outcome: Mapping[str, Any]
    released_seats: tuple[int, ...] = ()
    bank_net: int | None = None


# -- incidents ------------------------------------------------------------------------------
Effect = Literal[
    "void",  # the round is void at once: every stake refunded
    "end_shoe",  # the shoe is replaced (new shuffle, new burn)
    "void_on_count",  # void + new shoe when details.count >= 2 (exposed cards)
    "refund_insurance",  # insurance-type wagers refunded when raised
    "refund_insurance_on_resolve",  # ... when resolved (a missed scan, entered by hand)
    "forfeit_insurance",  # insurance-type wagers lost (not refunded) when raised (baccarat 8)
    "void_on_confirm",  # pauses the table; the supervisor's confirmation (resolving it, or
    # raising it as a supervisor) voids the round, refunds every stake, ends the shoe
]


@dataclass(frozen=True, slots=True)
class IncidentKind:
    """One incident a person may raise: whether it pauses the table, the procedure the
    supervisor follows (shown on the console), and what the table does about it."""

    kind: str
    blocking: bool
    procedure: str
    effects: frozenset[str] = frozenset()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "blocking": self.blocking,
            "procedure": self.procedure,
            "effects": sorted(self.effects),
        }


# -- the protocol ---------------------------------------------------------------------------
class LiveGame(Protocol):
    """One game at a live table. Stateless; ``rules`` is the game's parsed table rules
    (from :meth:`load_rules`), ``state`` its frozen round state."""

    name: str
    stray_card: Literal["carry", "incident"]
    """A card the rules owe no position: ``carry`` sets it aside as the next round's first
    card (baccarat rule 3), ``incident`` raises a blocking dealing incident."""
    on_restart: Literal["resume", "void"]
    """A round in play when the table service restarts: resumed, or voided and refunded
    with a new shoe (seed 000: server failure)."""
    incidents: Mapping[str, IncidentKind]
    shoe_burn: bool
    """A new shoe starts with the burn procedure (the first card shown, then
    :meth:`burn_count` more burnt); False: the first card out is dealt."""

    def load_rules(self, settings: Mapping[str, Any]) -> Any:
        """The game's rules from the table configuration (``decks``, ``paytable_toml``,
        ``game_rules``); raises :class:`RulesRefusal` (code ``bad_rules``)."""
        ...

    def bet_types(self, rules: Any) -> tuple[str, ...]: ...

    def check_bet(self, rules: Any, bet: Bet, context: BettingContext) -> None:
        """Raise :class:`RulesRefusal` when the rules refuse this bet now."""
        ...

    def check_bets(
        self, rules: Any, bets: Sequence[BetLike], context: BettingContext
    ) -> Sequence[RulesRefusal | None] | None:
        """The rules' refusal of each of a request's bets (None: taken), checked together,
        for a game whose check of a bet reads none of the request's other bets; the same
        answers as :meth:`check_bet` bet by bet. None: the table asks :meth:`check_bet`
        of each bet in turn, with the bets it accepted before it in ``context.placed``."""
        ...

    def seats(self, rules: Any) -> int:
        """Seats at the table (0: no seats, anyone bets on the round)."""
        ...

    def burn_count(self, rules: Any, first_card: Card) -> int:
        """Cards burnt after the first card of a new shoe (0: no burn)."""
        ...

    def new_round(self, rules: Any, setup: RoundSetup) -> Any: ...

    def next(self, state: Any) -> Next: ...

    def legal_actions(self, state: Any, actor: str) -> tuple[Move, ...]: ...

    def apply(self, state: Any, item: Input) -> Any:
        """The state after a card or a move; raises :class:`RulesRefusal`."""
        ...

    def timeout_action(self, state: Any, actor: str) -> Move:
        """The move the rules play for ``actor`` when its clock runs out."""
        ...

    def placed_stakes(self, state: Any) -> tuple[Stake, ...]: ...

    def settle(self, state: Any) -> Settlement: ...

    def view(self, state: Any, audience: Audience) -> dict[str, Any]: ...

    def settle_input(self, state: Any, setup: RoundSetup, moves: Sequence[Move]) -> dict[str, Any]:
        """The round as ``livetable settle <game>`` takes it (cards in shoe order, bets,
        decisions in order): anyone can recompute it offline."""
        ...

    def recompute(self, rules: Any, settle_input: Mapping[str, Any]) -> Settlement:
        """Settle a ``settle_input`` with the live code; the same lines as :meth:`settle`."""
        ...

    # -- what only some games do: declared here, neutral in :class:`GameBase` -------------------
    seated_bank: bool
    """The game may let a seated player hold the bank (Xì Dách ``room``): the table gives
    the bank's taker the seated players' balances and reviews the room after each round."""

    def opening_terms(self, rules: Any) -> dict[str, Any]:
        """What the table records and logs when it opens with these rules ({}: nothing)."""
        ...

    def decks_for(self, game_rules: Mapping[str, Any]) -> int | None:
        """The decks a table of these rules deals from when its file says none (None: 8)."""
        ...

    def betting_seconds_for(self, game_rules: Mapping[str, Any]) -> float | None:
        """The betting window when the table file gives none (None: the table's default)."""
        ...

    def check_seat(self, rules: Any, account: str, placed: Sequence[Bet]) -> None:
        """Raise :class:`RulesRefusal` when ``account`` may not take a seat while the round
        in play holds ``placed``."""
        ...

    def betting_complete(self, rules: Any, seats: Mapping[int, str], placed: Sequence[Bet]) -> bool:
        """Betting closes before its countdown ends (every seated player has bet)."""
        ...

    def bank_taker(
        self,
        rules: Any,
        seats: Mapping[int, str],
        bank_seat: int | None,
        bank_from: int | None,
        balances: Mapping[str, int],
        *,
        joined: Mapping[int, int] | None = None,
        bank_joined: int | None = None,
    ) -> tuple[int | None, dict[str, Any] | None]:
        """Who may take a seated bank next, or why the room is closed (``(None, None)``:
        nobody in particular, never closed)."""
        ...

    def fresh_deck_each_round(self, rules: Any) -> bool:
        """Every round ends its shoe (a one-deck game shuffles a fresh deck each round)."""
        ...

    def revealed(self, state: Any) -> tuple[tuple[int, str], ...]:
        """Cards dealt face down that the public may see now: (index in the round, code)."""
        ...

    def face_down_hands(self, state: Any) -> Mapping[int, int | None]:
        """Each card dealt face down (index in the round) and the hand it is in: a seat, or
        None for the banker's. A player sees its own hand (a hidden seat's punter its cards,
        a seated banker its hole card): the table shows such a card to that player's
        operator, and to no other, until :meth:`revealed` turns it ({}: none face down)."""
        ...

    def settled_early(self, state: Any) -> tuple[Line, ...]:
        """Lines the rules settle before the round ends (a Xì Dách check): paid at once."""
        ...

    def default_paytable_toml(self) -> str | None:
        """The paytable text a table records when its file gives none (None: no paytable)."""
        ...

    def theoretical_rtp(self, rules: Any) -> dict[str, float]:
        """Each bet type's theoretical return under these rules, for ``livetable report``
        ({}: the report shows none)."""
        ...

    def house_banker(self, rules: Any) -> bool:
        """The house banks and the dealer makes its published moves (Xì Dách's house bank)."""
        ...

    def layout(self, cards: Sequence[str]) -> dict[str, Any] | None:
        """The consoles' layout of a round from its cards in shoe order alone (baccarat:
        cards by position, each hand's total); None: the consoles show :meth:`view`."""
        ...

    def shoe_roads(self, outcomes: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
        """The shoe's scoreboards from its settled rounds' outcomes, in order (baccarat's
        roads; None: the game keeps none)."""
        ...


class GameBase:
    """The neutral answers to :class:`LiveGame`'s optional questions, for a game to extend
    (as python-chess's variants extend ``Board``) and override what its rules do: the
    table asks every game every question and never looks for a method at run time."""

    seated_bank: bool = False

    def opening_terms(self, rules: Any) -> dict[str, Any]:
        return {}

    def decks_for(self, game_rules: Mapping[str, Any]) -> int | None:
        return None

    def betting_seconds_for(self, game_rules: Mapping[str, Any]) -> float | None:
        return None

    def check_bets(
        self, rules: Any, bets: Sequence[BetLike], context: BettingContext
    ) -> Sequence[RulesRefusal | None] | None:
        return None

    def check_seat(self, rules: Any, account: str, placed: Sequence[Bet]) -> None:
        return None

    def betting_complete(self, rules: Any, seats: Mapping[int, str], placed: Sequence[Bet]) -> bool:
        return False

    def bank_taker(
        self,
        rules: Any,
        seats: Mapping[int, str],
        bank_seat: int | None,
        bank_from: int | None,
        balances: Mapping[str, int],
        *,
        joined: Mapping[int, int] | None = None,
        bank_joined: int | None = None,
    ) -> tuple[int | None, dict[str, Any] | None]:
        return None, None

    def fresh_deck_each_round(self, rules: Any) -> bool:
        return False

    def revealed(self, state: Any) -> tuple[tuple[int, str], ...]:
        return ()

    def face_down_hands(self, state: Any) -> Mapping[int, int | None]:
        return {}

    def settled_early(self, state: Any) -> tuple[Line, ...]:
        return ()

    def default_paytable_toml(self) -> str | None:
        return None

    def theoretical_rtp(self, rules: Any) -> dict[str, float]:
        return {}

    def house_banker(self, rules: Any) -> bool:
        return False

    def layout(self, cards: Sequence[str]) -> dict[str, Any] | None:
        return None

    def shoe_roads(self, outcomes: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
        return None


# -- the drive loop -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Replay:
    """A round folded from its inputs: the state, and the cards it could not take (in
    order, from the first refused one)."""

    state: Any
    leftover: tuple[Card, ...] = ()


def drive(
    game: LiveGame,
    state: Any,
    cards: Sequence[Card],
    moves: Sequence[tuple[int, Move]] = (),
) -> Replay:
    """Fold cards and moves into ``state``: each move is applied once ``after`` cards of
    the round have been dealt (``(after, move)``, in order). A card the round refuses
    (no spot owed) ends the fold: it and the cards after it are the leftover, and moves
    due after them are dropped (the table never records a move while cards are left
    over). A refused move raises: the recorded history is inconsistent."""
    pending = list(moves)
    index = 0
    for index, card in enumerate(cards):
        while pending and pending[0][0] <= index:
            state = game.apply(state, pending.pop(0)[1])
        if not isinstance(game.next(state), Spot):
            return Replay(state, tuple(cards[index:]))
        try:
            state = game.apply(state, card)
        except RulesRefusal:
            return Replay(state, tuple(cards[index:]))
    for _, move in pending:
        state = game.apply(state, move)
    return Replay(state, ())
