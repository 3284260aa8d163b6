"""Answers of notebook 05 (feed-forward network and residuals), shown by its `Question`s."""

ANSWERS = {
    "05.gpt2-mlp-share": """
        Less than two thirds: {share:z.3f}. Each block gives its MLP the two-thirds share
        ({block_share:z.3f} at d = 1,024), but the model also holds its token and position
        tables, {embeddings:,} parameters (the unembedding shares the token table), against
        {mlp:,} in all 24 MLPs, out of {total:,}. The two-thirds share of a whole model holds
        only when its blocks dwarf its tables, and a table of 50,257 tokens is large.
    """,
    "05.gradient-plot": """
        Without a skip, each block hands the next one nothing but its own output, and with
        GPT-2's small weights that output is far smaller than its input: the stream fell from
        {stream_1:z.2g} after block 1 to {stream_24:z.2g} after block 24, a factor of about
        {stream_factor:z.1e} per block. A signal that small passes every sublayer as through a
        fixed linear map (the softmax sees scores near 0 and averages evenly; GELU is a line of
        slope 1/2 near 0), and the backward pass multiplies the error it passes down by the same
        maps, transposed: that error, and with it the biases' gradient that dominates each
        block's, shrank by {grad_factor:z.1e} per block down. A constant factor per block
        is a constant step of the logarithm, a straight line on the log scale, whose slope is
        how much one block shrinks the signal. With skips each factor is I + ∂F/∂x instead, and
        the line is level.
    """,
    "05.layernorm-and-skips": """
        Because the gradient's size is not all a deep stack needs. With LayerNorms but no
        skips, block 1's gradient was {ratio:z.2f} times the one with skips, yet from block
        {first_collapsed} on every position pointed the same way (similarity
        {similarity_without:z.3f} after the last block, against {similarity_with:z.3f} with
        skips). A LayerNorm rescales each position's vector on its own; it cannot undo the
        averaging of attention, which without a skip replaces each position's vector by a
        mixture of the earlier ones. The gradient arrives at full size, but the blocks above
        can no longer tell the positions apart: only the skips carry each token's own vector
        forward.
    """,
}
