"""A longer schemathesis run than CI's: every role and no token, more examples each.

Run: ``python benchmarks/fuzz_api.py [--examples 200]``. It runs the fuzzing test of
``tests/hardening`` (the same checks: no 5xx, documented status, content type and schema)
with more generated requests per operation, and prints the requests sent per role and in
all, with the request rate.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200, help="per operation and role")
    args = parser.parse_args()
    env = {**os.environ, "LIVETABLE_FUZZ_EXAMPLES": str(args.examples)}
    started = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-s",
            "-p",
            "no:cacheprovider",
            str(ROOT / "tests" / "hardening" / "test_hardening_fuzz.py"),
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("schemathesis ")]
    total = sum(int(m.group(1)) for ln in lines if (m := re.search(r": (\d+) requests", ln)))
    for line in lines:
        print(line)
    verdict = "passed" if proc.returncode == 0 else "FAILED"
    print(f"fuzzing {verdict}: {total} requests in {elapsed:.0f} s ({total / elapsed:.0f}/s)")
    if proc.returncode != 0:
        print(proc.stdout[-4000:])
        raise SystemExit(1)


if __name__ == "__main__":
    main()
