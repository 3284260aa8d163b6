"""Notebook 02, scaled dot-product attention: its code, one module per kind.

(docs/authoring.md, "Where a lesson's code lives".)
"""
