"""Schemathesis against the real server, for every role and for no token.

Every operation of the OpenAPI document gets generated requests (valid and invalid) with
each role's token; each answer must be no 5xx, a documented status, the documented
content type, and match the documented schema. Bounded for CI (``LIVETABLE_FUZZ_EXAMPLES``
per operation and role, default 11: seven roles of 25 took six minutes of a two-core CI run,
and the whole run must stay under ten; at 15 this module was 111 s of the suite's 813 s of
CPU); ``benchmarks/fuzz_api.py`` is the longer run. The requests are generated once per
database, by the first role to run, and sent again with every other role's token (the
``generated`` fixture says why that sends each role what it was sent before).

Then again on PostgreSQL when it is reachable (required under LIVETABLE_REQUIRE_POSTGRES),
where other things can break: a NUL byte in a text column, an integer past BIGINT, a
string past a column's length. Smaller there (``LIVETABLE_FUZZ_PG_EXAMPLES``, default 6,
for the roles that reach the database); the same seed, so a failure repeats.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Err
from schemathesis.generation.modes import GenerationMode
from schemathesis.schemas import APIOperation
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from table_service.table.config import TableConfig
from tests.hardening.hardening_helpers import principals, serve

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
EXAMPLES = int(os.environ.get("LIVETABLE_FUZZ_EXAMPLES", "11"))
PG_EXAMPLES = int(os.environ.get("LIVETABLE_FUZZ_PG_EXAMPLES", "6"))
WHO = ("none", "dealer", "bound_dealer", "supervisor", "regulator", "operator", "admin")
# No token, or a dealer bound elsewhere, is refused before the database: SQLite covers them.
PG_WHO = ("dealer", "supervisor", "regulator", "operator", "admin")

Server = tuple[str, dict[str, str]]


@contextlib.contextmanager
def _server(data: Path, database_url: str) -> Iterator[Server]:
    from table_service.config import Settings
    from table_service.runtime import Runtime

    settings = Settings(data_dir=data, database_url=database_url)
    runtime = Runtime.from_settings(settings, upgrade=True)
    configs = [TableConfig(table_id="bac-1"), TableConfig(table_id="bac-2")]
    tokens = principals(runtime, ["bac-1"])
    try:
        with serve(runtime, configs) as base:
            yield base, tokens
    finally:
        runtime.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("fuzz")
    with _server(data, f"sqlite:///{data / 'fuzz.db'}") as running:
        yield running


@pytest.fixture(scope="module")
def pg_server(
    tmp_path_factory: pytest.TempPathFactory, pg_schema: Callable[[], str]
) -> Iterator[Server]:
    with _server(tmp_path_factory.mktemp("fuzz-pg"), pg_schema()) as running:
        yield running


Cases = dict[str, list[schemathesis.Case[Any]]]
"""The requests generated for each operation (by label), in the order they were sent."""


def fuzz(
    base: str, headers: dict[str, str], examples: int, cases: Cases | None = None
) -> dict[str, int]:
    """Run every operation; returns requests sent per operation. Raises on a failure.

    With ``cases`` empty, each operation's requests are generated (and kept there); with
    ``cases`` filled by another role's run, those same requests are sent again."""
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    session = requests.Session()
    counts: dict[str, int] = {}
    made: Cases = {}
    for result in schema.get_all_operations():
        if isinstance(result, Err):  # an operation the schema describes wrongly: say which
            raise result.err()
        operation = result.ok()
        counts[operation.label] = 0
        if cases:
            _replay_operation(cases[operation.label], base, headers, session, counts)
        else:
            kept = made.setdefault(operation.label, [])
            _fuzz_operation(operation, base, headers, session, examples, counts, kept)
    session.close()
    if cases is not None and not cases:
        cases.update(made)  # only a whole run's: a failed one leaves the next to generate
    return counts


def _replay_operation(
    cases: list[schemathesis.Case[Any]],
    base: str,
    headers: dict[str, str],
    session: requests.Session,
    counts: dict[str, int],
) -> None:
    """Send an operation's generated requests with this role's token, with the same checks
    (a failure raises schemathesis's report, with the request to reproduce it)."""
    for case in cases:
        response = case.call(base_url=base, headers=headers, session=session, timeout=30)
        counts[case.operation.label] += 1
        case.validate_response(response, checks=CHECKS)


def _fuzz_operation(
    operation: APIOperation[Any, Any, Any, Any],
    base: str,
    headers: dict[str, str],
    session: requests.Session,
    examples: int,
    counts: dict[str, int],
    kept: list[schemathesis.Case[Any]],
) -> None:
    label = operation.label

    strategies = [operation.as_strategy(GenerationMode.POSITIVE)]
    # An operation with nothing to get wrong has no negative cases.
    with contextlib.suppress(Exception):
        strategies.append(operation.as_strategy(GenerationMode.NEGATIVE))

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=st.one_of(strategies))
    def run(case: schemathesis.Case[Any]) -> None:
        response = case.call(base_url=base, headers=headers, session=session, timeout=30)
        counts[label] += 1
        kept.append(case)
        case.validate_response(response, checks=CHECKS)

    run()


def _fuzz_as(
    server: Server, who: str, examples: int, database: str, cases: Cases | None = None
) -> None:
    base, tokens = server
    headers = {} if who == "none" else {"Authorization": f"Bearer {tokens[who]}"}
    started = time.perf_counter()
    counts = fuzz(base, headers, examples, cases)
    total = sum(counts.values())
    _record(database, who, counts, time.perf_counter() - started)
    print(f"schemathesis {who}: {total} requests over {len(counts)} operations, 0 failures")
    assert len(counts) >= 20  # every documented operation was exercised
    assert total >= len(counts)


def _record(database: str, who: str, counts: dict[str, int], seconds: float) -> None:
    """With ``LIVETABLE_FUZZ_COUNTS=DIR``, write this role's request counts there, one
    file per role: ``benchmarks/fuzz_api.py`` reads them, whatever pytest worker ran it
    (a worker's standard output never reaches the benchmark)."""
    folder = os.environ.get("LIVETABLE_FUZZ_COUNTS")
    if not folder:
        return
    record = {
        "database": database,
        "who": who,
        "requests": sum(counts.values()),
        "operations": len(counts),
        "seconds": round(seconds, 3),
        "per_operation": counts,
    }
    (Path(folder) / f"{database}-{who}.json").write_text(json.dumps(record, indent=1))


@pytest.fixture(scope="module")
def generated() -> dict[str, Cases] | None:
    """Each database's requests, generated by the first role to run and sent again with
    every other role's token (none when ``LIVETABLE_FUZZ_COUNTS`` is set: the benchmark's
    longer run generates for each role).

    The generation, not the requests, is what the fuzzing costs: four fifths of the
    module's CPU (the server answers in a thread of the same process). With the same seed
    and schema each role's run generated the same requests but where a value came from an
    earlier answer (32 of 498 differed between the dealer's and the admin's run, none
    between no token's and the admin's), so generating once sends the others what they
    were sent, within those few."""
    return None if os.environ.get("LIVETABLE_FUZZ_COUNTS") else {}


def _generated(kept: dict[str, Cases] | None, database: str) -> Cases | None:
    return None if kept is None else kept.setdefault(database, {})


@pytest.mark.parametrize("who", WHO)
def test_fuzzed_api_conforms_for_every_role(
    server: Server, who: str, generated: dict[str, Cases] | None
) -> None:
    _fuzz_as(server, who, EXAMPLES, "sqlite", _generated(generated, "sqlite"))


@pytest.mark.postgres
@pytest.mark.parametrize("who", PG_WHO)
def test_fuzzed_api_conforms_on_postgresql(
    pg_server: Server, who: str, generated: dict[str, Cases] | None
) -> None:
    _fuzz_as(pg_server, who, PG_EXAMPLES, "postgresql", _generated(generated, "postgresql"))
