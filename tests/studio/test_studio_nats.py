"""The studio's JetStream stream and the operators' durable feeds, against real NATS.

A private ``nats-server`` (its own port and store) is restarted mid-stream; the feed of
one operator is stopped while rounds go on (an operator outage). Every event reaches its
table subject exactly once and in order; each operator gets exactly its own bets' results,
once, in order, nothing missing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats
import pytest

from audit.store import EventStore
from table_service.runtime import Runtime
from table_service.studio.operator_feed import FeedState, run_feed
from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.nats_stream import JetStreamPublisher, subject_token
from table_service.table.service import TableService
from table_service.table.wallet import Transfer, transfer
from tests.studio.nats_helpers import NatsServer
from tests.support.crash_harness import livetable_command

pytestmark = pytest.mark.timeout(300)

ROUND = ["9S", "8H", "KD", "KC"]  # naturals: the round settles on its fourth card


async def _round(table: TableService, n: int, operators: list[str]) -> None:
    await table.execute(c.OpenBetting(), actor="dealer:d")
    for op in operators:
        bets = tuple(
            c.BetRequest(f"{op}-{n}-{i}-id", f"r{n}-{i}", f"acct-{op}", kind, 500)
            for i, kind in enumerate(["player", "banker"])
        )
        await table.execute(c.PlaceBets(bets, {}), actor=f"operator:{op}")
    await table.execute(c.CloseBetting("dealer"), actor="dealer:d")
    for card in ROUND:
        await table.execute(c.CardScanned(card), actor="supervisor:s")


def _bet_events(runtime: Any, operator: str) -> list[tuple[int, str, tuple[str, ...]]]:
    """From the log: (seq, type, this operator's bet ids) of every bet event that has any."""
    wanted: list[tuple[int, str, tuple[str, ...]]] = []
    mine: set[str] = set()
    with runtime.sessions() as session:
        for e in EventStore.read(session, table_id="feed-1"):
            field = {"bets_placed": "bets", "bets_settled": "results"}.get(e.type)
            if field is None:
                continue
            if e.type == "bets_placed":
                mine |= {
                    b["bet_id"]
                    for b in e.payload[field]
                    if b["key"].startswith(f"operator:{operator}|")
                }
            ids = tuple(b["bet_id"] for b in e.payload[field] if b["bet_id"] in mine)
            if ids:
                wanted.append((e.seq, e.type, ids))
    return wanted


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_feeds_survive_a_nats_restart_and_an_operator_outage(
    make_runtime: Callable[..., Runtime], tmp_path: Path, nats_binary: str
) -> None:
    runtime = make_runtime()
    server = NatsServer(nats_binary, tmp_path / "nats")
    server.start()
    config = TableConfig(table_id="feed-1", betting_seconds=600)
    table = TableService(runtime, config)
    publisher = JetStreamPublisher(runtime, server.url, stream="STUDIO", root="st")
    got: dict[str, list[dict[str, Any]]] = {"op-a": [], "op.b": []}
    stops = {op: asyncio.Event() for op in got}
    states = {op: FeedState(tmp_path / f"{subject_token(op)}.json") for op in got}

    def feed(op: str) -> asyncio.Task[None]:
        stops[op] = asyncio.Event()
        return asyncio.create_task(
            run_feed(
                server.url,
                op,
                got[op].append,
                stream="STUDIO",
                root="st",
                state=states[op],
                stop=stops[op],
            )
        )

    try:
        for op in got:
            transfer(
                runtime,
                Transfer(f"acct-{op}", 100_000, f"seed-{op}", "credit"),
                actor=f"operator:{op}",
            )
        await table.start(with_reader=False)
        await table.execute(c.InsertShoe(), actor="supervisor:s")
        for card in ["2S", "3H", "4H"]:
            await table.execute(c.CardScanned(card), actor="supervisor:s")
        await publisher.start()
        feeds = {op: feed(op) for op in got}
        await _round(table, 1, list(got))
        await publisher.wait_idle()

        # op.b goes away; rounds go on; NATS itself restarts in the middle of them.
        stops["op.b"].set()
        await feeds["op.b"]
        await _round(table, 2, list(got))
        server.stop()
        await _round(table, 3, list(got))  # committed while NATS is down: the outbox waits
        server.start()
        await _round(table, 4, list(got))
        await publisher.wait_idle(timeout=60)
        feeds["op.b"] = feed("op.b")  # back: it gets what it missed, from its durable

        for op in got:
            want = _bet_events(runtime, op)
            for _ in range(400):
                if len(got[op]) >= len(want):
                    break
                await asyncio.sleep(0.05)
            have = [(m["seq"], m["type"], tuple(b["bet_id"] for b in m["bets"])) for m in got[op]]
            assert have == want, op  # all of its own, once each, in order; nothing else
            assert all(m["operator"] == op for m in got[op])
            assert {b["key"] for m in got[op] if m["type"] == "bets_placed" for b in m["bets"]} == {
                f"r{n}-{i}" for n in range(1, 5) for i in range(2)
            }

        # The table's own subject tree: every event once, in log order.
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        info = await js.stream_info("STUDIO")
        seqs = []
        for n in range(1, info.state.last_seq + 1):
            message = await js.get_msg("STUDIO", seq=n)
            assert message.subject is not None and message.data is not None  # a stored message
            if message.subject.startswith("st.tables.feed-1."):
                seqs.append(json.loads(message.data)["seq"])
        with runtime.sessions() as session:
            logged = [e.seq for e in EventStore.read(session, table_id="feed-1")]
        assert seqs == logged
        await nc.close()
    finally:
        for op in got:
            stops[op].set()
        await asyncio.sleep(0.6)
        await publisher.stop()
        await table.stop()
        server.stop()


async def _read_lines(proc: Any, count: int, seconds: float = 60) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    while len(lines) < count:
        raw = await asyncio.wait_for(proc.stdout.readline(), seconds)
        assert raw, "operator-feed ended"
        lines.append(json.loads(raw))
    return lines


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_operator_feed_command_resumes_after_it_was_stopped(
    make_runtime: Callable[..., Runtime], tmp_path: Path, nats_binary: str
) -> None:
    import os

    runtime = make_runtime()
    server = NatsServer(nats_binary, tmp_path / "nats")
    server.start()
    table = TableService(runtime, TableConfig(table_id="feed-1", betting_seconds=600))
    publisher = JetStreamPublisher(runtime, server.url, stream="CLIFEED")
    state = tmp_path / "op-c.json"
    command = [
        livetable_command(), "operator-feed", "--operator", "op-c",
        "--nats", server.url, "--stream", "CLIFEED", "--state", str(state),
    ]  # fmt: skip
    env = {**os.environ, "LIVETABLE_LOG_LEVEL": "WARNING"}
    procs = []

    async def feed() -> Any:
        proc = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=None, env=env
        )
        procs.append(proc)
        return proc

    try:
        transfer(runtime, Transfer("acct-op-c", 100_000, "seed", "credit"), actor="operator:op-c")
        await table.start(with_reader=False)
        await table.execute(c.InsertShoe(), actor="supervisor:s")
        for card in ["2S", "3H", "4H"]:
            await table.execute(c.CardScanned(card), actor="supervisor:s")
        await publisher.start()
        await _round(table, 1, ["op-c", "op-d"])
        first = await feed()
        lines = await _read_lines(first, 2)  # round 1: its bets placed, then settled
        first.terminate()
        await first.wait()
        await _round(table, 2, ["op-c", "op-d"])  # while the operator's client is down
        await publisher.wait_idle()
        second = await feed()
        lines += await _read_lines(second, 2)
        second.terminate()
        await second.wait()
        assert [m["type"] for m in lines] == ["bets_placed", "bets_settled"] * 2
        seqs = [m["seq"] for m in lines]
        assert seqs == sorted(set(seqs))  # in order, none twice
        assert {b["key"] for m in lines if m["type"] == "bets_placed" for b in m["bets"]} == {
            f"r{n}-{i}" for n in (1, 2) for i in range(2)
        }
        assert json.loads(state.read_text()) == {"feed-1": seqs[-1]}
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        await publisher.stop()
        await table.stop()
        server.stop()
