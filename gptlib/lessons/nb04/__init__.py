"""Notebook 04, multi-head attention: its code, one module per kind.

(docs/authoring.md, "Where a lesson's code lives".)
"""
