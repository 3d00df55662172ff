"""The camera reader is an extra: ``pip install 'livetable[camera]'``.

A serial-shoe table, the API, the consoles and the audit tools run on the base install;
only the camera needs OpenCV, the locator's compiled kernels (numba, with llvmlite) and
threadpoolctl, about 380 MB that most tables never use. Whatever would use the camera —
a ``livetable camera`` command, a table file with a camera reader, the demo's ``--reader
camera|both`` — asks :func:`require_camera` first, so a base install says in one line
which extra to install instead of failing deep inside an import.

This module imports nothing of the camera: it only looks the modules up.
"""

from __future__ import annotations

import importlib.util

EXTRA = "camera"
INSTALL = f"pip install 'livetable[{EXTRA}]' (from a clone: pip install -e '.[{EXTRA}]')"
MODULES = {"cv2": "opencv-python-headless", "numba": "numba", "threadpoolctl": "threadpoolctl"}
"""The modules only the camera imports, and the distribution that brings each."""


class CameraExtraMissing(ImportError):
    """The camera's modules are not installed: the message says which extra to install."""


def missing_camera_modules() -> list[str]:
    """The distributions of the camera extra that are missing (none: the camera can run)."""
    missing = []
    for module, distribution in MODULES.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a broken or half-removed install
            found = False
        if not found:
            missing.append(distribution)
    return missing


def require_camera(what: str = "the camera reader") -> None:
    """Raise :class:`CameraExtraMissing` naming the extra if the camera cannot run."""
    missing = missing_camera_modules()
    if missing:
        raise CameraExtraMissing(
            f"{what} needs the {EXTRA!r} extra ({', '.join(missing)} not installed): {INSTALL}"
        )
