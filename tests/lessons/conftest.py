"""Every test meets each exercise's hints from the first: wrong tries do not carry over."""

import pytest

from gptlib.lessons.engine.checks.core import forget_tries


@pytest.fixture(autouse=True)
def fresh_hints():
    forget_tries()
