"""Interactive widgets for the notebooks: ipywidgets over pure, unit-tested functions.

Every explorer subclasses `explorer.Explorer` (controls above its `name = value` lines and one
figure) and has a static rendering at its default value in its notebook; `predict.Prediction`
asks the student for a guess before an experiment. See docs/authoring.md.
"""
