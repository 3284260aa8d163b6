"""Notebook 05, the feed-forward network and residuals: its code, one module per kind.

(docs/authoring.md, "Where a lesson's code lives".)
"""
