"""How predictable a text is from its last few characters: empirical conditional entropies.

`context_entropy(ids, k)` is H(next id | the k ids before it), in nats, counted over the text
itself: with k = 0 the entropy of the character frequencies (the best loss of a model that
looks at nothing), with k = 1 the best loss of a model that sees only the current character (a
bigram model). Notebook 07 draws both under its memorisation curve.
"""

from __future__ import annotations

import math

import torch


def context_entropy(ids: torch.Tensor, context: int = 0) -> float:
    """Empirical H(ids[t] | ids[t-context:t]) in nats over ids [N] (N > context)."""
    if ids.dim() != 1 or not len(ids) > context >= 0:
        raise ValueError(
            f"need a 1-d tensor of ids longer than the context ({context} >= 0), "
            f"got shape {list(ids.shape)}"
        )
    ids = ids.long()
    V = int(ids.max()) + 1
    if (context + 1) * math.log2(V) >= 63:
        raise ValueError(
            f"a context of {context} ids over a vocabulary of {V} is too long to count"
        )
    n = len(ids) - context
    key = torch.zeros(n, dtype=torch.long)
    for j in range(context):  # the context as one number in base V
        key = key * V + ids[j : j + n]
    joint = key * V + ids[context:]
    return _entropy(joint) - _entropy(key)  # H(next | context) = H(context, next) - H(context)


def _entropy(values: torch.Tensor) -> float:
    counts = torch.unique(values, return_counts=True)[1].double()
    p = counts / counts.sum()
    return float(-(p * p.log()).sum())
