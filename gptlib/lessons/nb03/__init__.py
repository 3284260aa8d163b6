"""Notebook 03, the causal mask: its code, one module per kind.

(docs/authoring.md, "Where a lesson's code lives".)
"""
