"""NATS goes away under a running studio and comes back: the tables never stop (NATS is
the fan-out, the log is the record), the outbox shows its lag in the metrics and catches
up from the log in order when NATS is back, and the operator's webhook feed delivers every
one of its messages, each once by its key.

The outage lasts ``LIVETABLE_FAULT_NATS_SECONDS`` (default 5 s, for CI; the minute of the
operations runbook: ``LIVETABLE_FAULT_NATS_SECONDS=60 pytest -n 0 THIS_FILE``). The NATS
server is the test's own (its port and store), stopped and started again.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from audit.store import EventStore
from tests.operations.ops_helpers import (
    Endpoint,
    ShoeStudio,
    freeze,
    money_after,
    scrape,
    value,
    wait_for,
)
from tests.studio.nats_helpers import NatsServer
from tests.support.crash_harness import livetable_command

pytestmark = pytest.mark.timeout(400)

OUTAGE_SECONDS = float(os.environ.get("LIVETABLE_FAULT_NATS_SECONDS", "5"))


def _round(studio: ShoeStudio, table_id: str, n: int) -> None:
    studio.ok("dealer", "POST", f"/tables/{table_id}/betting/open")
    bets = [
        {"key": f"r{n}-{i}", "account": "acct-1", "type": ("player", "banker")[i % 2],
         "stake": 100 + i}
        for i in range(6)
    ]  # fmt: skip
    studio.ok("operator", "POST", f"/tables/{table_id}/bets", json={"bets": bets})
    studio.ok("dealer", "POST", f"/tables/{table_id}/betting/close")
    assert studio.finish_round(table_id)["phase"] == "settled"


async def _subject_seqs(url: str, stream: str, table_id: str, count: int) -> list[int]:
    """The sequence numbers on the table's subject: read until ``count`` have come (a
    generous bound for each: a loaded machine delivers them slower), then one more is
    waited for a moment, so that one too many shows."""
    import nats

    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        sub = await js.subscribe(
            f"livetable.tables.{table_id}.>", stream=stream, ordered_consumer=True
        )
        seqs: list[int] = []
        while True:
            try:
                message = await sub.next_msg(timeout=60 if len(seqs) < count else 1)
            except Exception:
                return seqs
            assert message.headers is not None  # the studio's messages carry their seq
            seqs.append(int(message.headers["Livetable-Seq"]))
    finally:
        await nc.close()


def _studio(tmp_path: Path, nats: NatsServer, name: str) -> tuple[ShoeStudio, str]:
    """A one-table studio publishing to ``nats`` on a stream of its own (``name`` and a
    random suffix); the stream's name."""
    stream = f"{name}{uuid.uuid4().hex[:8].upper()}"
    settings = {"nats_url": nats.url, "nats_stream": stream}
    return ShoeStudio(tmp_path, "sqlite", ["n-1"], settings=settings), stream


def _start_feed(
    studio: ShoeStudio, nats: NatsServer, stream: str, endpoint: Endpoint, *options: str
) -> subprocess.Popen[bytes]:
    """The operator's webhook feed to ``endpoint``, as a studio runs it, with its state
    file and its log (``feed.log``) in the studio's folder; ``options`` added."""
    folder = studio.tmp
    secret = folder / "secret"
    secret.write_text("s3cret")
    return subprocess.Popen(
        [
            livetable_command(), "operator-feed",
            "--operator", "ops-operator", "--nats", nats.url, "--stream", stream,
            "--webhook", endpoint.url, "--secret-file", str(secret),
            "--state", str(folder / "feed-state.json"), "--max-backoff", "1", *options,
        ],
        env={**studio.env, "LIVETABLE_METRICS_ADDRESS": "127.0.0.1:0"},
        stdout=subprocess.DEVNULL,
        stderr=(folder / "feed.log").open("wb"),
    )  # fmt: skip


def _open_table(studio: ShoeStudio) -> None:
    """The player's account credited and the table's shoe ready for rounds."""
    credit = {"amount": 10**8, "reference": "seed"}
    studio.ok("operator", "POST", "/accounts/acct-1/credit", json=credit)
    studio.ready_shoe("n-1")


def _tear_down(
    feed: subprocess.Popen[bytes] | None, studio: ShoeStudio, endpoint: Endpoint, nats: NatsServer
) -> None:
    """The feed, the studio, the endpoint and NATS stopped, in that order; NATS resumed
    first if the test left it frozen (SIGSTOP), so that it can stop."""
    if feed is not None:
        feed.terminate()
        feed.wait(20)
    studio.close()
    endpoint.close()
    if nats.proc is not None and nats.proc.poll() is None:
        os.kill(nats.proc.pid, signal.SIGCONT)
    nats.stop()


def _held_feed(
    studio: ShoeStudio, nats: NatsServer, stream: str, endpoint: Endpoint
) -> subprocess.Popen[bytes]:
    """The studio served and its webhook feed started with an ack wait of ten minutes: a
    message whose acknowledgement NATS lost holds the feed that long unless it is sent
    again."""
    studio.server.start()
    return _start_feed(studio, nats, stream, endpoint, "--ack-wait", "600")


def _next_round_delivered(studio: ShoeStudio, endpoint: Endpoint, log: Path) -> None:
    """A second round dealt on NATS started again, and its messages delivered at once, each
    once (well within the ten-minute ack wait a lost acknowledgement would hold them)."""
    _round(studio, "n-1", 2)
    with studio.runtime.sessions() as session:
        events = EventStore.read(session, table_id="n-1")
    expected = Counter((e.type, e.seq) for e in events if e.type in ("bets_placed", "bets_settled"))
    assert len(expected) == 4
    wait_for(
        lambda: set(endpoint.accepted) >= set(expected),
        f"the feed delivered {endpoint.accepted}, not all of {sorted(expected)} "
        f"(the feed's log ends: {log.read_text(errors='replace')[-2000:]})",
        120,
    )
    assert Counter(endpoint.accepted) == expected, "a message delivered twice"


def test_nats_away_the_tables_go_on_and_everything_arrives_once_in_order(
    tmp_path: Path, nats_binary: str
) -> None:
    nats = NatsServer(nats_binary, tmp_path / "nats")
    nats.start()
    studio, stream = _studio(tmp_path, nats, "FAULT")
    endpoint = Endpoint()
    feed: subprocess.Popen[bytes] | None = None
    try:
        studio.server.start()
        feed = _start_feed(studio, nats, stream, endpoint)
        _open_table(studio)
        _round(studio, "n-1", 1)
        wait_for(
            lambda: len(endpoint.accepted) >= 2, "the feed delivered nothing before the outage"
        )

        nats.stop()
        started = time.monotonic()
        _round(studio, "n-1", 2)  # the table goes on: every command answered 200
        wait_for(
            lambda: value(scrape(studio.metrics_url), "livetable_nats_outbox_lag_events") > 0,
            "no outbox lag shown while NATS is away",
        )
        assert value(scrape(studio.metrics_url), "livetable_nats_connected") == 0
        _round(studio, "n-1", 3)
        time.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - started)))
        nats.start()  # the same server, port and store

        wait_for(
            lambda: value(scrape(studio.metrics_url), "livetable_nats_outbox_lag_events") == 0,
            "the outbox did not catch up",
            120,
        )
        with studio.runtime.sessions() as session:
            events = EventStore.read(session, table_id="n-1")
        expected: Counter[tuple[str, int]] = Counter()
        for event in events:
            if event.type in ("bets_placed", "bets_settled"):
                expected[(event.type, event.seq)] += 1
        wait_for(
            lambda: set(endpoint.accepted) >= set(expected),
            f"the feed did not deliver all of {len(expected)} messages",
            120,
        )
        time.sleep(1.0)  # a late duplicate would show now
        assert Counter(endpoint.accepted) == expected, "a message delivered twice or not at all"
        ordered = [seq for _, seq in endpoint.accepted]
        assert ordered == sorted(ordered), "the feed delivered out of order"
        seqs = asyncio.run(_subject_seqs(nats.url, stream, "n-1", len(events)))
        assert seqs == [e.seq for e in events], "the table's subject is not the log, in order"
    finally:
        _tear_down(feed, studio, endpoint, nats)
    money = money_after(studio.env, "n-1")
    assert len(money.bets) == 18 and all(b.status == "settled" for b in money.bets.values())


def test_an_acknowledgement_nats_lost_is_sent_again_once_it_is_back(
    tmp_path: Path, nats_binary: str
) -> None:
    """The webhook feed acknowledges a message once its endpoint has answered it, and its
    consumer hands out nothing more until then (one message in flight, to keep the order).
    An acknowledgement written into the connection as NATS died never reached it: every
    later message of the operator waited for the consumer's ack wait (a minute by default;
    a CI run of the outage test above waited 57 s). Here NATS is frozen while the endpoint
    answers the first round's last message, so the acknowledgement goes into a socket
    nobody reads; NATS is then killed and started again on its store, with an ack wait of
    ten minutes. The next round's messages come as soon as the feed has reconnected."""
    nats = NatsServer(nats_binary, tmp_path / "nats")
    nats.start()
    studio, stream = _studio(tmp_path, nats, "ACK")
    frozen = threading.Event()

    def freeze_on_the_second(seq: int, n: int) -> int:
        if n == 2 and not frozen.is_set():
            assert nats.proc is not None
            freeze(nats.proc.pid)  # answers nothing, its sockets stay open
            frozen.set()
        return 200

    endpoint = Endpoint(freeze_on_the_second)
    log = tmp_path / "feed.log"
    feed: subprocess.Popen[bytes] | None = None
    try:
        feed = _held_feed(studio, nats, stream, endpoint)
        _open_table(studio)
        _round(studio, "n-1", 1)
        wait_for(frozen.is_set, "the endpoint never saw the round's second message")
        try:
            wait_for(
                lambda: "webhook.ack_lost" in log.read_text(errors="replace"),
                "the feed never said its acknowledgement was lost",
                60,
            )
        except AssertionError as exc:  # what the feed did, for the next reader
            tail = log.read_text(errors="replace")[-3000:]
            alive = nats.proc is not None and nats.proc.poll() is None
            raise AssertionError(
                f"{exc}; NATS process alive: {alive}, the feed "
                f"{'running' if feed.poll() is None else f'exited {feed.returncode}'}; "
                f"the feed's log ends:\n{tail}"
            ) from None
        assert nats.proc is not None
        nats.proc.kill()  # the acknowledgement in its socket dies with it
        nats.proc.wait(10)
        nats.start()  # the same port and store: the consumer still holds the message
        _next_round_delivered(studio, endpoint, log)
    finally:
        _tear_down(feed, studio, endpoint, nats)


def test_an_acknowledgement_nats_confirmed_then_lost_with_its_store_is_sent_again(
    tmp_path: Path, nats_binary: str
) -> None:
    """NATS confirms an acknowledgement once it holds it, and writes the consumer's state to
    its store a moment later: a server killed in between comes back with the message still
    waiting for its acknowledgement, and the webhook's consumer (one message in flight)
    would hand out nothing more until the ack wait ran out (a CI run of the test above, 7
    December, found NATS's store one confirmed acknowledgement behind and waited its ten
    minutes). Made certain here: the consumer's state is copied while the endpoint holds
    the first message (delivered, not acknowledged), and put back after the server is
    killed at the second, whose first was acknowledged and confirmed. The feed sends its
    last confirmed acknowledgements again once it has reconnected, and the next round's
    messages come at once."""
    nats = NatsServer(nats_binary, tmp_path / "nats")
    nats.start()
    studio, stream = _studio(tmp_path, nats, "STORE")
    state = tmp_path / "nats" / "jetstream" / "$G" / "streams" / stream / "obs"
    state = state / "webhook-ops-operator" / "o.dat"
    seen: dict[str, bytes] = {}
    second, killed = threading.Event(), threading.Event()

    def copy_at_the_first_kill_at_the_second(seq: int, n: int) -> int:
        if n == 1:  # delivered, not acknowledged: its state as NATS writes it
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and "held" not in seen:
                now = state.read_bytes() if state.exists() else b""
                if now and now != seen.get("before"):
                    seen["held"] = now
                time.sleep(0.01)
        elif n == 2:  # the first acknowledged and confirmed: held until NATS is killed
            second.set()
            killed.wait(30)
        return 200

    log, feed = tmp_path / "feed.log", None
    endpoint = Endpoint(copy_at_the_first_kill_at_the_second)
    try:
        feed = _held_feed(studio, nats, stream, endpoint)
        wait_for(state.exists, "the feed's consumer never wrote its state")
        seen["before"] = state.read_bytes()
        _open_table(studio)
        _round(studio, "n-1", 1)
        wait_for(second.is_set, "the endpoint never saw the round's second message")
        assert "held" in seen, "NATS never wrote the first message's delivery to its store"
        assert nats.proc is not None
        nats.proc.kill()  # the first's acknowledgement confirmed, perhaps not yet written
        nats.proc.wait(10)
        state.write_bytes(seen["held"])  # ... and certainly not, now
        killed.set()
        nats.start()  # the same port, and the store one acknowledgement behind
        _next_round_delivered(studio, endpoint, log)
        assert "webhook.acks_resent" in log.read_text(errors="replace")
    finally:
        _tear_down(feed, studio, endpoint, nats)
