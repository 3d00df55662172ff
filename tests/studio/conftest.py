"""Make this folder's helpers importable under pytest's importlib mode."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def nats_binary() -> str:
    """The ``nats-server`` program, for tests that restart a private server (fail under
    LIVETABLE_REQUIRE_NATS=1 if it is missing, skip otherwise)."""
    found = shutil.which("nats-server") or (
        "/usr/sbin/nats-server" if Path("/usr/sbin/nats-server").exists() else None
    )
    if found is None:
        message = "nats-server not installed"
        if os.environ.get("LIVETABLE_REQUIRE_NATS", "") not in ("", "0", "false"):
            pytest.fail(message)
        pytest.skip(message)
    return found
