"""Notebook 06, LayerNorm, Pre-LN vs Post-LN: its code, one module per kind.

(docs/authoring.md, "Where a lesson's code lives".)
"""
