"""Notebook 08, train and sample: its code, one module per kind.

(docs/authoring.md, "Where a lesson's code lives".)
"""
