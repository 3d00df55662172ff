"""A zygote for the tests' ``livetable serve`` processes: import once, fork each server.

The crash, studio and operations tests start ``python -m table_service.cli serve`` about a
hundred times a run, and SIGKILL most of them. Nine tenths of a start's CPU (about 1.4 s
of 1.6 s) is the interpreter importing FastAPI, pydantic, SQLAlchemy, Alembic, uvicorn and
the table service, the same every time. This process does that once; then, per request,
it forks a child that is a ``serve`` from there on: its own environment, working folder,
log file and arguments, ``table_service.cli`` run as ``__main__`` exactly as ``-m`` runs
it, its own memory. A SIGKILL loses what a real crash loses: the child holds no state of
the zygote's but imported modules (no database connection, no thread, no open file is
made before the fork, and nothing here reads the environment at import time).

Run as a script by :class:`tests.support.crash_harness.ServeZygote`: requests come as JSON
lines on the file descriptor given as ``argv[1]``, answers go to ``argv[2]``:
``{"argv", "env", "cwd", "log"}`` is answered ``{"pid": N}`` (optional ``"stdin"``, ``"stdout"``
and ``"stderr"`` paths stand in for ``/dev/null`` and the log: a one-shot command run by
``crash_harness.run_cli``), and every child's end is
reported as ``{"exit": N, "status": CODE, "cpu": SECONDS}`` (a signal ``-SIG``, as
``Popen.returncode``; the CPU the child used, for ``--cpu-durations``).
The zygote dies with the test process (``setpriv --pdeathsig``), and its children die
with it (``PR_SET_PDEATHSIG``), so no orphan server outlives an interrupted run.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import sys
import traceback
from typing import Any

# The imports every ``serve`` makes before it answers /readyz.
WARM = [
    "table_service.cli",
    "table_service.cli.serve",
    "table_service.app",
    "table_service.routes.tables",
    "table_service.table.config",
    "table_service.table.service",
    "table_service.studio.coordinator",
    "table_service.runtime",
    "table_service.regulator.watchdog",
    "migrations",
    "alembic.command",
    "alembic.runtime.migration",
    "alembic.script",
    "uvicorn",
    "uvicorn.main",
    "uvicorn.config",
    "uvicorn.server",
    "uvicorn.lifespan.on",
    "uvicorn.loops.auto",
    "uvicorn.loops.uvloop",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.http.httptools_impl",
    "uvicorn.protocols.http.h11_impl",
    "uvicorn.protocols.websockets.auto",
    "uvicorn.protocols.websockets.websockets_impl",
    "sqlalchemy.dialects.sqlite",
    "sqlalchemy.dialects.postgresql.psycopg",
    "psycopg",
    "serial",
    "shoe_reader.serial_reader",
    "nats",
]
PR_SET_PDEATHSIG = 1


def _warm() -> None:
    """Import what every ``serve`` imports, then freeze it out of the collector's reach.

    ``serve`` itself collects and freezes what it holds once started (the modules, its
    app), as here: its full collection then walks only what the child made, not the
    ~140,000 objects of these imports again, and touches none of their pages (a collection
    writes to every object it walks: in a forked child, a copy of each page). It cost each
    forked server about 0.12 s of CPU, a fifth of its start (tests/crash: 2.5 s of 12)."""
    import gc
    import importlib

    for name in WARM:
        with contextlib.suppress(ImportError):  # an extra not installed: the server will say
            importlib.import_module(name)
    gc.collect()
    gc.freeze()


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:  # the zygote died between the fork and the prctl
        os._exit(1)


def _child(request: dict[str, Any], closing: list[int], streams: list[int] | None = None) -> None:
    """In the forked child: become ``cd CWD; env ENV python -m table_service.cli ARGV``, or
    with ``"script"``, the installed ``livetable`` script run as ``SCRIPT ARGV``."""
    code = 1
    try:
        _die_with_parent()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        for fd in closing:
            os.close(fd)
        if streams:  # a ``livetable`` run through the shim: its caller's own 0, 1, 2
            for fd, given in enumerate(streams):
                os.dup2(given, fd)
                os.close(given)
        else:
            stdin = os.open(request.get("stdin") or os.devnull, os.O_RDONLY)
            os.dup2(stdin, 0)
            os.close(stdin)
            for fd, path in ((1, request.get("stdout")), (2, request.get("stderr"))):
                out = os.open(path or request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                os.dup2(out, fd)
                os.close(out)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        if request.get("script"):  # the console script: ``sys.exit(main())``, as pip wrote it
            sys.argv = [request["script"], *request["argv"]]
            sys.path[0] = os.path.dirname(request["script"])  # as a script's interpreter puts it

            def run() -> None:
                from table_service.cli import main

                main()  # returns nothing: an error ends it with its own SystemExit
                sys.exit()
        else:
            import runpy

            module = "table_service.cli"
            # As ``-m`` finds it: not imported under its own name yet (the warm copy stays
            # where the modules that import it hold it), or runpy warns on standard error.
            sys.modules.pop(f"{module}.__main__", None)
            if not hasattr(sys.modules.get(module), "__path__"):
                sys.modules.pop(module, None)
            sys.argv = [module, *request["argv"]]
            sys.path[0] = request["cwd"]  # as ``-m`` puts it

            def run() -> None:
                runpy.run_module(module, run_name="__main__", alter_sys=True)

        try:
            run()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            code = 1
        import atexit

        atexit._run_exitfuncs()  # an interpreter's own ending: handlers, then flushed streams
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """A shim's request: one JSON line, its standard streams passed with the first bytes."""
    data, fds = b"", []
    while b"\n" not in data:
        chunk, got, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
        if not chunk:
            raise ConnectionError("the shim went away")
        data += chunk
        fds += got
    return json.loads(data), fds


def main() -> None:
    requests_fd, answers_fd = int(sys.argv[1]), int(sys.argv[2])
    listening: socket.socket | None = None
    if len(sys.argv) > 3:  # ``livetable`` shims connect here (see ``crash_harness.livetable_bin``)
        listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listening.bind(sys.argv[3])
        listening.listen(16)
    shims: dict[int, socket.socket] = {}  # child pid -> its shim's connection
    sys.path[0] = os.getcwd()
    _warm()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    requests = os.fdopen(requests_fd, "rb", buffering=0)
    pending = b""

    def answer(message: dict[str, Any]) -> None:
        os.write(answers_fd, json.dumps(message).encode() + b"\n")

    answer({"ready": os.getpid()})
    while True:
        watched: list[Any] = [requests_fd, wake_r, *shims.values()]
        if listening is not None:
            watched.append(listening)
        try:
            readable, _, _ = select.select(watched, [], [])
        except InterruptedError:
            readable = [wake_r]
        if wake_r in readable:
            os.read(wake_r, 4096)
        while True:  # reap every child that ended
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            cpu = usage.ru_utime + usage.ru_stime
            code = os.waitstatus_to_exitcode(status)
            answer({"exit": pid, "status": code, "cpu": cpu})
            shim = shims.pop(pid, None)
            if shim is not None:
                with contextlib.suppress(OSError):
                    shim.sendall(json.dumps({"status": code}).encode() + b"\n")
                shim.close()
        for pid, shim in list(shims.items()):
            if shim in readable:  # the shim died (it never writes after its request)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                shims.pop(pid).close()
        if listening is not None and listening in readable:
            conn, _ = listening.accept()
            try:
                request, fds = _receive(conn)
            except (OSError, ValueError):
                conn.close()
            else:
                closing = [requests_fd, answers_fd, wake_r, wake_w, listening.fileno()]
                closing += [c.fileno() for c in (*shims.values(), conn)]
                pid = os.fork()
                if pid == 0:
                    _child(request, closing, fds)
                for fd in fds:
                    os.close(fd)
                conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
                shims[pid] = conn
        if requests_fd in readable:
            chunk = requests.read(65536)
            if not chunk:  # the test process closed its end: stop (children die with us)
                return
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = json.loads(line)
                pid = os.fork()
                if pid == 0:
                    inherited = [c.fileno() for c in shims.values()]
                    if listening is not None:
                        inherited.append(listening.fileno())
                    _child(request, [requests_fd, answers_fd, wake_r, wake_w, *inherited])
                answer({"pid": pid, "id": request["id"]})


if __name__ == "__main__":
    main()
