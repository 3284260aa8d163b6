"""Notebook 08's plots, one module per topic."""
