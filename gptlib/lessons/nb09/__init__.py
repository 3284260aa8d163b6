"""Notebook 09, cost accounting: its code, one module per kind.

(docs/authoring.md, "Where a lesson's code lives".)
"""
