"""Notebook 04's experiments, one module per topic."""
