"""Notebook 01's code: see docs/authoring.md, 'Where a lesson's code lives'."""
