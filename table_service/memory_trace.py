"""A process's memory over a long run: resident size and Python's allocations by where
they were made, sampled every N seconds (``LIVETABLE_MEMORY_TRACE_SECONDS``).

Why: a soak showed each ``serve`` process's resident memory climbing for 30 minutes, and
resident size alone cannot tell a structure that grows with every round (a leak) from the
allocator keeping freed pages (a plateau). ``tracemalloc`` can: each sample compares the
live Python allocations with those of the first sample (after the warm-up) and names the
source lines whose allocations grew most. Each sample is one JSON line in
``LIVETABLE_MEMORY_TRACE_FILE`` (when set) and a structlog ``memory_sample`` line.

Off by default: tracing every allocation costs CPU and memory of its own (about a third
more of each), so it is for a measurement, not for a studio's day.
"""

from __future__ import annotations

import gc
import json
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger(__name__)


def rss_mib() -> float | None:
    """This process's resident memory (VmRSS) in MiB; None off Linux."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class MemoryTrace:
    """A daemon thread sampling this process's memory every ``seconds``."""

    def __init__(
        self, seconds: float, *, out: Path | None = None, top: int = 15, frames: int = 6
    ) -> None:
        self.seconds = seconds
        self.out = out
        self.top = top
        self.frames = frames
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._baseline: tracemalloc.Snapshot | None = None
        self._started = time.monotonic()

    def start(self) -> MemoryTrace:
        if not tracemalloc.is_tracing():
            tracemalloc.start(self.frames)
        self._thread = threading.Thread(target=self._run, name="memory-trace", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(self.seconds):
            try:
                self.sample()
            except Exception:  # a measurement must never take the service down
                log.exception("memory_sample_failed")

    def _snapshot(self) -> tracemalloc.Snapshot:
        return tracemalloc.take_snapshot().filter_traces(
            (
                tracemalloc.Filter(False, tracemalloc.__file__),
                tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
                tracemalloc.Filter(False, "<frozen importlib._bootstrap_external>"),
            )
        )

    def sample(self) -> dict[str, Any]:
        """One sample: RSS, traced total, and the top growth since the first sample."""
        snapshot = self._snapshot()
        traced, peak = tracemalloc.get_traced_memory()
        record: dict[str, Any] = {
            "t": round(time.monotonic() - self._started, 1),
            "rss_mib": rss_mib(),
            "traced_mib": round(traced / 2**20, 2),
            "traced_peak_mib": round(peak / 2**20, 2),
            "gc_objects": len(gc.get_objects()),
        }
        if self._baseline is None:
            self._baseline = snapshot
            record["growth"] = []
        else:
            stats = snapshot.compare_to(self._baseline, "traceback")
            record["growth"] = [
                {
                    "kib": round(stat.size_diff / 1024, 1),
                    "count": stat.count_diff,
                    "where": [f"{f.filename}:{f.lineno}" for f in stat.traceback][-self.frames :],
                }
                for stat in stats[: self.top]
            ]
        if self.out is not None:
            with self.out.open("a") as file:
                file.write(json.dumps(record) + "\n")
        top = record["growth"][0] if record["growth"] else None
        log.info(
            "memory_sample",
            rss_mib=record["rss_mib"],
            traced_mib=record["traced_mib"],
            top_growth_kib=top["kib"] if top else None,
            top_growth_at=top["where"][-1] if top else None,
        )
        return record


def start_from_settings(seconds: float, out: Path | None) -> MemoryTrace | None:
    """The trace a command asked for in its settings (0 seconds: none)."""
    if seconds <= 0:
        return None
    return MemoryTrace(seconds, out=out).start()
