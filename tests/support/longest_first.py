"""Under xdist, each worker starts with its share of the longest tests.

``--dist worksteal`` hands each of the W workers a contiguous slice of the collection (the
first ``n // W`` tests to one, and so on), then lets an idle worker steal the tail of the
longest queue. A long module at the end of a slice therefore runs last, alone, while the
other worker has nothing left to steal: on two cores, the run ends one long test late.

So the collection is reordered into the same W slices xdist will cut (by count, as
``WorkStealingScheduling`` does), the heavy units dealt to the slices longest first onto the
lightest slice, each slice starting with its heavy units; the other units fill the slices
up to their counts. A unit is a module, or a whole package where a package-scoped fixture
is shared (``tests/browser``: one Chromium per worker), and a unit is split only where a
slice's count requires it. Order inside a unit is kept. Without xdist nothing moves.

``HEAVY`` is the CPU each unit cost in a measured run (seconds, ``--cpu-durations``); it
only orders, so a stale figure costs balance, never a result. Refresh it when a module
grows a long test.
"""

from __future__ import annotations

from typing import Any

import pytest

DIST = "livetable_dist"
HEAVY: dict[str, float] = {  # -n 0 --cpu-durations, 5 December 2026 (1,503 tests, 780 s;
    # the CLI, camera and README modules re-measured after their commands forked from the zygote)
    "tests/hardening/test_hardening_fuzz.py": 34,  # generated once, 6 December
    "tests/xidach/test_xidach_demo.py": 51,
    "tests/camera/test_camera_table.py": 50,
    "tests/camera/test_camera_published.py": 45,
    "tests/browser": 37,
    "tests/docs/test_readme_examples.py": 35,
    "tests/hardening/test_hardening_defects.py": 30,
    # modules that wait more than they compute (betting windows, timers): their CI wall time,
    # which is what they hold a worker for
    "tests/demo/test_demo_run.py": 25,
    "tests/demo/test_demo_blackjack.py": 23,
    "tests/demo/test_demo_xidach.py": 16,
    "tests/camera/test_camera_calibration.py": 20,
    "tests/crash/test_crash_kill9.py": 18,
    "tests/blackjack/test_blackjack_exact.py": 15,
    "tests/camera/test_camera_video.py": 15,
    "tests/crash/test_crash_blackjack.py": 15,
    "tests/operations/test_backup_restore.py": 13,
    "tests/xidach/test_xidach_exact.py": 13,
    "tests/camera/test_camera_recognize.py": 12,
    "tests/audit/test_audit_tampering.py": 11,
    "tests/studio/test_studio_load.py": 11,
    "tests/rules/test_rules_contract.py": 10,
    "tests/camera/test_camera_faces.py": 9,
    "tests/xidach/test_xidach_crash.py": 9,
    "tests/cli/test_cli_broken_files.py": 8,
    "tests/table/test_table_api.py": 8,
    "tests/cli/test_cli_first_run.py": 6,
    "tests/cli/test_cli_principal.py": 4,
}
PACKAGES = ("tests/browser",)
"""Packages whose tests share a package-scoped fixture: kept together, as one unit."""


def _unit(item: pytest.Item) -> str:
    path = item.nodeid.split("::", 1)[0]
    return next((p for p in PACKAGES if path.startswith(p + "/")), path)


def _slice_sizes(count: int, workers: int) -> list[int]:
    """The counts xdist's work-stealing scheduler sends the workers at the start."""
    sizes, left = [], count
    for i in range(workers):
        sizes.append(left // (workers - i))
        left -= sizes[-1]
    return sizes


def reorder(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(_unit(item), []).append(item)
    sizes = _slice_sizes(len(items), workers)
    slices: list[list[pytest.Item]] = [[] for _ in range(workers)]
    weight = [0.0] * workers
    heavy = sorted((u for u in units if u in HEAVY), key=lambda u: -HEAVY[u])
    for unit in heavy:  # longest first, onto the lightest slice that has room for it
        fits = [i for i in range(workers) if len(slices[i]) + len(units[unit]) <= sizes[i]]
        if not fits:
            continue  # left with the others: placed below, split where it must be
        chosen = min(fits, key=lambda i: weight[i])
        slices[chosen].extend(units.pop(unit))
        weight[chosen] += HEAVY[unit]
    rest = [item for unit in units.values() for item in unit]  # collection order
    for i in range(workers):
        room = sizes[i] - len(slices[i])
        slices[i].extend(rest[:room])
        del rest[:room]
    ordered = [item for chunk in slices for item in chunk]
    assert len(ordered) == len(items) and not rest
    return ordered


@pytest.hookimpl(optionalhook=True)  # an xdist hook, in the controller
def pytest_configure_node(node: Any) -> None:
    """Workers run with ``--dist no``: tell them how the controller will hand out tests."""
    node.workerinput[DIST] = node.config.getoption("dist", "no")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None or workerinput.get(DIST) != "worksteal":
        return
    workers = int(workerinput.get("workercount", 1))
    if workers > 1:
        items[:] = reorder(items, workers)
