"""``--cpu-durations=N``: the N tests that cost the most CPU, next to their wall time.

``--durations`` shows wall time, which on a shared, loaded machine says more about the
neighbours than about the test (a test that sleeps looks as slow as one that computes).
CPU time is what the suite's two cores must find: a test's own (threads included) plus
its subprocesses', counted once they were waited for (the servers the crash harness forks
from its zygote, ``tests/support/serve_zygote.py``, count for the test they ended in). The
last line is the whole session's: collection, workers and the zygote's imports included.

Works under xdist: each worker sends its figures to the controller, which prints them.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Generator
from typing import Any

import pytest

KEY = "cpu_durations"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("terminal reporting").addoption(
        "--cpu-durations",
        type=int,
        default=0,
        metavar="N",
        help="show the N tests that used the most CPU (own and waited-for subprocesses)",
    )


def _cpu(forked: bool = True) -> tuple[float, float]:
    """(own, subprocesses): with ``forked``, the servers the crash harness forked count as
    this process's (they are its zygote's children, reported as each one ends)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    harness = sys.modules.get("tests.support.crash_harness")
    servers = harness.forked_servers_cpu() if forked and harness is not None else 0.0
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime + servers


_rows = pytest.StashKey[list[dict[str, Any]]]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_rows] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    if not item.config.getoption("cpu_durations"):
        yield
        return
    own, children = _cpu()
    started = time.monotonic()
    yield
    own_after, children_after = _cpu()
    item.config.stash[_rows].append(
        {
            "id": item.nodeid,
            "own": own_after - own,
            "children": children_after - children,
            "wall": time.monotonic() - started,
        }
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if not config.getoption("cpu_durations"):
        return
    harness = sys.modules.get("tests.support.crash_harness")
    if harness is not None:  # the zygote and its servers count once it is waited for
        harness.close_serve_zygote()
    own, children = _cpu(forked=False)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller prints
        workeroutput[KEY] = {"rows": config.stash[_rows], "total": own + children}
    else:
        config.stash[_rows].append({"total": own + children})


@pytest.hookimpl(optionalhook=True)  # an xdist hook
def pytest_testnodedown(node: Any, error: Any) -> None:
    output = getattr(node, "workeroutput", {}).get(KEY)
    if output is not None:
        rows = node.config.stash[_rows]
        rows.extend(output["rows"])
        rows.append({"total": output["total"]})


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    count = config.getoption("cpu_durations")
    if not count:
        return
    rows = [r for r in config.stash[_rows] if "id" in r]
    totals = [r["total"] for r in config.stash[_rows] if "total" in r]
    terminalreporter.write_sep("=", f"most CPU: {count} tests (own + waited-for subprocesses)")
    for row in sorted(rows, key=lambda r: -(r["own"] + r["children"]))[:count]:
        terminalreporter.write_line(
            f"{row['own'] + row['children']:7.2f}s cpu ({row['own']:.2f} own, "
            f"{row['children']:.2f} subprocesses) {row['wall']:7.2f}s wall  {row['id']}"
        )
    tests = sum(r["own"] + r["children"] for r in rows)
    terminalreporter.write_line(
        f"CPU: {tests:.1f}s in {len(rows)} tests; {sum(totals):.1f}s in all "
        f"({len(totals)} test process{'es' if len(totals) != 1 else ''}, collection, "
        "fixtures and forked servers included)"
    )
