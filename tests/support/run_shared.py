"""What a test run computes once, however many xdist workers it has.

A session-scoped fixture is made once per worker: under ``-n auto`` each worker that runs a
test asking for a deck's calibration photographs and calibrates that deck itself (6-8 s of
CPU each), the same photographs from the same seed, the same calibration. Made here, it is
made by the first worker to ask, under a lock, into a folder every worker of the run shares
(``<run's basetemp>/shared``; under xdist each worker's basetemp is ``popen-gwN`` inside the
run's); a worker asking meanwhile waits for it, then uses it. Without xdist the folder is
the session's own basetemp, so a run never sees another run's files.

What is kept is what the worker that made it would have used (a file as it wrote it, a
calibration pickled with its arrays as they were), so a test reads the same whichever
worker made it.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path

import pytest

from shoe_reader.camera.calibration import Calibration


def shared_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the run's workers share (made on first use)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / "shared"
    folder.mkdir(exist_ok=True)
    return folder


@contextmanager
def _locked(lock: Path) -> Iterator[None]:
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def shared_path(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]
) -> Path:
    """``<shared folder>/<name>``, a file or a folder that ``make(path)`` writes at the path
    it is given, by whichever worker asks first (a ``make`` that fails leaves no ``name``:
    the next worker to ask makes it again). Its readers must not change it."""
    folder = shared_folder(tmp_path_factory)
    path = folder / name
    with _locked(folder / f"{name}.lock"):
        if not path.exists():
            part = folder / f"{name}.part"
            if part.is_dir():
                shutil.rmtree(part)
            part.unlink(missing_ok=True)
            make(part)
            part.rename(path)
    return path


def shared_calibration(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[], Calibration]
) -> Calibration:
    """The calibration ``make()`` returns, made once a run (see :func:`shared_path`).

    Each call returns a calibration of its own, as ``make()`` would: its arrays copies, as
    pickled, of the ones it was made with (not rounded, as a saved calibration's are), none of
    what it learns on first use (its parts, prints, templates) yet learned, so that no test
    sees what another one learned or changed with its switches set otherwise."""

    def write(path: Path) -> None:
        cal = make()
        path.write_bytes(pickle.dumps({f.name: getattr(cal, f.name) for f in fields(cal)}))

    path = shared_path(tmp_path_factory, f"{name}.pickle", write)
    return Calibration(**pickle.loads(path.read_bytes()))  # (13 MB: read again, not kept)
