"""The lesson wing: everything the notebooks need besides the model itself.

Layered one way, each layer importing only those before it (tests/test_layering.py pins this):

- `text`: numbers as text, the one formatting convention every layer and notebook prints with;
- `experiments`: pure functions that run a lesson's experiment and return a small result;
- `viz`: matplotlib figures of those results;
- `widgets`: ipywidgets explorers over an experiment and its figure;
- `checks`: the exercises' checks, with their catalogues of mistakes;
- `answers`: the folded answers of "Check your understanding".

All of them import the model (`gptlib.model`, `gptlib.data`,
`gptlib.train`); the model imports nothing from here.
"""

import importlib.util

_MISSING = [name for name in ("matplotlib", "ipywidgets") if importlib.util.find_spec(name) is None]
if _MISSING:
    raise ImportError(
        f"gptlib's lessons need {' and '.join(_MISSING)}, which gptlib itself does not: "
        "pip install 'gptlib[lessons]' (make lab and environment.yml install it)"
    )
