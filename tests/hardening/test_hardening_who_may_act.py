"""Who may act (issue 30, hole 1): operator B cannot do anything to operator A's players.

On the code before the policy each of these answered 200 and was recorded: B made A's
Xì Dách punter hit and leave, A reported B's seat disconnected, B seated A's account and
any operator moved the house banker. Now each is a typed 403/404 problem, and the log is
unchanged after it. Runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from audit.store import EventStore
from table_service.app import build_app
from table_service.principals import add_principal
from table_service.table.config import TableConfig
from table_service.table.service import TableManager
from tests.hardening.hardening_helpers import AuditedClient
from tests.table.test_table_api import Clock

T = "xd-1"
CONFIG = TableConfig(
    table_id=T,
    game="xidach",
    profile="forced-draw",
    betting_seconds=600,
    limits={"min_stake": 100, "max_stake": 5000},
)
# counter-clockwise: seat 2 (bob) TS 7H = 17, seat 1 (alice) 9D 8S = 17, the house TC 7D
CARDS = ("TS", "9D", "TC", "7H", "8S", "7D")
WHO = {
    "opA": ("operator", None),
    "opB": ("operator", None),
    "dealer": ("dealer", T),
    "elsewhere": ("dealer", "xd-2"),
    "supervisor": ("supervisor", None),
}


class Api(AuditedClient):
    def refused(self, path: str, who: str, body: Any, status: int, code: str) -> None:
        before = self.log_size()
        response = self.call(path, who, body)
        assert response.status_code == status, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["code"] == code, response.text
        assert self.log_size() == before  # nothing recorded

    def act(
        self, who: str, actor: str, action: str, account: str | None, **kw: Any
    ) -> tuple[str, str, dict[str, Any]]:
        body: dict[str, Any] = {"actor": actor, "action": action, **kw}
        if account is not None:
            body["account"] = account
        return f"/tables/{T}/actions", who, body


@pytest.fixture
def api(make_runtime: Any) -> Iterator[Api]:
    runtime = make_runtime()
    with runtime.sessions.begin() as session:
        tokens = {
            name: add_principal(session, runtime.store, name, role, table_id=t, actor="test")
            for name, (role, t) in WHO.items()
        }
    # a still clock: no decision timer plays a move (and writes) while refusals are checked
    manager = TableManager(runtime, [CONFIG], clock=Clock())
    app = build_app(runtime, [CONFIG], manager=manager, with_readers=False)
    with TestClient(app) as client:
        yield Api(client, tokens, runtime)


def _dealt_round(api: Api) -> None:
    """alice (operator A) at seat 1 and bob (operator B) at seat 2, both staked, dealt."""
    api.ok("/accounts/alice/credit", "opA", {"amount": 10_000, "reference": "a"})
    api.ok("/accounts/bob/credit", "opB", {"amount": 10_000, "reference": "b"})
    api.ok(f"/tables/{T}/shoe", "supervisor")
    api.ok(f"/tables/{T}/seats", "opA", {"seat": 1, "account": "alice"})
    # B may not seat A's player (nor learn that the account exists)
    for account in ("alice", "nobody"):
        seat = {"seat": 3, "account": account}
        api.refused(f"/tables/{T}/seats", "opB", seat, 404, "unknown_account")
    api.ok(f"/tables/{T}/seats", "opB", {"seat": 2, "account": "bob"})
    api.ok(f"/tables/{T}/betting/open", "dealer")
    bet = {"key": "k", "account": "alice", "type": "main", "stake": 1000, "seat": 1}
    api.refused(f"/tables/{T}/bets", "opB", {"bets": [bet]}, 404, "unknown_account")
    api.ok(f"/tables/{T}/bets", "opA", {"bets": [bet]})
    bet = {"key": "k", "account": "bob", "type": "main", "stake": 1000, "seat": 2}
    api.ok(f"/tables/{T}/bets", "opB", {"bets": [bet]})
    api.ok(f"/tables/{T}/betting/close", "dealer")
    for card in CARDS:
        api.ok(f"/tables/{T}/cards", "supervisor", {"card": card})


def test_operator_b_cannot_play_seat_or_report_operator_a_players(api: Api) -> None:
    _dealt_round(api)
    # B makes A's punter hit, then leave: 403, nothing recorded
    api.refused(*api.act("opB", "seat:1", "hit", "alice"), 403, "foreign_player")
    api.refused(*api.act("opB", "seat:1", "leave", "alice"), 403, "foreign_player")
    api.refused(*api.act("opB", "seat:1", "hit", "bob"), 403, "foreign_player")
    api.refused(f"/tables/{T}/seats/1/leave", "opB", {}, 403, "foreign_player")
    # A reports B's seat disconnected (B's hand would then be auto-played)
    api.refused(f"/tables/{T}/seats/2/disconnected", "opA", None, 403, "foreign_player")
    # a seat's decision answered with another of one's own accounts
    api.refused(*api.act("opB", "seat:2", "stand", "alice"), 403, "wrong_player")
    # staff do not play a punter's hand
    api.refused(*api.act("dealer", "seat:2", "stand", "bob"), 403, "wrong_role")
    # the players' own operators play them
    api.ok(*api.act("opB", "seat:2", "stand", "bob"))
    api.ok(*api.act("opA", "seat:1", "stand", "alice"))
    # the house banker: never an operator; the table's dealer confirms the published move
    for who in ("opA", "opB"):
        api.refused(*api.act(who, "banker", "check", "banker", target="all"), 403, "house_banker")
    api.refused(*api.act("elsewhere", "banker", "check", None, target="all"), 403, "other_table")
    done = api.ok(*api.act("dealer", "banker", "check", None, target="all"))
    assert done["table"]["round"]["phase"] == "settled"
    with api.runtime.reads() as session:
        moves = [
            (e.actor, e.payload["actor"], e.payload["action"])
            for e in EventStore.read(session, table_id=T)
            if e.type == "action_taken"
        ]
    assert moves == [
        ("operator:opB", "seat:2", "stand"),
        ("operator:opA", "seat:1", "stand"),
        ("dealer:dealer", "banker", "check"),
    ]


def test_operator_b_cannot_release_or_report_a_seat_between_rounds(api: Api) -> None:
    api.ok("/accounts/alice/credit", "opA", {"amount": 10_000, "reference": "a"})
    api.ok(f"/tables/{T}/seats", "opA", {"seat": 1, "account": "alice"})
    api.refused(f"/tables/{T}/seats/1/leave", "opB", {}, 403, "foreign_player")
    api.refused(f"/tables/{T}/seats/1/disconnected", "opB", None, 403, "foreign_player")
    api.refused(f"/tables/{T}/seats/1/leave", "dealer", {}, 403, "wrong_role")
    api.ok(f"/tables/{T}/seats/1/leave", "opA", {})
