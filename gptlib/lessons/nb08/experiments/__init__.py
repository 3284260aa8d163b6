"""Notebook 08's experiments, one module per topic."""
