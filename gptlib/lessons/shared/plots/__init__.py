"""Figures more than one lesson shows."""
