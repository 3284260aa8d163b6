"""Answers of notebook 05 (feed-forward network and residuals), filled by `answer("05....")`."""

ANSWERS = {
    "05.mlp-share": """
        The MLP: 8d² weights against attention's 4d², so two thirds of the block. At d = 128
        gptlib's block has {mlp:,} MLP parameters out of {total:,}, a share of {share:z.3f}.
    """,
    "05.gradient-plot": """
        Without skips, the gradient reaching a block has passed through the Jacobians of every
        block above it, so each block down multiplies it by one more factor. GPT-2's
        initialisation makes those factors nearly equal, about {factor:z.1e} per block: the log
        of the gradient falls by the same amount at every step down, a straight line. The
        factor is the forward shrinkage read backwards: the stream itself shrank from
        {stream_1:z.2g} after block 1 to {stream_24:z.2g} after block 24, because GPT-2 draws
        every sublayer's output small, expecting a skip to carry the signal.

        The variance-preserving initialisation draws the weights so that each sublayer hands
        on a signal of its input's size (the stream's size stayed between {vp_smallest:z.1f}
        and {vp_largest:z.1f} over the 24 blocks), so each factor is close to 1 and the curve is
        nearly flat. Close is not exact: without the GELU's gain the 24 blocks compounded a
        small per-block loss into a ratio of {lecun_ratio:z.2g} between block 24 and block 1.
        With skips each factor is I + ∂F/∂x, and the gradient is level whatever the
        initialisation.
    """,
    "05.layernorm-and-skips": """
        Because the size of the gradient is not the whole story. With LayerNorm but without
        skips the gradient at block 1 was {ratio:z.2f} times the one with skips, yet from block
        {first_collapsed} on all positions held nearly the same vector (similarity
        {similarity_without:z.3f} after the last block, against {similarity_with:z.3f} with skips).
        Attention averages positions together, and without a skip nothing carries each token's
        own vector forward: the gradient arrives at full size but can no longer tell the
        tokens apart.
    """,
    "05.gelu-vs-relu": """
        ReLU outputs 0 with slope 0, so no gradient flows back through that unit. GELU outputs
        {value:z.3f} with slope {slope:z.3f}: small, but the unit keeps learning.
    """,
    "05.stream-sum": """
        The embedding plus the sum of all 2L sublayer writes, then the final LayerNorm: section
        6 checked final == embedding + updates.sum(0) for its {n_writes} writes. Every sublayer
        reads the running sum and adds to it.
    """,
}
