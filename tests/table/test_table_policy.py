"""The policy's table of who may act, on pure table states (no database, no HTTP).

What the HTTP regression tests and the authorization matrix try through the API, here
for the cases a Xì Dách house table does not have: a blackjack bet behind (its follow
offer is its own account's to answer), a seated banker (the bank's account, not any
seated account), the reader's and the service's own commands, and table bindings.
"""

from __future__ import annotations

from typing import Any

from table_service.principals import Identity, Internal, Role
from table_service.table import commands as c
from table_service.table import policy
from table_service.table.config import TableConfig
from tests.table.table_helpers import Harness

A = Identity("a", Role.OPERATOR, None)
B = Identity("b", Role.OPERATOR, None)
OWNERS = {"p1": A.operator_id, "p2": B.operator_id, "p9": A.operator_id}


def _verdict(h: Harness, who: Any, command: c.Command) -> str:
    owners = {a: OWNERS.get(a) for a in policy.accounts_named(command, h.state)}
    verdict = policy.may(who, command, h.state, owners)
    return "allowed" if isinstance(verdict, policy.Allowed) else verdict.code


def _blackjack_follow_offer() -> Harness:
    """p1 (operator A) at seat 1 doubles; p9 (also A's) bet behind seat 1 is offered to
    follow the double; p2 (operator B) sits at seat 2."""
    h = Harness(TableConfig(table_id="bj", game="blackjack"))
    h.run(c.InsertShoe())
    h.run(c.TakeSeat(1, "p1"))
    h.run(c.TakeSeat(2, "p2"))
    h.run(c.OpenBetting())
    h.seat_bet("p1", "main", 1000, 1)
    h.seat_bet("p2", "main", 1000, 2)
    h.seat_bet("p9", "behind", 500, 1)
    h.run(c.CloseBetting())
    h.deal("5S", "TD", "6C", "6H", "9D")  # seat 1: 5 6 = 11
    h.act("seat:1", "double", "p1")
    turn = h.current_round().turn
    assert turn is not None and turn.actors[0].startswith("behind:")
    return h


def test_a_bet_behind_is_answered_by_its_own_accounts_operator_only() -> None:
    h = _blackjack_follow_offer()
    turn = h.current_round().turn
    assert turn is not None  # the follow offer's turn
    behind = turn.actors[0]
    accept = c.Act(behind, "accept", "p9")
    assert _verdict(h, A, accept) == "allowed"
    assert _verdict(h, B, accept) == "foreign_player"  # B names A's account: still not B's
    assert _verdict(h, B, c.Act(behind, "accept", "p2")) == "foreign_player"
    assert _verdict(h, A, c.Act(behind, "accept", "p1")) == "wrong_player"  # A's, not the bet's
    assert _verdict(h, A, c.Act("behind:nope", "accept", "p9")) == "wrong_player"
    dealer = Identity("d", Role.DEALER, "bj")
    assert _verdict(h, dealer, accept) == "wrong_role"
    # a seat's insurance or double is its own player's operator's too
    assert _verdict(h, B, c.Act("seat:1", "stand", "p1")) == "foreign_player"
    assert _verdict(h, B, c.Act("seat:2", "stand", "p2")) == "allowed"


def test_a_seated_banker_is_its_bank_accounts_operator_and_nobody_elses() -> None:
    config = TableConfig(
        table_id="xd",
        game="xidach",
        profile="room",
        game_rules={"banker": "seated"},
        limits={"min_stake": 100, "max_stake": 2000},
        bet_limits={"bank": {"min_stake": 100, "max_stake": 10**9}},
    )
    h = Harness(config)
    h.run(c.InsertShoe())
    for seat, account in ((1, "p1"), (2, "p2"), (9, "p9")):
        h.run(c.TakeSeat(seat, account))
    h.run(c.OpenBetting())
    assert h.seat_bet("p9", "bank", 20_000, 9)["status"] == "placed"
    bank = next(b for b in h.current_round().bets.values() if b.bet_type == "bank")
    assert bank.account == "p9"
    stand = c.Act("banker", "stand", "p9")
    assert _verdict(h, A, stand) == "allowed"
    # before: any seated account answered for the banker; B names its own seated player
    assert _verdict(h, B, c.Act("banker", "stand", "p2")) == "foreign_player"
    assert _verdict(h, A, c.Act("banker", "stand", "p1")) == "wrong_player"
    assert _verdict(h, Identity("d", Role.DEALER, None), stand) == "wrong_role"


def test_the_house_banker_is_the_staffs_and_never_an_operators() -> None:
    h = Harness(TableConfig(table_id="xd", game="xidach"))
    h.run(c.InsertShoe())
    h.run(c.TakeSeat(1, "p1"))
    h.run(c.OpenBetting())
    h.seat_bet("p1", "main", 1000, 1)
    check = c.Act("banker", "check", None, target="all")
    assert _verdict(h, A, check) == "house_banker"
    assert _verdict(h, A, c.Act("banker", "check", "p1", target="all")) == "house_banker"
    assert _verdict(h, Identity("d", Role.DEALER, "xd"), check) == "allowed"
    assert _verdict(h, Identity("d", Role.DEALER, "other"), check) == "other_table"
    assert _verdict(h, Identity("s", Role.SUPERVISOR, None), check) == "allowed"
    assert _verdict(h, Identity("s", Role.SUPERVISOR, None), c.Act("banker", "check", "p1")) == (
        "wrong_player"
    )
    assert _verdict(h, Identity("r", Role.REGULATOR, None), check) == "wrong_role"


def test_the_service_itself_and_its_readers() -> None:
    h = Harness()
    reader = Internal.of("reader:t1-shoe")
    assert reader.kind == "reader" and Internal.of("system:timer").kind == "system"
    assert _verdict(h, reader, c.CardScanned("2S")) == "allowed"
    assert _verdict(h, reader, c.ReaderFault("offline")) == "allowed"
    command: c.Command
    for command in (c.OpenBetting(), c.VoidRound("x"), c.TakeSeat(1, "p1"), c.InsertShoe()):
        assert _verdict(h, reader, command) == "wrong_role"
        assert _verdict(h, Internal.of("system:timer"), command) == "allowed"
    # what no principal from outside may issue
    for command in (c.OpenTable(h.config), c.TurnTimeout("k"), c.ReviewRoom()):
        for role in Role:
            assert _verdict(h, Identity("x", role, None), command) == "wrong_role"


def test_every_command_has_a_row_and_every_role_a_route() -> None:
    assert set(policy.COMMANDS) == set(c.Command.__args__)
    for role in Role:
        assert any(rule is not None and role in rule.roles for rule in policy.ROUTES.values())


def test_money_and_account_reads_are_the_owners() -> None:
    assert policy.may_fund("operator:a", "p1", None) == policy.ALLOWED  # a new account
    assert policy.may_fund("operator:a", "p1", "operator:a") == policy.ALLOWED
    refused = policy.may_fund("operator:b", "p1", "operator:a")
    assert isinstance(refused, policy.Refusal) and (refused.status, refused.code) == (
        404,
        "unknown_account",
    )
    assert policy.may_read_account(None, "p1", "operator:a") == policy.ALLOWED  # staff
    assert policy.may_read_account("operator:b", "p1", "operator:a") == refused
    assert policy.may_read_account("operator:b", "p1", None) == refused
