"""The course website: built from the notebooks by Jupyter Book (`make site`, book/build.py)."""
