"""Interactive explorers for the notebooks: ipywidgets over pure, unit-tested functions.

One module per topic; each widget also has a static rendering at its default value.
"""
