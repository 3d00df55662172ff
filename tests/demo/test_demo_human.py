"""`livetable demo --supervisor human`: the supervisor bot leaves every incident to a
person at the supervisor console. The bots wait (however long it takes) and the log says
which incident is the person's and, for a missed card, which card at which index; a person
here is a second supervisor principal calling the same API the console calls."""

from __future__ import annotations

import asyncio
import io
import socket
from pathlib import Path

import httpx
from rich.console import Console
from sqlalchemy import select

from table_service.config import Settings
from table_service.demo.run import DemoOptions, run_demo
from table_service.models import IncidentRow
from table_service.principals import add_principal
from table_service.runtime import Runtime


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _person(base_url: str, token: str, done: asyncio.Event, resolved: list[str]) -> None:
    """Looks at the supervisor console's incident list and resolves what is open, a second
    or so after it appears, as a person would: a missed card entered at its index."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=f"{base_url}/api/v1", headers=headers) as api:
        while not done.is_set():
            await asyncio.sleep(0.3)
            try:
                tables = (await api.get("/console/overview")).json()
            except httpx.HTTPError:
                continue
            if not isinstance(tables, list):
                continue
            for table in tables:
                for incident in table.get("incidents", []):
                    await asyncio.sleep(1.0)  # reads the procedure, looks at the table
                    body: dict[str, object] = {"note": f"checked at the table: {incident['kind']}"}
                    details = incident.get("details") or {}
                    if incident["kind"] == "missed_scan" and details.get("card"):
                        body["entered"] = [{"card": details["card"], "index": details["index"]}]
                    path = f"/tables/{table['table_id']}/incidents/{incident['incident_id']}"
                    answer = await api.post(f"{path}/resolve", json=body)
                    if answer.status_code == 200:
                        resolved.append(incident["incident_id"])


async def test_a_person_resolves_the_incidents_and_the_bots_wait_for_them(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    runtime = Runtime.from_settings(Settings(data_dir=data), upgrade=True)
    with runtime.sessions.begin() as session:
        token = add_principal(session, runtime.store, "sup-person", "supervisor", actor="test")
    runtime.close()
    port = _free_port()
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None, force_terminal=False)
    options = DemoOptions(
        port=port,
        data_dir=data,
        rounds=4,  # mistakes at every round: each of baccarat's four kinds once
        seed=5,
        betting_seconds=1.0,
        mistakes=1.0,
        players=2,
        cut_after=20,
        pause=0.1,
        supervisor="human",
    )
    done = asyncio.Event()
    resolved: list[str] = []
    person = asyncio.create_task(_person(f"http://127.0.0.1:{port}", token, done, resolved))
    try:
        report = await run_demo(options, console)
    finally:
        done.set()
        await person
    text = out.getvalue()
    assert report.rounds_played == 4
    assert "incidents left to you at the supervisor console" in text
    assert {kind for _, kind in report.mistakes} >= {"missed_scan"}
    runtime = Runtime.from_settings(Settings(data_dir=data))
    try:
        with runtime.sessions() as session:
            incidents = list(session.scalars(select(IncidentRow)))
    finally:
        runtime.close()
    blocking = [i for i in incidents if i.blocking]
    assert blocking and all(i.status == "resolved" for i in incidents)
    # every incident that waited for a supervisor was resolved by the person, none by a bot
    assert {i.resolved_by for i in blocking} == {"supervisor:sup-person"}
    assert {i.incident_id for i in blocking} <= set(resolved)
    for incident in blocking:
        assert f"{incident.incident_id} {incident.kind} is yours" in text
    missed = next(i for i in blocking if i.kind == "missed_scan")
    assert "resolve it at the pit supervisor console (the card was" in text
    assert missed.resolution and "checked at the table" in missed.resolution
