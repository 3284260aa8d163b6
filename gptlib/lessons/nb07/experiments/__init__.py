"""Notebook 07's experiments, one module per topic."""
