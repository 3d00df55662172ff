"""A pure harness: run commands through decide/apply with a controlled clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from table_service.principals import Identity, Role
from table_service.table import commands as c
from table_service.table import policy
from table_service.table.config import TableConfig
from table_service.table.decide import Decision, Draft, decide
from table_service.table.state import ShoeState, TableRound, TableState, fold

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
RICH = 10**9  # a balance no test bet exhausts


@dataclass
class Harness:
    config: TableConfig = field(default_factory=lambda: TableConfig(table_id="t1"))
    now: datetime = T0
    state: TableState = field(init=False)
    log: list[Draft] = field(default_factory=list)
    bet_no: int = 0

    def __post_init__(self) -> None:
        self.state = TableState(self.config.table_id)
        self.run(c.OpenTable(self.config))

    def current_shoe(self) -> ShoeState:
        """The shoe in the table: a test that reads it expects one."""
        assert self.state.shoe is not None, "no shoe in the table"
        return self.state.shoe

    def current_round(self) -> TableRound:
        """The round in play (or the last one): a test that reads it expects one."""
        assert self.state.round is not None, "no round"
        return self.state.round

    def next_spot(self) -> str:
        """Where the round's next card goes: a test that reads it expects one to be owed."""
        spot = self.current_round().next_position()
        assert spot is not None, "no card is owed"
        return spot.value

    def run(self, command: c.Command, actor: str = "test") -> Decision:
        decision = decide(self.state, command, now=self.now, actor=actor)
        self.state = decision.state
        self.log.extend(decision.drafts)
        return decision

    def types(self, decision: Decision) -> list[str]:
        return [d.type for d in decision.drafts]

    def replayed(self) -> TableState:
        return fold(TableState(self.config.table_id), ((d.type, d.payload, 0) for d in self.log))

    def ready_shoe(self, indicator: str = "2S", burn: tuple[str, ...] = ("3H", "4H")) -> None:
        self.run(c.InsertShoe())
        self.run(c.CardScanned(indicator))
        for card in burn:
            self.run(c.CardScanned(card))
        assert self.state.shoe is not None and self.state.shoe.ready

    def bet(
        self, bet_type: str, stake: int, account: str = "a1", balances: dict[str, int] | None = None
    ) -> dict[str, Any]:
        self.bet_no += 1
        request = c.BetRequest(f"b{self.bet_no}", f"k{self.bet_no}", account, bet_type, stake)
        decision = self.run(c.PlaceBets((request,), balances or {account: 10**9}))
        line: dict[str, Any] = decision.answer["results"][0]
        return line

    def seat_bet(self, account: str, bet_type: str, stake: int, seat: int) -> dict[str, Any]:
        """One bet on a seat (blackjack, Xì Dách), the account rich enough: the answer line."""
        self.bet_no += 1
        request = c.BetRequest(
            f"b{self.bet_no}", f"k{self.bet_no}", account, bet_type, stake, seat=seat
        )
        line: dict[str, Any] = self.run(c.PlaceBets((request,), {account: RICH})).answer["results"][
            0
        ]
        return line

    def act(self, actor: str, action: str, account: str, **kw: Any) -> Decision:
        return self.run(c.Act(actor, action, account, balances={account: RICH}, **kw))

    def may_act(self, actor: str, action: str, account: str) -> policy.Verdict:
        """What the policy answers an operator that owns every account at this table."""
        who = Identity("op", Role.OPERATOR, None)
        command = c.Act(actor, action, account)
        owners = {a: who.operator_id for a in policy.accounts_named(command, self.state)}
        return policy.may(who, command, self.state, owners)

    def deal(self, *cards: str) -> Decision:
        decision = None
        for card in cards:
            decision = self.run(c.CardScanned(card))
        assert decision is not None
        return decision

    def tick(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    def events(self, event_type: str) -> list[dict[str, Any]]:
        return [d.payload for d in self.log if d.type == event_type]
