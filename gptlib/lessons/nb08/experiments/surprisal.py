"""Where a character model's loss sits: surprisals grouped by the character's place in a word
(notebook 08)."""

from __future__ import annotations

import torch

from gptlib.data import CharTokenizer

PLACES = ("starting a word", "inside a word", "anything else")


def costs_by_place(
    costs: torch.Tensor, windows: torch.Tensor, tokenizer: CharTokenizer
) -> dict[str, tuple[float, int]]:
    """Mean surprisal and count of the predicted characters in each of `PLACES`.

    costs [B, T] are the surprisals of windows[:, 1:] (windows [B, T + 1], the ids they were
    computed from). A letter after a space or a line break starts a word, a letter after a
    letter is inside one; spaces, punctuation and letters after punctuation are anything else.
    """
    if costs.shape != (windows.shape[0], windows.shape[1] - 1):
        raise ValueError(
            f"costs {list(costs.shape)} must hold one surprisal per predicted character of "
            f"windows {list(windows.shape)}, that is {[windows.shape[0], windows.shape[1] - 1]}"
        )
    is_letter = torch.tensor([c.isalpha() for c in tokenizer.chars], device=windows.device)
    is_gap = torch.tensor([c in " \n" for c in tokenizer.chars], device=windows.device)
    letter, previous = is_letter[windows[:, 1:]], windows[:, :-1]
    starting = letter & is_gap[previous]
    inside = letter & is_letter[previous]
    groups = {PLACES[0]: starting, PLACES[1]: inside, PLACES[2]: ~(starting | inside)}
    return {
        place: (costs[mask].mean().item() if mask.any() else float("nan"), int(mask.sum()))
        for place, mask in groups.items()
    }
