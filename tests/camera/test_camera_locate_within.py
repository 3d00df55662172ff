"""A locator for a window of the region keeps every setting of the one it was made from.

``Locator.within`` (tracking: the card followed in a window round where it was) names each
constructor setting again. A setting added to the constructor and not passed on there would
leave the window's locator at its default, searching a followed card differently from the
whole frame, and nothing else would say so: this test builds a locator with every setting
off its default, taken from the constructor's own signature, so a new setting is covered
the day it is added.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from shoe_reader.camera.locate import Locator


def _off_default(name: str, default: object) -> object:
    """A value other than the setting's default, of its type."""
    if isinstance(default, bool):
        return not default
    if isinstance(default, int):
        return default + 3
    if isinstance(default, float):
        return default * 1.5 + 0.01
    raise AssertionError(f"Locator setting {name!r}: no off-default value for {default!r}")


def test_a_windows_locator_has_every_setting_of_its_regions_but_the_least_card_size() -> None:
    parameters = [
        p for p in inspect.signature(Locator.__init__).parameters.values() if p.name != "self"
    ]
    assert parameters, "Locator takes its settings as constructor arguments"
    settings: dict[str, Any] = {p.name: _off_default(p.name, p.default) for p in parameters}
    region = Locator(**settings)
    window = region.within(4.0)
    for name, value in settings.items():
        got = getattr(window, name)
        if name == "min_card_fraction":
            # The same card is four times as large a share of a window a quarter the size.
            assert isinstance(value, float)
            assert got == pytest.approx(4.0 * value), name
        else:
            assert got == value, name
