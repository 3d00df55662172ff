"""``livetable demo`` prints the four pages and the tokens to sign in with, and they work
while the demo plays (the address, the page, the token, the view a page reads)."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

import httpx
import pytest
from rich.console import Console

from table_service.demo.run import DemoOptions, run_demo


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("LIVETABLE_DATABASE_URL", "LIVETABLE_DATA_DIR", "LIVETABLE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "data"


async def test_demo_prints_the_pages_and_working_tokens(clean_env: Path) -> None:
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None, force_terminal=False)
    stop = asyncio.Event()
    options = DemoOptions(
        port=0, data_dir=clean_env, rounds=0, seed=5, betting_seconds=1.0, mistakes=0.0, pause=0.1
    )
    demo = asyncio.create_task(run_demo(options, console, stop=stop))
    try:
        for _ in range(600):
            if "supervisor token" in out.getvalue() or demo.done():
                break
            await asyncio.sleep(0.05)
        text = out.getvalue()
        pages = dict(
            re.findall(
                r"(dealer console|pit supervisor|studio overlay|regulator recall)\s+(\S+)", text
            )
        )
        tokens = dict(re.findall(r"(dealer|supervisor) token\s+(\S+)", text))
        assert set(pages) == {
            "dealer console",
            "pit supervisor",
            "studio overlay",
            "regulator recall",
        }
        assert pages["studio overlay"].endswith("/overlay/bac-1")
        async with httpx.AsyncClient(timeout=10) as http:
            for url in pages.values():
                response = await http.get(url)
                assert response.status_code == 200 and "<html" in response.text
            base = pages["dealer console"].rsplit("/console/", 1)[0]
            for role, token in tokens.items():
                who = await http.get(
                    f"{base}/api/v1/whoami", headers={"Authorization": f"Bearer {token}"}
                )
                assert who.json()["role"] == role
            view = await http.get(
                f"{base}/api/v1/console/tables/bac-1/view",
                headers={"Authorization": f"Bearer {tokens['dealer']}"},
            )
            assert view.status_code == 200 and view.json()["game"] == "baccarat"
    finally:
        stop.set()
        await asyncio.wait_for(demo, 60)
