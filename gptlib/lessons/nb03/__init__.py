"""Notebook 03's code: see docs/authoring.md, 'Where a lesson's code lives'."""
