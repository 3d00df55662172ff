"""The JSON-lines loop shared by every ``livetable settle GAME`` command.

One input line gives one output line, in order; a line that cannot be processed
gives ``{"line": N, "error": ...}`` and processing continues (see
``shared/specs/settle-jsonl.md``). Each game supplies only ``handle``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TextIO

Handler = Callable[[dict[str, Any]], dict[str, Any]]


def run_jsonl(source: TextIO, sink: TextIO, handle: Handler) -> int:
    """Process every line of ``source``; returns the number of error lines written."""
    errors = 0
    for number, raw in enumerate(source, start=1):
        if not raw.strip():
            continue
        try:
            request = json.loads(raw)
            if not isinstance(request, dict):
                raise ValueError("each line must be a JSON object")
            result = handle(request)
        except Exception as exc:  # every bad line is answered, never fatal
            errors += 1
            result = {"line": number, "error": f"{type(exc).__name__}: {exc}"}
        sink.write(json.dumps(result, separators=(",", ":"), ensure_ascii=False) + "\n")
        sink.flush()
    return errors
