"""Notebook 06's code: see docs/authoring.md, 'Where a lesson's code lives'."""
