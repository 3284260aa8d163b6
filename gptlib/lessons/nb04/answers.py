"""Answers of notebook 04 (multi-head attention), shown by its `Question("04....", ...)` cells."""

ANSWERS = {
    "04.scale-per-head": """
        Each head's dot product sums only d_h products, so for queries and keys with
        unit-variance entries its variance is d_h (notebook 02), not d. Dividing by
        √d = {sqrt_d:z.1f} instead of √d_h = {sqrt_d_head:z.2f} (d = 128, h = 4) would shrink
        every score by a further √h = {sqrt_h:z.0f} and flatten every head's softmax; exercise
        3's check names that mistake.
    """,
    "04.torch-mask": """
        Torch reads True as blocked, so each query may see only the keys after it. The last
        query has none: its scores are all −∞. What happens next depends on the path. With
        need_weights=True, the default, torch writes the softmax out to return the weights:
        it computes 0 / 0 and the output is NaN (section 7 found NaN at positions {nan_rows}).
        With need_weights=False it calls F.scaled_dot_product_attention, which returns 0 for a
        row with no key: NaN at {fast_nan}, the last position's output is W_O's bias alone, and
        nothing announces the bug. gptlib's model makes that call too (NaN at {fused_nan} on
        the same scores), so in the course's own model the bug would be silent. Every other
        query keeps at least one key, a wrong one. Pass ~causal_mask(T) to torch's layer, and
        test a mask by what the outputs read (exercise 4), not by looking for NaN.
    """,
    "04.slot-plot": """
        view(B, h, T, d_h) reads each sequence's numbers in memory order, token after token, and
        deals them out T·d_h = {per_head} at a time. Head 0 takes the first {per_head}: all
        d = {d} features of the first {tokens_per_head} tokens, {slots_per_token} slots of d_h
        per token. So token 0 fills slots 0 to 3 of head 0, token 1 fills slots
        {token_slots}, and no other head holds any of token 1.

        The mask lets slot t read slots 0..t of its own head, and output position t takes slot t
        of every head. Position 1 therefore draws on these tokens, head by head: {readable}.
        Token 2 among them is the very token position 1 is trained to predict, and tokens 4 and
        6 lie further in its future; its own token 1 is not among them at all (in a model it
        reaches position 1 only through the residual stream). In this 8-position layer the positions
        that can read their own target are {leaking}, as exercise 5 found.
    """,
    "04.null-result": """
        No. On each of {seeds} seeds the four models end within {spread:z.2f} nats per character
        of each other in training loss (best {best:z.2f}, worst {worst:z.2f} over all the runs),
        and no head count wins on every seed: on this toy grammar, with one layer of width 32 and
        200 steps, extra heads buy nothing we can measure. That is a finding about this task and
        size, not about heads. The chapter's argument concerns a position that must gather
        several different things at once through one layer; notebook 08 builds a task of that
        kind and compares several heads with one at the same width.
    """,
}
