"""Notebook 07, build the GPT: its code, one module per kind.

(docs/authoring.md, "Where a lesson's code lives".)
"""
