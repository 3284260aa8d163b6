"""Redraw timing: the stages are timed in order with the clocks given, and the course catalogue
builds every explorer of the course with settings its controls accept."""

from __future__ import annotations

import importlib
import inspect
import itertools
from pathlib import Path

import ipywidgets as widgets
import pytest
import torch

from gptlib.lessons.engine.explorer import Explorer
from gptlib.lessons.under_the_hood import timing
from gptlib.lessons.under_the_hood.timing import RedrawTiming, course_explorers, time_redraws

LESSONS = Path(timing.__file__).resolve().parent.parent


class _Echo:
    def __init__(self, value: int) -> None:
        self.value = value

    def lines(self) -> list[str]:
        return [f"value = {self.value}"]


class _Counter(Explorer):
    """An explorer whose result is its slider's value, recording what it computed and drew."""

    def __init__(self) -> None:
        self.n = widgets.IntSlider(value=1, min=1, max=10, description="n")
        super().__init__([self.n], figsize=(1, 1))
        self.computed: list[int] = []
        self.drawn: list[int] = []
        self.redraw()

    def compute(self) -> _Echo:
        self.computed.append(self.n.value)
        return _Echo(self.n.value)

    def draw(self, result: _Echo) -> None:
        self.drawn.append(result.value)


def test_each_setting_is_applied_without_a_redraw_then_timed_stage_by_stage(monkeypatch):
    explorer = _Counter()
    explorer.computed.clear()
    wall = itertools.count(0.0, 0.5)  # every perf_counter call is half a second later
    cpu = itertools.count(0.0, 0.25)
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(wall))
    monkeypatch.setattr(timing.time, "process_time", lambda: next(cpu))
    medians = time_redraws(explorer, [{"n": 3}, {"n": 7}], repeats=2)
    assert explorer.computed == [3, 3, 7, 7] and explorer.drawn[-4:] == [3, 3, 7, 7]
    assert medians == {
        "compute": [0.5, 0.5],
        "update": [0.5, 0.5],
        "png": [0.5, 0.5],
        "total": [1.5, 1.5],
        "cpu": [0.25, 0.25],
    }
    with pytest.raises(ValueError, match="repeats must be a positive int"):
        time_redraws(explorer, [{"n": 3}], repeats=0)
    with pytest.raises(ValueError, match="at least one setting"):
        time_redraws(explorer, [], repeats=1)


def test_redraw_timing_summarises_settings():
    timing_ = RedrawTiming(
        "counter (99)",
        {
            "compute": [0.1, 0.3],
            "update": [0.0, 0.0],
            "png": [0.1, 0.3],
            "total": [0.2, 0.6],
            "cpu": [0.1, 0.2],
        },
    )
    assert timing_.median_s == pytest.approx(0.4) and timing_.worst_s == 0.6
    assert timing_.shares() == pytest.approx({"compute": 0.5, "update": 0.0, "png": 0.5})
    assert timing_.lines() == [
        "counter (99) = 400 ms (worst setting 600 ms, CPU 150 ms; compute 50%, update 0%, png 50%)"
    ]


def _explorer_classes() -> set[type]:
    """Every Explorer subclass defined in a lesson's widgets (`nbNN/widgets.py` or
    `nbNN/widgets/<topic>.py`)."""
    found = set()
    for path in [*LESSONS.glob("nb*/widgets.py"), *LESSONS.glob("nb*/widgets/*.py")]:
        name = ".".join(path.relative_to(LESSONS.parent.parent).with_suffix("").parts)
        loaded = importlib.import_module(name.removesuffix(".__init__"))
        for _, cls in inspect.getmembers(loaded, inspect.isclass):
            if (
                issubclass(cls, Explorer)
                and cls is not Explorer
                and cls.__module__ == loaded.__name__
            ):
                found.add(cls)
    return found


@pytest.mark.slow
def test_the_catalogue_builds_every_explorer_of_the_course_and_its_settings_apply():
    torch.manual_seed(0)
    cases = course_explorers()
    assert len({case.name for case in cases}) == len(cases)
    built = {}
    for case in cases:
        explorer = case.build()
        assert explorer.lines, f"{case.name} drew nothing"
        built[type(explorer)] = case.name
        first = dict(case.settings[0])
        with explorer.holding():  # one redraw at the first setting
            for name, value in first.items():
                getattr(explorer, name).value = value
        assert all(getattr(explorer, name).value == value for name, value in first.items())
    assert set(built) == _explorer_classes(), "add the new explorer to course_explorers()"
