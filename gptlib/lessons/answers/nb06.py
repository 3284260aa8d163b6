"""Answers of notebook 06 (LayerNorm, Pre-LN vs Post-LN), filled by `answer("06....", ...)`."""

ANSWERS: dict[str, str] = {}
