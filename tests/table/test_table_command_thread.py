"""A table's commands on its own thread or, when it is idle, on the caller's: never two at
once, never one overtaking another, and never on the caller's thread (a shoe reader's,
whose port goes unread meanwhile) right after such a run found the database stalling."""

from __future__ import annotations

import threading

import pytest

from table_service.table import command_thread
from table_service.table.command_thread import CommandThread


def test_an_idle_table_runs_a_command_on_the_callers_thread() -> None:
    worker = CommandThread("t-idle")
    ran_on: list[str] = []
    assert worker.run_here(lambda: ran_on.append(threading.current_thread().name))
    assert ran_on == [threading.current_thread().name]


def test_a_command_waiting_for_the_thread_is_never_overtaken() -> None:
    worker = CommandThread("t-busy")
    release = threading.Event()
    started = threading.Event()
    order: list[str] = []

    def first() -> None:
        started.set()
        assert release.wait(30)
        order.append("first")

    running = worker.submit(first)
    assert started.wait(30)
    queued = worker.submit(order.append, "second")
    assert not worker.run_here(order.append, "here")  # one runs, one waits: refused
    release.set()
    running.result(30)
    queued.result(30)
    assert order == ["first", "second"]
    assert worker.run_here(order.append, "here")  # idle again
    assert order == ["first", "second", "here"]


def test_after_a_slow_run_here_commands_go_to_the_tables_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run here over SLOW_SECONDS (here: any run) turns runs here off for COOL_SECONDS,
    so a stalling database holds up no further card on a shoe reader's thread."""
    worker = CommandThread("t-slow")
    monkeypatch.setattr(command_thread, "SLOW_SECONDS", -1.0)  # every run counts as slow
    ran: list[str] = []
    assert worker.run_here(ran.append, "stalled")
    assert not worker.run_here(ran.append, "next")  # to the table's thread instead
    assert ran == ["stalled"]
    worker.submit(ran.append, "on the thread").result(30)
    assert ran == ["stalled", "on the thread"]
    monkeypatch.setattr(command_thread, "COOL_SECONDS", 0.0)
    assert not worker.run_here(ran.append, "still cooling")  # the 30 s set before stand
    worker._here_off_until = 0.0  # (the cool-off passed)
    monkeypatch.setattr(command_thread, "SLOW_SECONDS", 0.25)
    assert worker.run_here(ran.append, "again")
    assert ran[-1] == "again"
