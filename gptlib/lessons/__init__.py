"""The lesson wing: everything the notebooks need besides the model itself, one folder per lesson.

- `nb00/` ... `nb09/`: one lesson's code each, in modules named by kind: `experiments`
  (pure functions that run the lesson's experiments and return small results), `plots`
  (matplotlib figures of them), `widgets` (ipywidgets explorers over an experiment and its
  figure), `checks` (each exercise's block: inputs, adapter, reference, catalogue of mistakes;
  a graded release ships the inputs and adapters alone), `answers` (the stored answers of its
  questions), and `references` (exercise references the lesson runs after the check). A kind
  with several topics is a folder of modules (`nb08/experiments/ablation.py`).
- `shared/`: what several lessons run (the lesson variants of the model, the toy training
  loop, attention maps, the KV-cache experiments...), laid out like a lesson.
- `engine/`: the check engine (`checks`), stored answers, the explorer base, predictions and
  questions, plot labels and `text`, the one formatting convention for printed numbers.
- `under_the_hood/`: the code of docs/under_the_hood.ipynb (the timing of every explorer).

Each lesson sits on `shared`, which sits on `engine`; no lesson imports another (07's checks
reuse 04's and 05's catalogues, the one exception), and inside a lesson experiments are under
plots, under widgets (tests/test_layering.py pins this). All of it imports the model
(`gptlib.model`, `gptlib.data`, `gptlib.train`); the model imports nothing from here. See
docs/authoring.md, "Where a lesson's code lives".
"""

import importlib.util

_MISSING = [name for name in ("matplotlib", "ipywidgets") if importlib.util.find_spec(name) is None]
if _MISSING:
    raise ImportError(
        f"gptlib's lessons need {' and '.join(_MISSING)}, which gptlib itself does not: "
        "pip install 'gptlib[lessons]' (make lab and environment.yml install it)"
    )
