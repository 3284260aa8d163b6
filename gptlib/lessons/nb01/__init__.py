"""Notebook 01, embeddings and positions: its code, one module per kind.

(docs/authoring.md, "Where a lesson's code lives".)
"""
