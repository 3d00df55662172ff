"""A card's commit, as the table writes it, next to one durable commit: the usual two
round trips against one (``EventStore.lock(one_trip=True)``), and the one-trip commit that
finds the head moved (another process appended first: refused, linked again, two trips),
or heard it move (``EventStore.follow``: one trip again).

Run: ``python benchmarks/card_commit.py [--db URL] [--cards N] [--busy SHARE]``. Each card
is what a dealt card writes: the log's lock (with a table's lease fence on PostgreSQL, its
lease renewed once a second in autocommit as a studio member renews it), one event
appended, its round row's update, the COMMIT. The kinds run in turn, card by card, paced
as cards are, each first in the turn as often as the others, so that each sees the same
load: a one-row commit (the yardstick), a card the usual way, a card in one trip at the
head this process knows; then a card in one trip after a second process (a second
runtime on the same database) appended, unheard, and one after it appended with this
process following the log's head (heard before the card: untimed). Another thread of
the process runs Python a share of the time (``--busy``), as a serve process's event loop
does: a round trip then costs what it costs there, the wait for the interpreter after it
included. On SQLite every card goes the usual way. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Callable

from scratch import commit_table, scratch_runtime
from sqlalchemy import MetaData, insert

from audit.store import EventStore, HeadMoved, NewEvent
from table_service.logs import configure_logging
from table_service.runtime import Runtime
from table_service.studio.lease import Leases

TABLE = "bench-card"
PACE = 0.005  # between two writes: a table's cards are milliseconds apart at the least


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def card(runtime: Runtime, n: int, *, one_trip: bool) -> None:
    """One card's transaction as the table writes it (see TableService)."""
    store = runtime.store
    with runtime.sessions.begin() as session:
        store.lock(session, tables=(TABLE,), one_trip=one_trip)

        def write() -> None:
            store.append(
                session, [NewEvent(TABLE, "card_dealt", "reader:bench", {"card": "AS", "n": n})],
                defer=True,
            )  # fmt: skip
            EventStore.defer(session, "UPDATE bench_round SET cards = %s WHERE id = 1", (str(n),))

        write()
        while True:
            try:
                store.commit(session)
                break
            except HeadMoved:  # linked again (see TableService)
                write()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--db", default=None, help="database URL, or sqlite (the default: in a temp dir)"
    )
    parser.add_argument("--cards", type=int, default=400, help="cards of each kind")
    parser.add_argument(
        "--busy",
        type=float,
        default=0.25,
        help="share of the time another thread of this process runs Python meanwhile, as a"
        " serve process's event loop and streams do (0: an idle process; 1: always)",
    )
    args = parser.parse_args()
    configure_logging(level="WARNING")
    with scratch_runtime(None if args.db in (None, "sqlite") else args.db) as runtime:
        other = Runtime.from_settings(runtime.settings)  # a second process's own pool
        stop = threading.Event()
        if args.busy > 0:
            threading.Thread(target=_busy, args=(stop, args.busy), daemon=True).start()
        try:
            run(runtime, other, args.cards)
        finally:
            stop.set()
            other.close()


def _busy(stop: threading.Event, share: float) -> None:
    """Python work ``share`` of the time, in 10 ms periods (as a serve process's event loop
    encoding events for its subscribers): a thread back from a round trip may wait for the
    interpreter, so each round trip costs what it costs in a process that is not idle."""
    event = {"seq": 1, "type": "card_dealt", "payload": {"card": "AS", "position": "player"}}
    while not stop.is_set():
        until = time.perf_counter() + 0.01 * share
        while time.perf_counter() < until:
            json.dumps(event)
        time.sleep(0.01 * (1 - share))


def run(runtime: Runtime, other: Runtime, cards: int) -> None:
    backend = runtime.engine.dialect.name
    with runtime.engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE bench_round (id INTEGER PRIMARY KEY, cards TEXT)")
        conn.exec_driver_sql("INSERT INTO bench_round (id, cards) VALUES (1, '')")
    meta = MetaData()
    yardstick = commit_table(meta, "bench_commit")
    meta.create_all(runtime.engine)
    leases = None
    renewed = time.monotonic()
    if backend == "postgresql":  # a studio member holding the table: the fence is checked
        leases = Leases(runtime.engine, "bench-node", None, ttl_ms=3_600_000)
        leases.fenced = frozenset({TABLE})
        leases.install_fence(runtime.sessions, runtime.store)
        assert leases.acquire(TABLE) is not None

    def one_row(n: int) -> None:
        with runtime.engine.begin() as conn:
            conn.execute(insert(yardstick).values(id=n, value=n))

    def moved(n: int, kind: str) -> None:
        with other.sessions.begin() as session:  # untimed: another process's append
            other.store.append(session, [NewEvent("elsewhere", "noted", "bench", {})])
        if kind == "one trip, head heard" and backend == "postgresql":  # untimed: until
            # the feed has told this process
            with other.sessions() as session:
                head = EventStore.head(session)
            heard = threading.Event()
            while runtime.store.known_head != head:
                heard.wait(0.0005)
        start = time.perf_counter()
        card(runtime, n, one_trip=True)
        times[kind].append(time.perf_counter() - start)

    kinds: dict[str, Callable[[int], None]] = {
        "one-row commit": one_row,
        "card, usual (two trips)": lambda n: card(runtime, n, one_trip=False),
        "card, one trip": lambda n: card(runtime, n, one_trip=True),
    }
    after = ["one trip, head moved", "one trip, head heard"]
    times: dict[str, list[float]] = {name: [] for name in [*kinds, *after]}
    card(runtime, 0, one_trip=False)  # this process knows the head from here
    order = list(kinds.items())
    for n in range(1, cards + 1):
        order = order[1:] + order[:1]  # each kind in each place of the turn alike
        for name, write in order:
            start = time.perf_counter()
            write(n)
            times[name].append(time.perf_counter() - start)
            time.sleep(PACE)
        if leases is not None and time.monotonic() > renewed + 1:
            leases.renew()  # once a second, in autocommit, as a studio member does (untimed)
            renewed = time.monotonic()
        for kind in after if n % 2 else after[::-1]:
            card(runtime, 0, one_trip=False)  # the head known again (untimed)
            if kind == "one trip, head heard":  # listening before the other one appends
                runtime.store.follow(runtime.engine)
                feed = runtime.store.feed
                assert feed is None or feed.wait_listening()
            else:
                runtime.store.unfollow()
            moved(cards + n, kind)
            time.sleep(PACE)
    runtime.store.unfollow()
    meta.drop_all(runtime.engine)
    floor = percentile(times["one-row commit"], 0.5)
    print(f"backend {backend}; {cards} of each, in turn; one trips {runtime.store.one_trips}")
    summary: dict[str, object] = {"backend": backend, "cards": cards}
    for name, values in times.items():
        p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
        print(
            f"  {name:26} p50 {p50 * 1000:7.2f} ms  p99 {p99 * 1000:7.2f} ms"
            f"  {p50 / floor:5.2f}x / {p99 / floor:5.2f}x the one-row commit's p50"
        )
        key = name.split(" (")[0].replace(",", "").replace(" ", "_").replace("-", "_")
        summary[f"{key}_p50_ms"] = round(p50 * 1000, 3)
        summary[f"{key}_p99_ms"] = round(p99 * 1000, 3)
    summary["one_trips"] = dict(runtime.store.one_trips)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
