"""Answers of notebook 01 (embeddings and positions), shown by its `Question`s once answered."""

ANSWERS = {
    "01.set-of-tokens": """
        (a) Yes. Each piece passes on its own: attention without a mask (measured above: two
        stacked layers, largest gap {gap:z.5f}), and the MLP, the LayerNorms and the residual
        sums, which act on each position alone, so that shuffling their input shuffles their
        output the same way. Pieces that each pass, stacked, pass: without positions and
        without a mask, a GPT of any depth gives each token the same output wherever it
        stands.

        (b) No. One causal attention layer gives position t a mixture of the tokens up to t that
        depends on which tokens they are and in what proportions, not on their order (measured:
        over every position and every ordering of its prefix, up to {n_orderings} of them, the
        largest change was {one_layer:z.5f}); the MLP, the LayerNorms and the residual sum then
        transform that position's own vector only. The block may know where the last position
        stands (after a start token, the proportions change with the prefix's length), but not
        the order within its prefix. That takes a second block: the first block's outputs, each
        a summary of its own prefix, change when the order changes, and the second block reads
        them (two causal layers: prefix changes up to {two_layers:z.3f}).
    """,
    "01.learned-positions": """
        1024 × 768 = {n_learned:,} trainable parameters in the learned table (counted from an
        nn.Embedding(1024, 768)); the sinusoidal table has none, since it is computed from a
        formula. At position 1024 the learned table has no row: the lookup fails, so the model
        must cut its input to the last 1024 tokens. The formula gives a sinusoidal row for any
        position, but a model trained on shorter sequences never met that row, so nothing says
        it will use it well: Press et al. (2022) found that the perplexity of sinusoidal models
        rises quickly beyond the length they were trained on.
    """,
    "01.similarity-heatmaps": """
        Row t holds (sin ω_m t, cos ω_m t) for each frequency ω_m. The dot product of rows i and
        j is Σ_m (sin ω_m i · sin ω_m j + cos ω_m i · cos ω_m j) = Σ_m cos(ω_m (i − j)), and
        every row has the same length (its squared length is d/2), so the cosine of two
        positions is a function of their offset i − j alone, for any width and base. All pairs
        at one offset share one cosine, each pair equals its offset's mean, W = 0 and the share
        is 1 (measured {share_sin:z.3f}). Nearby, every clock has turned a little and the
        cosine is high ({neighbours_sin:z.3f} at offset 1); far apart, the fast clocks have
        decorrelated while the slow ones still agree ({far_sin:z.3f} at offset 32).

        Independent random rows: the cosine of two rows is noise around 0 whatever their
        offset, so the offsets' means explain only what any T − 2 free group means explain of
        noise by chance: about (T − 2) / (pairs − 1) = {chance:z.3f} of the variation for
        T = 64. Measured: {share_learned:z.3f}.
    """,
}
