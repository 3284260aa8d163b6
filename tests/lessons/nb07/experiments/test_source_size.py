"""Counting source lines, also of a class defined in a (simulated) notebook cell."""

import linecache

import pytest

from gptlib.lessons.nb07.experiments.source_size import code_lines, source_of

CELL = '''\
import torch


class Tiny:
    """Two lines of docstring
    count as lines."""

    def forward(self, x):
        # a comment line is not counted
        ### neither is a solution marker

        return x + 1  # a trailing comment is


def helper(y):
    return 2 * y
'''


def _run_as_cell(code: str, filename: str) -> dict:
    """Execute `code` the way IPython runs a cell: compiled under a name only linecache knows."""
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    namespace = {"__name__": "__main__"}
    exec(compile(code, filename, "exec"), namespace)
    return namespace


def test_a_class_from_a_cell_is_found_through_its_methods():
    ns = _run_as_cell(CELL, "/tmp/ipykernel_0/1234.py")
    assert source_of(ns["Tiny"]).splitlines()[0] == "class Tiny:"
    assert source_of(ns["Tiny"]).rstrip().endswith("return x + 1  # a trailing comment is")
    assert code_lines([ns["Tiny"], ns["helper"]]) == {"Tiny": 5, "helper": 2}


def test_a_renaming_subclass_gives_its_parents_source():
    ns = _run_as_cell(CELL, "/tmp/ipykernel_0/1235.py")
    renamed = type("Renamed", (ns["Tiny"],), {"__doc__": "stands in"})
    assert source_of(renamed) == source_of(ns["Tiny"])


def test_library_objects_use_inspect():
    assert source_of(code_lines).startswith("def code_lines(")
    assert code_lines([code_lines])["code_lines"] == 9


def test_no_source_is_a_value_error():
    with pytest.raises(ValueError, match="no source found"):
        source_of(type("Empty", (), {}))
    with pytest.raises(ValueError, match="no source found"):
        source_of(len)
