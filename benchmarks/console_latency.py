"""Card scanned on the virtual shoe -> the card shown on the dealer console and on the
studio overlay in Chromium, next to the stream-subscriber latency of the same cards.

Run: ``python benchmarks/console_latency.py [--rounds N]``. One process serves the whole
app (uvicorn, SQLite in a scratch folder, a framed virtual shoe on a pseudo-terminal read
by the real serial reader). Debian's Chromium (``/usr/bin/chromium``) opens the dealer
console (signed in) and the public overlay; in each page a DOM observer timestamps the
moment the card's element appears at its position. A WebSocket client on the public
stream timestamps the same ``card_dealt`` events. For every card: the time from the shoe
releasing it to (a) the subscriber, (b) the dealer console and (c) the overlay showing it.
The floor is the subscriber's latency in the same run: a page cannot show a card before
the stream delivers it, so the pages' own cost is their ratio to it. (The subscriber is a
Python thread in the server's own process, so it shares the interpreter with the server;
the pages run in Chromium's processes.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn
import websockets

from hardware_sim.virtual_shoe import VirtualShoe
from table_service.app import build_app
from table_service.config import Settings
from table_service.logs import configure_logging
from table_service.principals import add_principal
from table_service.runtime import Runtime
from table_service.table.config import ShoeConfig, TableConfig

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TABLE = "bench-1"

# A DOM observer: the first moment each (position, card) element is in the page, as
# wall-clock milliseconds (performance.timeOrigin + now, same clock as time.time()).
OBSERVER = """
window.__seen = {};
new MutationObserver(() => {
  const at = performance.timeOrigin + performance.now();
  for (const node of document.querySelectorAll('[data-position] [data-card]')) {
    const key = node.closest('[data-position]').dataset.position + ':' + node.dataset.card;
    if (!(key in window.__seen)) window.__seen[key] = at;
  }
}).observe(document, {subtree: true, childList: true, attributes: true});
"""


class _Server(uvicorn.Server):
    def install_signal_handlers(self) -> None:
        pass


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=12, help="rounds to deal (about 5 cards each)"
    )
    args = parser.parse_args()
    configure_logging("console", "ERROR")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("playwright is not installed: pip install -e '.[test]'", file=sys.stderr)
        return 2
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} not found: apt-get install chromium", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp) / "data", database_url=f"sqlite:///{tmp}/b.db")
        runtime = Runtime.from_settings(settings, upgrade=True)
        with runtime.sessions.begin() as session:
            tokens = {
                role: add_principal(session, runtime.store, f"bench-{role}", role, actor="bench")
                for role in ("dealer", "supervisor")
            }
        shoe = VirtualShoe("framed", decks=8, seed=1, heartbeat=0.5)
        shoe.start()
        config = TableConfig(
            table_id=TABLE, betting_seconds=60, shoe=ShoeConfig(port=shoe.device_path)
        )
        app = build_app(runtime, [config])
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        server = _Server(uvicorn.Config(app, log_level="error", access_log=False, log_config=None))
        thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
        thread.start()
        while not server.started:
            time.sleep(0.02)
        http = httpx.Client(base_url=base, timeout=15)
        try:
            return _run(args, sync_playwright, http, base, shoe, tokens)
        finally:
            http.close()
            server.should_exit = True
            thread.join(15)
            shoe.stop()
            runtime.close()


def _call(http: httpx.Client, token: str, method: str, path: str, body: Any = None) -> Any:
    response = http.request(
        method, f"/api/v1{path}", json=body, headers={"Authorization": f"Bearer {token}"}
    )
    response.raise_for_status()
    return response.json()


def _run(
    args: Any,
    sync_playwright: Any,
    http: httpx.Client,
    base: str,
    shoe: VirtualShoe,
    tokens: dict[str, str],
) -> int:
    sup = tokens["supervisor"]

    def summary() -> dict[str, Any]:
        answer: dict[str, Any] = _call(http, sup, "GET", f"/tables/{TABLE}")
        return answer

    def wait(predicate: Any, timeout: float = 15.0) -> Any:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            value = predicate()
            if value:
                return value
            time.sleep(0.005)
        raise TimeoutError("condition not reached")

    wait(lambda: summary()["reader_online"])
    _call(http, sup, "POST", f"/tables/{TABLE}/shoe")
    while not (summary()["shoe"] or {}).get("ready"):
        shoe.deal()
        time.sleep(0.05)

    # the stream subscriber, in its own thread and loop
    received: dict[str, float] = {}
    stop = threading.Event()
    ws_url = base.replace("http://", "ws://") + f"/api/v1/public/tables/{TABLE}/stream"
    start_seq = summary()["last_seq"]

    async def subscribe() -> None:
        async with websockets.connect(f"{ws_url}?after_seq={start_seq}") as ws:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    message = json.loads(await asyncio.wait_for(ws.recv(), 0.2))
                    if message["type"] == "card_dealt":
                        d = message["data"]
                        received[f"{message['round_id']}:{d['position']}"] = time.time() * 1000

    subscriber = threading.Thread(target=lambda: asyncio.run(subscribe()))
    subscriber.start()

    samples: dict[str, list[float]] = {"subscriber": [], "dealer console": [], "overlay": []}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        dealer_ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        dealer_ctx.add_init_script(
            f"sessionStorage.setItem('lt.token', {json.dumps(tokens['dealer'])});"
            f"sessionStorage.setItem('lt.dealer.table', {json.dumps(TABLE)});"
        )
        dealer = dealer_ctx.new_page()
        overlay = browser.new_context(viewport={"width": 1920, "height": 1080}).new_page()
        for page in (dealer, overlay):
            page.add_init_script(OBSERVER)
        dealer.goto(f"{base}/console/dealer")
        overlay.goto(f"{base}/overlay/{TABLE}")
        for page in (dealer, overlay):
            page.wait_for_selector("[data-status=live]")
        for _ in range(args.rounds):
            _call(http, sup, "POST", f"/tables/{TABLE}/betting/open")
            _call(http, sup, "POST", f"/tables/{TABLE}/betting/close")
            wait(lambda: not shoe.locked)
            round_id = summary()["round"]["round_id"]
            while (nxt := summary()["round"]["next_position"]) is not None:
                for page in (dealer, overlay):
                    page.evaluate("window.__seen = {}")
                released = time.time() * 1000
                card = shoe.deal()
                if card == "CUT":  # the cut card is no card of the round
                    continue
                key = f"{nxt}:{card}"
                wait(lambda k=f"{round_id}:{nxt}": k in received)
                seen = {
                    name: wait(lambda p=page, k=key: p.evaluate(f"window.__seen[{json.dumps(k)}]"))
                    for name, page in (("dealer console", dealer), ("overlay", overlay))
                }
                samples["subscriber"].append(received[f"{round_id}:{nxt}"] - released)
                for name, at in seen.items():
                    samples[name].append(at - released)
            wait(lambda: summary()["round"]["phase"] == "settled")
        browser.close()
    stop.set()
    subscriber.join(5)

    floor = statistics.median(samples["subscriber"])
    print(f"console latency: {len(samples['subscriber'])} cards over {args.rounds} rounds")
    print(f"{'path':<16} {'p50 ms':>8} {'p99 ms':>8} {'p50 / subscriber p50':>22}")
    for name, values in samples.items():
        p50, p99 = statistics.median(values), _pct(values, 0.99)
        print(f"{name:<16} {p50:8.1f} {p99:8.1f} {p50 / floor:22.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
