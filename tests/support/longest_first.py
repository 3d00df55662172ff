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

``HEAVY`` is the time each unit held a worker in a measured run (seconds: the clean-clone
CI run's ``--durations``, summed by unit); it only orders, so a stale figure costs balance,
never a result. Refresh it when a module grows a long test.
"""

from __future__ import annotations

from typing import Any

import pytest

DIST = "livetable_dist"
HEAVY: dict[str, float] = {  # the wall seconds each unit held a worker in a clean-clone CI run
    # (three workers on two cores, 7 December 2026, the 150 longest tests: waits and CPU alike)
    "tests/xidach/test_xidach_demo.py": 120,
    "tests/browser": 118,
    "tests/camera/test_camera_published.py": 75,
    "tests/camera/test_camera_table.py": 59,
    "tests/studio/test_studio_load.py": 57,
    "tests/docs/test_readme_examples.py": 49,
    "tests/demo/test_demo_run.py": 47,
    "tests/camera/test_camera_locate_hand.py": 34,
    "tests/crash/test_crash_kill9.py": 31,
    "tests/camera/test_camera_studio_passes.py": 28,
    "tests/demo/test_demo_blackjack.py": 27,
    "tests/camera/test_camera_video.py": 26,
    "tests/hardening/test_hardening_fuzz.py": 25,
    "tests/camera/test_camera_calibration.py": 25,
    "tests/demo/test_demo_xidach.py": 21,
    "tests/crash/test_crash_blackjack.py": 21,
    "tests/xidach/test_xidach_crash.py": 20,
    "tests/operations/test_fault_nats_outage.py": 19,
    "tests/cli/test_cli_first_run.py": 19,
    "tests/rules/test_rules_contract.py": 16,
    "tests/hardening/test_hardening_defects.py": 16,
    "tests/studio/test_studio_takeover.py": 14,
    "tests/camera/test_camera_heldout_twins.py": 14,
    "tests/camera/test_camera_faces.py": 12,
    "tests/xidach/test_xidach_cli.py": 11,
    "tests/table/test_table_stream_revocation.py": 11,
    "tests/audit/test_audit_proofs.py": 11,
    "tests/xidach/test_xidach_exact.py": 10,
    "tests/operations/test_metrics_live.py": 10,
    "tests/blackjack/test_blackjack_exact.py": 10,
    "tests/xidach/test_xidach_ledger.py": 9,
    "tests/packaging/test_typing.py": 9,
    "tests/demo/test_demo_human.py": 9,
    "tests/studio/test_studio_webhook.py": 8,
    "tests/hardening/test_hardening_matrix.py": 8,
    "tests/audit/test_audit_canonical_merkle.py": 8,
    "tests/table/test_table_stream_replay.py": 7,
    "tests/studio/test_studio_processes.py": 7,
    "tests/studio/test_studio_nats.py": 7,
    "tests/packaging/test_install_extras.py": 7,
    "tests/operations/test_fault_postgres_restart.py": 7,
    "tests/hardware_sim/test_hardware_sim_table_camera.py": 7,
    "tests/camera/test_camera_single_ended.py": 7,
    "tests/audit/test_audit_store.py": 7,
    "tests/xidach/test_xidach_table.py": 6,
    "tests/table/test_table_config_file.py": 6,
    "tests/operations/test_backup_restore.py": 6,
    "tests/blackjack/test_blackjack_cli.py": 6,
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
