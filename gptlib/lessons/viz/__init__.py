"""Plots used by the notebooks (matplotlib), one module per topic."""
