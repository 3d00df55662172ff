"""The signing key file when several processes of a studio start at once on one data folder."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from audit import signing
from audit.signing import Signer, load_or_create_signer


def test_a_process_that_loses_the_race_signs_with_the_key_that_won(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process creates the key between this one's look and its write: before, the
    second ``serve`` exited with "File exists"; now it takes the key that is there."""
    path = tmp_path / "data" / "signing-key"
    generate = Signer.generate
    winner: list[Signer] = []

    def racing_generate() -> Signer:
        if not winner:  # the other process, at this very moment
            monkeypatch.setattr(signing.Signer, "generate", generate)
            winner.append(load_or_create_signer(path))
        return generate()

    monkeypatch.setattr(signing.Signer, "generate", staticmethod(racing_generate))
    signer = load_or_create_signer(path)
    assert signer.public_key_b64 == winner[0].public_key_b64
    assert (path.stat().st_mode & 0o777) == 0o600
    assert path.with_name("signing-key.pub").read_text().strip() == signer.public_key_b64
    assert sorted(p.name for p in path.parent.iterdir()) == ["signing-key", "signing-key.pub"]


def _start(path: str, barrier: Any, out: Any) -> None:
    barrier.wait()
    out.put(load_or_create_signer(Path(path)).public_key_b64)


def test_processes_started_together_all_sign_with_one_key(tmp_path: Path) -> None:
    path = tmp_path / "signing-key"
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(6)
    out = context.Queue()
    processes = [context.Process(target=_start, args=(str(path), barrier, out)) for _ in range(6)]
    for process in processes:
        process.start()
    keys = {out.get(timeout=120) for _ in processes}
    for process in processes:
        process.join(timeout=120)
        assert process.exitcode == 0
    assert keys == {Signer.from_seed_b64(path.read_text()).public_key_b64}
