"""A longer schemathesis run than CI's: every role and no token, more examples each.

Run: ``python benchmarks/fuzz_api.py [--examples 200] [--pg-examples N]``. It runs the
fuzzing test of ``tests/hardening`` (the same checks: no 5xx, documented status, content
type and schema) with more generated requests per operation, and prints the requests sent
per role and in all, with the request rate.

The counts come from files each test writes (``LIVETABLE_FUZZ_COUNTS``), not from pytest's
output: the suite runs on pytest-xdist workers, whose standard output never reaches this
process (an earlier version printed "0 requests" after six minutes of fuzzing). A run in
which any role of SQLite (or, when it ran, of PostgreSQL) reports no requests fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TEST = ROOT / "tests" / "hardening" / "test_hardening_fuzz.py"
SQLITE_ROLES = ("none", "dealer", "bound_dealer", "supervisor", "regulator", "operator", "admin")
PG_ROLES = ("dealer", "supervisor", "regulator", "operator", "admin")


def _counts(folder: Path) -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text())
        found[(record["database"], record["who"])] = record
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200, help="per operation and role")
    parser.add_argument(
        "--pg-examples", type=int, default=None, help="on PostgreSQL (default: the test's, 6)"
    )
    parser.add_argument("--workers", default="2", help="pytest-xdist workers (0: none)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fuzz-counts-") as folder:
        env = {
            **os.environ,
            "LIVETABLE_FUZZ_EXAMPLES": str(args.examples),
            "LIVETABLE_FUZZ_COUNTS": folder,
        }
        if args.pg_examples is not None:
            env["LIVETABLE_FUZZ_PG_EXAMPLES"] = str(args.pg_examples)
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", args.workers,
             "-rs", f"--basetemp={folder}/tmp", str(TEST)],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )  # fmt: skip
        elapsed = time.perf_counter() - started
        counts = _counts(Path(folder))
    ran_pg = any(db == "postgresql" for db, _ in counts)
    expected = [("sqlite", who) for who in SQLITE_ROLES]
    expected += [("postgresql", who) for who in PG_ROLES] if ran_pg else []
    missing = [f"{db} {who}" for db, who in expected if counts.get((db, who), {}).get(
        "requests", 0) == 0]  # fmt: skip
    total = 0
    for (db, who), record in sorted(counts.items()):
        total += record["requests"]
        rate = record["requests"] / record["seconds"] if record["seconds"] else 0.0
        print(
            f"schemathesis {db} {who}: {record['requests']} requests over "
            f"{record['operations']} operations in {record['seconds']:.0f} s ({rate:.0f}/s)"
        )
    if not ran_pg:
        print("postgresql: not run (unreachable and not required); SQLite only")
    passed = proc.returncode == 0 and not missing and total > 0
    verdict = "passed" if passed else "FAILED"
    print(f"fuzzing {verdict}: {total} requests in {elapsed:.0f} s ({total / elapsed:.0f}/s)")
    if missing:
        print(f"no requests counted for: {', '.join(missing)}")
    if not passed:
        print(proc.stdout[-4000:])
        raise SystemExit(1)


if __name__ == "__main__":
    main()
