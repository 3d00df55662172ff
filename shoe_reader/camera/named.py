"""Frame sources known by name: ``source = "sim:NAME"`` in a table file.

The simulator's synthetic cameras (``hardware_sim.camera.live``) enter themselves here as
they start and leave as they stop, so the reader finds one by its name without knowing
the simulator (the drivers import nothing of it).
"""

from __future__ import annotations

from typing import Any

SOURCES: dict[str, Any] = {}
"""Running frame sources by name (each one shaped as ``source.FrameSource``)."""
