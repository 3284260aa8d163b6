"""Experiments more than one lesson runs."""
