"""The code of docs/under_the_hood.ipynb, the maintainers' notebook: it times every lesson's
explorer, so it sits above the lessons."""
