"""One table served in-process (the whole app under Starlette's TestClient, its readers
real threads on real devices) with a token per role, and waits that wake on the table's
commits instead of sleeping.

A wait here returns as soon as the condition holds: it re-checks at every commit of
events to the log, and at least every 0.1 s for what is not an event (a shoe that took
LCK). Its bound is generous, two minutes, so that a loaded machine makes the test slower,
never red; a condition that never comes still fails, naming what was awaited.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from fastapi.testclient import TestClient

from audit.store import StoredEvent
from table_service.app import build_app
from table_service.principals import add_principal
from table_service.runtime import Runtime
from table_service.table.config import TableConfig
from tests.support.api_client import ApiClient

WAIT_SECONDS = 120.0
RECHECK_SECONDS = 0.1


class Commits:
    """Counts the events committed to the log and wakes whoever waits for a change."""

    def __init__(self, runtime: Runtime) -> None:
        self._changed = threading.Condition()
        self.events = 0
        runtime.store.subscribe(self._on_commit)

    def _on_commit(self, events: Sequence[StoredEvent]) -> None:
        with self._changed:
            self.events += len(events)
            self._changed.notify_all()

    def wait_for(
        self, predicate: Callable[[], Any], what: str = "", timeout: float = WAIT_SECONDS
    ) -> Any:
        """``predicate()`` once it is truthy; AssertionError naming ``what`` after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"not reached in {timeout:g} s: {what or predicate}"
            with self._changed:
                self._changed.wait(min(remaining, RECHECK_SECONDS))


class InProcessTable(ApiClient):
    def __init__(
        self, client: TestClient, tokens: dict[str, str], table_id: str, commits: Commits
    ) -> None:
        super().__init__(client, tokens)
        self.table_id = table_id
        self.commits = commits

    def table(self) -> dict[str, Any]:
        summary: dict[str, Any] = self.get(f"/tables/{self.table_id}", "dealer")
        return summary

    def wait_for(self, predicate: Callable[[], Any], what: str = "") -> Any:
        return self.commits.wait_for(predicate, what)

    def insert_shoe(self, deal: Callable[[], object], burn: int = 3) -> None:
        """Once the reader is online: a supervisor inserts a shoe and ``deal()`` deals its
        indicator and burn cards (``burn`` in all) until the table has the shoe ready."""
        self.wait_for(lambda: self.table()["reader_online"], "reader online")
        self.post(f"/tables/{self.table_id}/shoe", "supervisor")
        for _ in range(burn):
            deal()
        self.wait_for(lambda: self.table()["shoe"]["ready"], "indicator and burn recorded")

    def deal_round(
        self, deal: Callable[[], object], *, stop_on_incident: bool = False
    ) -> dict[str, Any]:
        """Deal a card (``deal()``) each time the round wants one and wait until the table
        recorded it, up to the settlement; the table then. With ``stop_on_incident`` the
        table as soon as an incident is open (a reader disagreement, say)."""
        table = self.table
        while table()["round"]["next_position"] is not None:
            before = len(table()["round"]["cards"])
            deal()

            def recorded(before: int = before) -> bool:
                now = table()
                return (
                    len(now["round"]["cards"]) > before
                    or now["round"]["phase"] != "dealing"
                    or (stop_on_incident and bool(now["incidents"]))
                )

            self.wait_for(recorded, f"card {before + 1} of the round recorded")
            if stop_on_incident and table()["incidents"]:
                return table()
        settled: dict[str, Any] = self.wait_for(
            lambda: (now := table())["round"]["phase"] == "settled" and now, "round settled"
        )
        return settled


@contextmanager
def in_process_table(
    runtime: Runtime,
    config: TableConfig,
    *,
    roles: Sequence[str] = ("dealer", "supervisor", "operator"),
    reader_options: dict[str, Any] | None = None,
) -> Iterator[InProcessTable]:
    """The app running ``config`` (its readers started) and a principal per role."""
    tokens = {}
    with runtime.sessions.begin() as session:
        for role in roles:
            tokens[role] = add_principal(session, runtime.store, role, role, actor="test")
    commits = Commits(runtime)
    app = build_app(runtime, [config], reader_options=reader_options)
    with TestClient(app) as client:
        yield InProcessTable(client, tokens, config.table_id, commits)
