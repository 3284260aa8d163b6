"""Answers of notebook 01 (embeddings and positions), filled by `answer("01....", ...)`."""

ANSWERS = {
    "01.set-of-tokens": """
        A score q_i · k_j is computed from the contents of tokens i and j only, so a
        permutation of the input produces the same scores in permuted order, and every output
        moves with its token. Measured above: shuffling six tokens changed nothing but their
        order (largest difference {gap:z.6f}).

        The causal mask breaks this symmetry, and how far depends on the depth. With one
        layer, the last token's output was the same for all {n_orderings} orderings of the
        tokens before it (largest change {one_layer:z.6f}): the mask tells a token which set of
        tokens came before it, not in which order. With two stacked layers the largest change
        was {two_layers:z.3f}: the first layer gives each position a summary of its own prefix,
        so the keys and values the second layer reads depend on the order. That is how a causal
        model without position embeddings can still infer some order; position vectors make
        the order explicit instead.
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
    "01.similarity-heatmaps": """
        Sinusoidal: the dot product of rows i and j is Σ_m cos(ω_m (i − j)), and every row has
        the same length, so the cosine depends only on the offset i − j. Every diagonal of the
        matrix holds one value (measured: the largest difference along a diagonal is
        {along_diagonals:z.4f}). Next to the main diagonal the offset is small, every clock has
        turned a little, and the cosine is high ({neighbours_sin:z.3f} for neighbours); further
        away the fast clocks have decorrelated while the slow ones still agree, so the cosine
        falls but stays well above 0 ({far_sin:z.3f} at offset 32).

        Learned, at initialisation: the rows are independent random vectors, so the cosine of
        any two different positions is noise around 0, whatever their offset (mean |cosine| of
        neighbours {neighbours_learned:z.3f}; two random vectors of width 32 give about
        {random_level:z.3f}), and the diagonals are not constant (differences up to
        {learned_along:z.2f}). Only the main diagonal, each position with itself, is 1. Any
        structure in a learned table has to come from training.
    """,
}
