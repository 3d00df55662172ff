"""Operator webhooks over real HTTP: in order, at least once, signed, through outages.

The studio's ``livetable operator-feed --webhook`` runs as a process of its own against a
private ``nats-server``; the operator's endpoint is a real HTTP server on a free port. The
endpoint answers 503 for a while, then goes away altogether; NATS restarts; the webhook
process is SIGKILLed mid-retry and started again; later the endpoint refuses one message
with a 422. Every one of the operator's messages reaches the endpoint, in log order, with a
valid signature; a repeat is only ever the same message again under the same
``Idempotency-Key``; the refused one is in the dead-letter file and delivery went on.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from audit.store import EventStore
from table_service.runtime import Runtime
from table_service.studio.webhook import judge, signature, verify_signature
from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.nats_stream import JetStreamPublisher
from table_service.table.service import TableService
from table_service.table.wallet import Transfer, transfer
from tests.studio.nats_helpers import NatsServer, _free_port
from tests.support.crash_harness import livetable_command

pytestmark = pytest.mark.timeout(300)

SECRET = b"op-w-secret-7f3a"
TABLE = "hook-1"
ROUND = ["9S", "8H", "KD", "KC"]  # naturals: the round settles on its fourth card


class Endpoint:
    """The operator's HTTP endpoint: records every request; can fail, refuse, go away."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.requests: list[dict[str, Any]] = []
        self.mode = "ok"  # "ok" | "503"
        self.refuse_next = 0  # answer this many next requests with 422
        self._server: ThreadingHTTPServer | None = None
        self._guard = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/livetable"

    def up(self) -> None:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with endpoint._guard:
                    if endpoint.refuse_next:
                        endpoint.refuse_next -= 1
                        status = 422
                    else:
                        status = 503 if endpoint.mode == "503" else 200
                    endpoint.requests.append(
                        {
                            "key": self.headers["Idempotency-Key"],
                            "attempt": int(self.headers["Livetable-Attempt"]),
                            "signed": verify_signature(
                                SECRET, self.headers["Livetable-Signature"], body
                            ),
                            "body": body,
                            "status": status,
                            "path": self.path,
                        }
                    )
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def down(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def answered(self, status: int) -> list[dict[str, Any]]:
        with self._guard:
            return [r for r in self.requests if r["status"] == status]


async def _round(table: TableService, n: int) -> None:
    await table.execute(c.OpenBetting(), actor="dealer:d")
    for op in ("op-w", "op-x"):
        bets = tuple(
            c.BetRequest(f"{op}-{n}-{i}-id", f"r{n}-{i}", f"acct-{op}", kind, 500)
            for i, kind in enumerate(["player", "banker"])
        )
        await table.execute(c.PlaceBets(bets, {}), actor=f"operator:{op}")
    await table.execute(c.CloseBetting("dealer"), actor="dealer:d")
    for card in ROUND:
        await table.execute(c.CardScanned(card), actor="supervisor:s")


def _wanted(runtime: Any) -> list[int]:
    """From the log: the seq of every bet event holding one of op-w's bets."""
    seqs, mine = [], set()
    with runtime.sessions() as session:
        for e in EventStore.read(session, table_id=TABLE):
            field = {"bets_placed": "bets", "bets_settled": "results"}.get(e.type)
            if field is None:
                continue
            if e.type == "bets_placed":
                mine |= {
                    b["bet_id"] for b in e.payload[field] if b["key"].startswith("operator:op-w|")
                }
            if any(b["bet_id"] in mine for b in e.payload[field]):
                seqs.append(e.seq)
    return seqs


async def _until(check: Any, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_webhook_delivers_in_order_through_outages_restarts_and_a_refusal(
    make_runtime: Callable[..., Runtime], tmp_path: Path, nats_binary: str
) -> None:
    runtime = make_runtime()
    server = NatsServer(nats_binary, tmp_path / "nats")
    server.start()
    endpoint = Endpoint()
    endpoint.up()
    table = TableService(runtime, TableConfig(table_id=TABLE, betting_seconds=600))
    publisher = JetStreamPublisher(runtime, server.url, stream="HOOKS")
    secret_file = tmp_path / "op-w.secret"
    secret_file.write_bytes(SECRET + b"\n")
    letters = tmp_path / "dead.jsonl"
    command = [
        livetable_command(), "operator-feed", "--operator", "op-w",
        "--nats", server.url, "--stream", "HOOKS", "--webhook", endpoint.url,
        "--secret-file", str(secret_file), "--state", str(tmp_path / "op-w.json"),
        "--dead-letters", str(letters), "--max-backoff", "0.4", "--ack-wait", "3",
    ]  # fmt: skip
    env = {**os.environ, "LIVETABLE_LOG_LEVEL": "WARNING"}
    procs: list[Any] = []

    async def hook() -> Any:
        proc = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env
        )
        procs.append(proc)
        return proc

    try:
        for op in ("op-w", "op-x"):
            funds = Transfer(f"acct-{op}", 100_000, f"seed-{op}", "credit")
            transfer(runtime, funds, actor=f"operator:{op}")
        await table.start(with_reader=False)
        await table.execute(c.InsertShoe(), actor="supervisor:s")
        for card in ["2S", "3H", "4H"]:
            await table.execute(c.CardScanned(card), actor="supervisor:s")
        await publisher.start()
        first = await hook()
        await _round(table, 1)
        await _until(lambda: len(endpoint.answered(200)) >= 2)

        endpoint.mode = "503"  # the operator's service is failing
        await _round(table, 2)
        await _until(lambda: len(endpoint.answered(503)) >= 3)
        endpoint.down()  # and then gone altogether
        server.stop()  # NATS restarts too
        await _round(table, 3)  # committed while NATS is down: the outbox waits
        server.start()
        await _round(table, 4)
        await publisher.wait_idle(timeout=60)
        await asyncio.sleep(1.0)  # retries against a closed port meanwhile
        first.kill()  # our own process dies mid-retry
        await first.wait()
        second = await hook()
        endpoint.mode = "ok"
        endpoint.up()
        wanted = _wanted(runtime)
        await _until(lambda: len({r["key"] for r in endpoint.answered(200)}) >= len(wanted))

        endpoint.refuse_next = 1  # round 5's first message is refused for good
        await _round(table, 5)
        wanted = _wanted(runtime)
        await _until(lambda: len({r["key"] for r in endpoint.answered(200)}) >= len(wanted) - 1)
        second.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(second.wait(), 30) == 0
        stderr = (await second.stderr.read()).decode()

        refused = endpoint.answered(422)
        assert len(refused) == 1
        refused_seq = json.loads(refused[0]["body"])["seq"]
        assert refused_seq == wanted[-2]  # round 5's bets_placed
        delivered = [int(r["key"]) for r in endpoint.answered(200)]
        unique = list(dict.fromkeys(delivered))
        assert unique == [s for s in wanted if s != refused_seq]  # all, in log order
        everything = [int(r["key"]) for r in endpoint.requests]
        assert everything == sorted(everything)  # never an earlier message after a later one
        by_key: dict[str, bytes] = {}
        for r in endpoint.requests:
            body = json.loads(r["body"])
            assert r["signed"], r
            assert r["path"] == "/hooks/livetable"
            assert int(r["key"]) == body["seq"] and body["operator"] == "op-w"
            assert body["table_id"] == TABLE
            bets = body.get("bets") or body.get("results") or ()
            assert bets and all(b["account"] == "acct-op-w" for b in bets)
            assert by_key.setdefault(r["key"], r["body"]) == r["body"]  # a repeat is identical
        assert max(r["attempt"] for r in endpoint.requests) >= 3  # retried with backoff
        entries = [json.loads(line) for line in letters.read_text().splitlines()]
        assert [(e["seq"], e["status"]) for e in entries] == [(refused_seq, 422)]
        assert json.loads(entries[0]["body"])["seq"] == refused_seq
        assert "webhook.refused" in stderr
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        endpoint.down()
        await publisher.stop()
        await table.stop()
        server.stop()


def test_signature_and_status_policy() -> None:
    body = b'{"seq":7}'
    now = int(time.time())
    header = signature(SECRET, now, body)
    assert verify_signature(SECRET, header, body)
    assert not verify_signature(SECRET, header, body + b" ")
    assert not verify_signature(b"other", header, body)
    assert not verify_signature(SECRET, signature(SECRET, now - 3600, body), body)  # replayed
    assert not verify_signature(SECRET, "garbage", body)
    assert [judge(s, "", None).kind for s in (200, 204, 400, 409, 422)] == [
        "delivered", "delivered", "refused", "refused", "refused",
    ]  # fmt: skip
    assert {judge(s, "", None).kind for s in (301, 401, 403, 404, 408, 429, 500, 503)} == {"retry"}
    assert judge(503, "", "7").retry_after == 7.0
