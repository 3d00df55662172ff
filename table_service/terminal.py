"""Consoles for the CLI that do not cut output sent to a file or a pipe.

rich assumes 80 columns when standard output is not a terminal, which wraps long lines
and squeezes tables: a bet name truncated to ``player_dra…`` or a hash split over two
lines is worse than useless in a file a regulator keeps. Redirected, our consoles never
wrap and size tables to their content; on a terminal they follow its width.
"""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console

UNWRAPPED_WIDTH = 1000
"""Width given to a console that is not a terminal: wider than any table we print."""

RULE_WIDTH = 90
"""Widest a horizontal rule is drawn, so a redirected log does not carry 1000-column rules."""


def make_console(*, stderr: bool = False, **options: Any) -> Console:
    """A console on stdout (or stderr) that wraps only on a terminal."""
    stream = sys.stderr if stderr else sys.stdout
    try:
        interactive = stream.isatty()
    except (AttributeError, ValueError):
        interactive = False
    if interactive or "file" in options or "width" in options:
        return Console(stderr=stderr, **options)
    options.setdefault("soft_wrap", True)
    return Console(stderr=stderr, width=UNWRAPPED_WIDTH, **options)


def rule_width(console: Console) -> int:
    return min(console.width, RULE_WIDTH)
