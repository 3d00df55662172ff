"""What the ``livetable`` command says when a file or the database is broken.

A careless operator meets these: a configuration file of random bytes, a table file with
limits the wrong way round, a database file that is not one, a PostgreSQL that is down.
Each is one clear line naming the file (a table file: one line per problem) and exit 2,
whichever command met it; never a traceback. Anything else that escapes a command is a
defect: it is still one line (exit 1), and ``LIVETABLE_TRACEBACK=1`` shows the traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

EXIT_BAD_INPUT = 2
EXIT_DEFECT = 1


def command_path(root: Any, argv: Sequence[str]) -> str:
    """``livetable db current`` from the arguments, following the CLI's own groups."""
    words = ["livetable"]
    group = root
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg.startswith("-"):
            skip = arg == "--log-level"  # the root's only option with a value
            continue
        commands = getattr(group, "commands", None)
        if not isinstance(commands, dict) or arg not in commands:
            break
        words.append(arg)
        group = commands[arg]
    return " ".join(words)


def database_url() -> str:
    """The database in force, its password hidden (for a message; never raises)."""
    try:
        from sqlalchemy.engine import make_url

        from table_service.config import Settings

        none: dict[str, Any] = {}  # every value from the environment and the file
        return _render(make_url(Settings(**none).resolved_database_url))
    except Exception:  # the settings are the problem: say nothing more about them here
        return "the database"


def _render(url: Any) -> str:
    rendered = str(url.render_as_string(hide_password=True))
    prefix = "sqlite:///"
    return rendered[len(prefix) :] if rendered.startswith(prefix) else rendered


def _failing_database(exc: BaseException) -> str | None:
    """The database the failing statement ran on, from the engine or connection in the
    traceback (a restore opens a backup file, not the database in force)."""
    from sqlalchemy.engine import Connection, Engine

    found = None
    tb = exc.__traceback__
    while tb is not None:  # outermost to innermost: the last one seen is where it failed
        for value in list(tb.tb_frame.f_locals.values()):
            if isinstance(value, Engine):
                found = value.url
            elif isinstance(value, Connection):
                found = value.engine.url
        tb = tb.tb_next
    return None if found is None else _render(found)


def _not_sqlite_argument(argv: Sequence[str]) -> str | None:
    """The first file named on the command line that is not an SQLite database."""
    for value in argv:
        try:
            if len(value) > 4096 or not os.path.isfile(value):
                continue
            with open(value, "rb") as handle:
                if handle.read(16) != b"SQLite format 3\x00":
                    return value
        except OSError:
            continue
    return None


def _database_line(exc: Exception) -> str:
    orig = getattr(exc, "orig", None)
    reason = str(orig if orig is not None else exc).strip().splitlines()[0]
    where = _failing_database(exc)
    if where == "sqlite://":  # an engine over a connection of its own: a file it was given
        where = _not_sqlite_argument(sys.argv[1:]) if "not a database" in reason else None
        where = where or "a database file the command was given"
    return f"cannot use the database {where or database_url()}: {reason}"


def _undecodable_argument(argv: Sequence[str]) -> str | None:
    """The first file named on the command line that is not UTF-8 text."""
    for arg in argv:
        value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
        try:
            if len(value) > 4096 or not os.path.isfile(value):
                continue
            with open(value, "rb") as handle:
                handle.read(1 << 20).decode("utf-8")
        except UnicodeDecodeError:
            return value
        except OSError:
            continue
    return None


def describe(exc: BaseException) -> list[str] | None:
    """The lines that explain a bad file or database (None: not one of those)."""
    from pydantic import ValidationError

    from audit.signing import SigningKeyError
    from table_service.config import SettingsFileError
    from table_service.table.config import ConfigError

    if isinstance(exc, SettingsFileError):
        return [str(exc)]
    from shoe_reader.camera.extra import INSTALL, MODULES, CameraExtraMissing

    if isinstance(exc, CameraExtraMissing):
        return [str(exc)]
    if isinstance(exc, ModuleNotFoundError) and exc.name in MODULES:  # a path not guarded
        return [f"needs the 'camera' extra ({MODULES[exc.name]} not installed): {INSTALL}"]
    if isinstance(exc, ConfigError):
        return [f"table configuration: {line}" for line in exc.problems]
    if isinstance(exc, SigningKeyError):
        return [f"signing key: {exc}"]
    if isinstance(exc, ValidationError) and exc.title == "Settings":
        return [
            "configuration: "
            + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        ]
    from sqlalchemy.exc import SQLAlchemyError

    if isinstance(exc, SQLAlchemyError):
        return [_database_line(exc)]
    if isinstance(exc, UnicodeDecodeError):
        named = _undecodable_argument(sys.argv[1:])
        if named is not None:
            return [f"{named}: not UTF-8 text ({exc.reason} at offset {exc.start})"]
        return [f"a file that should be UTF-8 text is not ({exc.reason} at offset {exc.start})"]
    if isinstance(exc, OSError) and exc.filename is not None:
        return [f"{exc.filename}: {exc.strerror or exc}"]
    return None


def report(exc: Exception, command: str) -> int:
    """Print ``exc`` as one line per problem on standard error; the exit status."""
    if os.environ.get("LIVETABLE_TRACEBACK"):
        raise exc
    lines = describe(exc)
    status = EXIT_BAD_INPUT
    if lines is None:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        lines = [
            f"unexpected {type(exc).__name__}"
            + (f": {detail}" if detail else "")
            + " (a defect: LIVETABLE_TRACEBACK=1 shows where)"
        ]
        status = EXIT_DEFECT
    for line in lines:
        sys.stderr.write(f"{command}: {line}\n")
    sys.stderr.flush()
    return status
