"""Notebook 00, start here: its code, one module per kind.

(docs/authoring.md, "Where a lesson's code lives".)
"""
