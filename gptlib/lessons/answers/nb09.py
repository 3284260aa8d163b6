"""Answers of notebook 09 (cost accounting), filled by `answer("09....", ...)`."""

ANSWERS = {
    "09.gpt-1b": """
        The blocks: 12·L·d² = 12 × 24 × 2048² = {blocks:,} ≈ {blocks_b:z.2f}B. The one shared
        embedding matrix: V·d = 50,000 × 2048 = {embeddings:,} ≈ {embeddings_b:z.2f}B (tied, so
        the output layer adds nothing). About {total_b:z.2f}B in all. The exact count of such a
        GPT, with biases, LayerNorms and 2,048 learned positions, is {exact:,}: only
        {extra:z.1%} more.
    """,
    "09.training-3x": """
        Generating a token runs only the forward pass: about 2N FLOPs. Training also runs the
        backward pass, which for every weight matrix computes two products as large as the
        forward one: the gradient with respect to the layer's input (passed down to the layer
        below) and the gradient with respect to the weights (used by the update). 2N + 4N = 6N.
        Section 4 counted {ratio:z.3f} forward passes' worth of FLOPs for one forward and
        backward pass of our GPT.
    """,
    "09.long-context": """
        At T = 32,768 the attention term is 4·L·T·d = {attention:z.1f} GFLOPs per token,
        against 2N = {two_n:z.1f} GFLOPs: {share:z.0%} of 2N, so attention now costs more than
        all the weights together. A kernel that skips the masked half still computes
        {causal:z.1f} GFLOPs ({causal_share:z.0%} of 2N). The plot of section 5 put Llama 2 7B's
        crossing at T ≈ {crossing:z,.0f}; beyond it, 6N underestimates the bill badly.
    """,
    "09.half-mfu": """
        Twice as many: {hours_20:z,.0f} A100-hours instead of {hours_40:z,.0f}. The work, 6·N·D
        FLOPs, does not change; at 20% of the peak it is done at half the rate.
    """,
    "09.counter-below-2n": """
        Only a weight that is multiplied into the token's vector costs a multiply-add. Of our
        GPT's {n:,} parameters, the {looked_up:,} of the token and position tables are looked
        up, not multiplied, and the {scaled:,} biases and LayerNorm weights only add and
        scale, work the counter does not count at all. It counts exactly 2 × {matmul:,}
        matrix weights (the output layer included) per token, plus the attention scores:
        {counted:z,.0f} FLOPs per token, {gap:z.1%} below the chapter's 2N + 4·L·T·d.
    """,
    "09.kv-batch-8": """
        2·L·T·d·B values of 2 bytes: 2 × 32 × 4,096 × 4,096 × 8 × 2 = {n_bytes:,} bytes, which
        is {gib:z.0f} GiB or {gb:z.1f} GB (GiB = 2³⁰ bytes, GB = 10⁹). That is more than the
        model's own weights in bf16, {weights_gib:z.2f} GiB ({weights_gb:z.2f} GB). Llama 3 405B,
        whose 128 query heads share 8 key/value heads, keeps {kv_405_gib:z.2f} GiB for one
        sequence of the same length despite its 126 layers of width 16,384.
    """,
    "09.attention-plot": """
        Each line is 4·L·T·d / 2N. N does not depend on T, so the ratio is proportional to T:
        on log-log axes each line is straight with slope 1 (doubling T from 4K to 8K multiplies
        it by {doubling:z.3f}), and the lines are parallel. Their heights differ by L·d / N.
        With N ≈ 12·L·d² the ratio is about T / 6d, so the narrowest model, GPT-2 small
        (d = 768), sits highest and the widest, Llama 3 405B (d = 16,384), lowest. The crosses
        mark where attention equals 2N: T ≈ {crossing_small:z,.0f} for GPT-2 small, later than
        its 6d = {six_d_small:,} because embeddings, biases and norms make its N
        {factor_small:z.2f} times 12·L·d², and T ≈ {crossing_405:z,.0f} for Llama 3 405B, whose
        long-context version reads {long_context:,} tokens: past its crossing.
    """,
}
