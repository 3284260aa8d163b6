"""Notebook 08's widgets, one module per topic."""
