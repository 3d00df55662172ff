"""The device side of a pseudo-terminal, as a virtual shoe's serial cable.

``os.openpty`` gives a master (our end) and a slave ``/dev/pts/N`` (the host's end, what
a reader opens exactly as it would open ``/dev/ttyUSB0``). The slave is put in raw mode so
bytes pass unchanged (no echo, no CR/LF translation, no XON/XOFF).

Cable pulled = the master is closed: ``/dev/pts/N`` disappears and a reader that has it
open gets an error on its next read, exactly like an unplugged USB adapter. Plugged back =
a new pseudo-terminal, which usually gets a *different* ``/dev/pts/N``. Real installations
solve that with a stable symlink (``/dev/serial/by-id/...``); we do the same: ``path`` is a
symlink that always points at the current pseudo-terminal and is absent while unplugged,
so a reader reconnecting to ``path`` finds the shoe again.

Whether a host has the port open is visible on the master: POLLHUP while no process holds
the slave. That is the shoe's "carrier detect": it says HLO when a host connects.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import tempfile
import tty
from pathlib import Path


class PtyLinkError(OSError):
    """The pseudo-terminal could not be created or used."""


class PtyLink:
    def __init__(self, link_path: str | os.PathLike[str] | None = None) -> None:
        if link_path is None:
            self._tmpdir: str | None = tempfile.mkdtemp(prefix="livetable-shoe-")
            link_path = Path(self._tmpdir) / "shoe"
        else:
            self._tmpdir = None
        self.path = str(link_path)
        self.pty_path: str | None = None
        self._master: int | None = None

    @property
    def is_open(self) -> bool:
        return self._master is not None

    def fileno(self) -> int | None:
        return self._master

    def open(self) -> str:
        """Create a fresh pseudo-terminal ("cable plugged in"); returns its /dev/pts path."""
        if self._master is not None:
            return str(self.pty_path)
        try:
            master, slave = os.openpty()
        except OSError as exc:
            raise PtyLinkError(exc.errno, f"cannot create a pseudo-terminal: {exc}") from exc
        try:
            tty.setraw(slave)
            pty_path = os.ttyname(slave)
        finally:
            os.close(slave)  # the host opens it; while nobody does, the master sees POLLHUP
        os.set_blocking(master, False)
        self._master = master
        self.pty_path = pty_path
        tmp = f"{self.path}.{os.getpid()}.tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        os.symlink(pty_path, tmp)
        os.replace(tmp, self.path)
        return pty_path

    def close(self) -> None:
        """Close the master ("cable pulled"): the device path disappears."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        if self._master is not None:
            with contextlib.suppress(OSError):
                os.close(self._master)
        self._master = None
        self.pty_path = None

    def dispose(self) -> None:
        self.close()
        if self._tmpdir is not None:
            with contextlib.suppress(OSError):
                os.rmdir(self._tmpdir)

    def host_connected(self) -> bool:
        """True while some process holds the slave side open."""
        if self._master is None:
            return False
        poller = select.poll()
        poller.register(self._master, select.POLLHUP)
        return not any(ev & select.POLLHUP for _, ev in poller.poll(0))

    def read(self) -> bytes:
        """Whatever the host wrote (non-blocking); b"" when there is nothing or no host."""
        if self._master is None:
            return b""
        try:
            return os.read(self._master, 4096)
        except BlockingIOError:
            return b""
        except OSError as exc:
            if exc.errno == errno.EIO:  # no host on the other end
                return b""
            raise

    def write(self, data: bytes) -> bool:
        """Write all of ``data``; False if it could not go out (unplugged, host not reading)."""
        if self._master is None:
            return False
        view = memoryview(data)
        stalls = 0
        while view:
            try:
                n = os.write(self._master, view)
            except BlockingIOError:
                stalls += 1
                if stalls > 100:  # the host stopped reading: a real line would drop bytes
                    return False
                select.select([], [self._master], [], 0.01)
                continue
            except OSError:
                return False
            view = view[n:]
        return True
