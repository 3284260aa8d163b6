"""Notebook 09's experiments, one module per topic."""
