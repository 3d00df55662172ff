"""The base install has no camera: OpenCV, numba and threadpoolctl are the ``camera`` extra.

A base install is simulated by a Python that cannot import those modules (a finder at the
head of ``sys.meta_path`` refuses them, as a missing distribution would). Everything
outside the camera's own packages must import there, and whatever would use the camera
says in one line which extra to install, before it starts anything.
"""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CAMERA_MODULES = ("cv2", "numba", "threadpoolctl")
CAMERA_PACKAGES = ("shoe_reader.camera", "hardware_sim.camera")
SHIPPED = ("shoe_reader", "table_service", "audit", "hardware_sim", "migrations")

# Runs before the code under test: the camera's modules are not installed.
WITHOUT_CAMERA = f"""
import importlib.abc, sys
class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {CAMERA_MODULES!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, _NotInstalled())
"""


def _base_python(code: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVETABLE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_CAMERA + code, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _livetable(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``livetable ARGS`` on a base install."""
    code = "import sys; from table_service.cli import main; sys.argv[0] = 'livetable'; main()"
    return _base_python(code, cwd, *args)


def _says_which_extra(done: subprocess.CompletedProcess[str], what: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    (line,) = done.stderr.splitlines()  # one line, no traceback
    assert what in line, line
    assert "'camera' extra" in line and "opencv-python-headless" in line, line
    assert "pip install 'livetable[camera]'" in line and "pip install -e '.[camera]'" in line


def test_the_camera_is_an_extra_of_its_own() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = " ".join(project["dependencies"]).lower()
    for name in ("opencv", "numba", "llvmlite", "threadpoolctl"):
        assert name not in base, f"{name} is in the base install"
    camera = " ".join(project["optional-dependencies"]["camera"]).lower()
    assert "opencv-python-headless" in camera and "numba" in camera
    tools = {e: " ".join(project["optional-dependencies"][e]) for e in ("test", "lint")}
    assert "pytest" in tools["test"] and "ruff" not in tools["test"]
    assert "ruff" in tools["lint"] and "mypy" in tools["lint"]
    assert "playwright" in " ".join(project["optional-dependencies"]["browser"])
    assert "schemathesis" in " ".join(project["optional-dependencies"]["fuzz"])


def test_everything_but_the_camera_imports_without_it(tmp_path: Path) -> None:
    names = []
    for package in SHIPPED:
        module = __import__(package)
        names.append(package)
        for info in pkgutil.walk_packages(module.__path__, f"{package}."):
            if info.name == "migrations.env":  # Alembic's script, run only by Alembic
                continue
            if not info.name.startswith(CAMERA_PACKAGES) or info.name.endswith(".extra"):
                names.append(info.name)
    assert "table_service.cli" in names and "table_service.routes.tables" in names
    code = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    importlib.import_module(name)\n"
        f"assert not [m for m in {CAMERA_MODULES!r} if m in sys.modules]\n"
        "print('imported', len(sys.argv) - 1)\n"
    )
    done = _base_python(code, tmp_path, *names)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == f"imported {len(names)}"


@pytest.mark.parametrize(
    "args",
    [
        ["camera", "calibrate", "--images", "photos", "--out", "deck.npz"],
        ["camera", "synth", "calibration", "--out", "photos"],
    ],
    ids=["calibrate", "synth"],
)
def test_a_camera_command_says_which_extra(tmp_path: Path, args: list[str]) -> None:
    _says_which_extra(_livetable(tmp_path, *args), "livetable camera")
    assert not list(tmp_path.iterdir())


def test_a_table_file_with_a_camera_reader_says_which_extra(tmp_path: Path) -> None:
    (tmp_path / "deck.npz").write_bytes(b"")
    (tmp_path / "tables.toml").write_text(
        '[[tables]]\ntable_id = "cam-1"\n'
        'reader = { kind = "camera", source = "0", calibration = "deck.npz" }\n'
        '[[tables]]\ntable_id = "bac-1"\nshoe = { port = "/dev/null" }\n'
    )
    done = _livetable(tmp_path, "serve", "--tables", "tables.toml")
    _says_which_extra(done, "(cam-1) camera: a camera reader needs")
    assert not (tmp_path / "livetable-data").exists()  # checked before anything started


@pytest.mark.parametrize("reader", ["camera", "both"])
def test_the_demo_on_a_camera_says_which_extra(tmp_path: Path, reader: str) -> None:
    done = _livetable(tmp_path, "demo", "--reader", reader, "--data-dir", "data", "--port", "0")
    _says_which_extra(done, f"livetable demo --reader {reader} needs")
    assert not (tmp_path / "data").exists()
