"""Answers of notebook 01 (embeddings and positions), filled by `answer("01....", ...)`."""

ANSWERS = {
    "01.set-of-tokens": """
        A score q_i · k_j is computed from the contents of tokens i and j only, so a
        permutation of the input produces the same scores in permuted order, and every output
        moves with its token. Measured above: shuffling six tokens changed nothing but their
        order (largest difference {gap:.6f}). The causal mask breaks this only weakly: with it
        the last token's output was the same for all {n_orderings} orderings of the tokens
        before it.
    """,
    "01.learned-positions": """
        1024 × 768 = {n_learned:,} trainable parameters (counted from an nn.Embedding(1024,
        768)). A sinusoidal table is computed from a formula and has none, which is also why it
        can be evaluated at positions beyond the longest training sequence.
    """,
    "01.one-hot-cost": """
        The product multiplies a 1 × {V:,} one-hot row by a {V:,} × {d} matrix:
        {multiply_adds:,} multiply-adds per token, to copy {d} numbers. The result is identical
        (checked in section 1), so the lookup is used and the product is only a way to think
        about it, for instance about which rows receive a gradient.
    """,
}
