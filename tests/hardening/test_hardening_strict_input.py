"""Strict input (issue 30, hole 3): a JSON member given twice, and text holding control,
format, bidirectional, private-use, unassigned or separator characters, are refused with
a typed 422 and change nothing.

Before: ``{"amount": 1, "amount": 1000000}`` credited 1,000,000 (the last value won, while
a gateway or signer reading the first saw 1), and a reference holding U+202E was stored,
so a console or an export showed a reference that was not the stored one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from table_service.api.types import REFUSED_CATEGORIES, refused_character
from table_service.app import build_app
from table_service.principals import add_principal
from table_service.table.config import TableConfig
from table_service.table.service import TableManager
from tests.hardening.hardening_helpers import AuditedClient

T = "bac-1"
ROLES = ("operator", "dealer", "supervisor", "admin")
# What a hostile client hides in text: each is refused wherever text is stored.
HIDDEN = {
    "U+202E right-to-left override": "\u202e",
    "U+202D left-to-right override": "\u202d",
    "U+2066 left-to-right isolate": "\u2066",
    "U+200F right-to-left mark": "\u200f",
    "U+061C Arabic letter mark": "\u061c",
    "U+200D zero width joiner": "\u200d",
    "U+200B zero width space": "\u200b",
    "U+FEFF byte order mark": "\ufeff",
    "U+E0041 tag latin A": "\U000e0041",
    "U+2028 line separator": "\u2028",
    "U+2029 paragraph separator": "\u2029",
    "U+0085 next line": "\x85",
    "U+001B escape": "\x1b",
    "U+E000 private use": "\ue000",
    "U+FDD0 noncharacter": "\ufdd0",
    "U+FFFF noncharacter": "\uffff",
}


class Api(AuditedClient):
    def raw(self, path: str, who: str, body: bytes, content_type: str = "application/json") -> Any:
        headers = {"Authorization": f"Bearer {self.tokens[who]}", "Content-Type": content_type}
        return self.client.post(f"/api/v1{path}", content=body, headers=headers)

    def post(self, path: str, who: str, body: Any) -> Any:
        return self.raw(path, who, json.dumps(body).encode())

    def refused(
        self, path: str, who: str, body: Any, code: str = "invalid_request"
    ) -> dict[str, Any]:
        before = self.log_size()
        response = (
            self.raw(path, who, body) if isinstance(body, bytes) else self.post(path, who, body)
        )
        assert response.status_code == 422, response.text
        assert response.headers["content-type"] == "application/problem+json"
        problem = response.json()
        assert problem["code"] == code, problem
        assert self.log_size() == before  # nothing recorded
        return dict(problem)


@pytest.fixture
def api(make_runtime: Any) -> Iterator[Api]:
    runtime = make_runtime()
    with runtime.sessions.begin() as session:
        tokens = {r: add_principal(session, runtime.store, r, r, actor="test") for r in ROLES}
    config = TableConfig(table_id=T, betting_seconds=600)
    app = build_app(runtime, [config], manager=TableManager(runtime, [config]), with_readers=False)
    with TestClient(app) as client:
        yield Api(client, tokens, runtime)


def _balance(api: Api, account: str) -> int | None:
    headers = {"Authorization": f"Bearer {api.tokens['operator']}"}
    answer = api.client.get(f"/api/v1/accounts/{account}", headers=headers)
    return int(answer.json()["balance"]) if answer.status_code == 200 else None


def test_a_member_given_twice_is_refused_and_credits_nothing(api: Api) -> None:
    twice = b'{"amount": 1, "amount": 1000000, "reference": "r1"}'
    problem = api.refused("/accounts/alice/credit", "operator", twice, "duplicate_key")
    assert "amount" in problem["detail"]
    assert _balance(api, "alice") is None  # no account, no money
    # in a nested object, in an array's object, with an escaped spelling of the same name
    for body in (
        b'{"bets": [{"key": "k", "account": "alice", "type": "player", "stake": 1,'
        b' "stake": 100000}]}',
        b'{"kind": "other", "details": {"t": 1, "t": 2}}',
        b'{"amount": 5, "reference": "r2", "\\u0061mount": 500}',
    ):
        path = "/tables/bac-1/bets" if b"bets" in body else "/tables/bac-1/incidents"
        who = "operator" if b"bets" in body else "dealer"
        if b"reference" in body:
            path, who = "/accounts/alice/credit", "operator"
        api.refused(path, who, body, "duplicate_key")
    # the same bytes under another content type are not taken as JSON either
    response = api.raw("/accounts/alice/credit", "operator", twice, "text/plain")
    assert 400 <= response.status_code < 500 and _balance(api, "alice") is None
    # a body with each member once is taken
    ok = api.post("/accounts/alice/credit", "operator", {"amount": 1, "reference": "r1"})
    assert ok.status_code == 200 and _balance(api, "alice") == 1


@pytest.mark.parametrize("name", sorted(HIDDEN))
def test_hidden_characters_are_refused_in_references_keys_names_and_notes(
    api: Api, name: str
) -> None:
    ch = HIDDEN[name]
    api.post("/accounts/alice/credit", "operator", {"amount": 5000, "reference": "seed"})
    api.refused("/accounts/alice/credit", "operator", {"amount": 1, "reference": f"r{ch}01"})
    account = quote(f"al{ch}ice", safe="")
    api.refused(f"/accounts/{account}/credit", "operator", {"amount": 1, "reference": "r"})
    detail = {"note": f"seen {ch} here"}
    api.refused(f"/tables/{T}/incidents", "dealer", {"kind": "other", "details": detail})
    api.refused(f"/tables/{T}/incidents", "dealer", {"kind": "other", "details": {ch: 1}})
    api.refused(f"/tables/{T}/shoe/change", "supervisor", {"reason": f"worn{ch}"})
    api.refused(f"/tables/{T}/round/void-requests", "supervisor", {"reason": f"x{ch}"})
    api.refused("/principals", "admin", {"name": f"op{ch}", "role": "operator"})
    api.post(f"/tables/{T}/shoe", "supervisor", None)
    for card in ("2S", "3H", "4H"):
        api.post(f"/tables/{T}/cards", "supervisor", {"card": card})
    api.post(f"/tables/{T}/betting/open", "dealer", None)
    bet = {"key": f"k{ch}", "account": "alice", "type": "player", "stake": 100}
    api.refused(f"/tables/{T}/bets", "operator", {"bets": [bet]})
    if ch not in "\u2028\u2029\x85":  # a note's own line breaks are newline and tab only
        opened = api.post(f"/tables/{T}/incidents", "dealer", {"kind": "other"}).json()
        incident = opened["table"]["incidents"][0]["incident_id"]
        note = {"note": f"checked{ch}"}
        api.refused(f"/tables/{T}/incidents/{incident}/resolve", "supervisor", note)
    assert _balance(api, "alice") == 5000


def test_letters_and_marks_of_every_script_and_a_notes_lines_are_taken(api: Api) -> None:
    for reference in ("Nguyễn-Văn-A", "Xì Dách 21", "ref 😀 ok", "e\u0301 combining"):
        answer = api.post(
            "/accounts/alice/credit", "operator", {"amount": 1, "reference": reference}
        )
        assert answer.status_code == 200, answer.text
    detail = {"note": "first line\nsecond\tline — Nhà cái"}
    answer = api.post(f"/tables/{T}/incidents", "dealer", {"kind": "other", "details": detail})
    assert answer.status_code == 200, answer.text


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=8))
def test_the_refused_characters_are_exactly_the_refused_categories(value: str) -> None:
    import unicodedata

    bad = [ch for ch in value if unicodedata.category(ch) in REFUSED_CATEGORIES]
    assert (refused_character(value) is None) == (not bad)


def test_a_message_on_a_stream_is_not_a_command(api: Api) -> None:
    """The streams take no commands: a client's message (a duplicate-key body included)
    changes nothing, and the stream goes on."""
    url = f"/api/v1/tables/{T}/stream?token={api.tokens['operator']}"
    before = api.log_size()
    with api.client.websocket_connect(url) as ws:
        first = ws.receive_json()
        ws.send_text('{"amount": 1, "amount": 1000000, "reference": "ws"}')
        ws.send_text(json.dumps({"command": "credit", "account": "alice", "amount": 10**6}))
        assert api.log_size() == before
        api.post("/accounts/alice/credit", "operator", {"amount": 7, "reference": "after"})
        assert first["seq"] >= 1
    assert _balance(api, "alice") == 7
