"""Answers of notebook 09 (cost accounting), filled by `Question("09....", ...)`."""

ANSWERS = {
    "09.gpt-1b": """
        The blocks: 12·L·d² = 12 × 24 × 2048² = {blocks:,} ≈ {blocks_b:z.2f}B. The one shared
        embedding matrix: V·d = 50,000 × 2048 = {embeddings:,} ≈ {embeddings_b:z.2f}B (tied, so
        the output layer adds nothing). About {total_b:z.2f}B in all. The exact count of such a
        GPT, with biases, LayerNorms and 2,048 learned positions, is {exact:,}: only
        {extra:z.1%} more.
    """,
    "09.frozen-weights": """
        About two forward passes, {frozen_ratio:z.3f} counted, against {full_ratio:z.3f} when
        every weight trains: roughly 4N a token instead of 6N. The backward pass still carries
        the gradient down through every layer, and for each weight matrix that is a product as
        large as the forward one; what it skips is the other product, the gradient of the frozen
        weights. The attention scores have no weights, so their backward pass (gradients for
        the queries, the keys, the attention weights and the values) still costs twice their
        forward: that is the {extra:z.3f} above 2.
    """,
    "09.long-context": """
        At T = 32,768 the attention term is 4·L·T·d = {attention:z.1f} GFLOPs per token,
        against 2N = {two_n:z.1f} GFLOPs: {share:z.0%} of 2N, so attention now costs more than
        all the weights together. A kernel that skips the masked half still computes
        {causal:z.1f} GFLOPs ({causal_share:z.0%} of 2N). The two are equal where 4·L·T·d = 2N,
        at T = 2N / 4·L·d ≈ {crossing:z,.0f}; beyond it, 6N underestimates the bill badly.
    """,
    "09.half-mfu": """
        No. At 20% of the peak the same 6·N·D FLOPs take twice as long, {hours_20:z,.0f}
        A100-hours instead of {hours_40:z,.0f}, far more than Meta's {reported:,}. Turned around,
        {reported:,} A100-hours at 20% of the peak deliver {flops_20:z.2e} FLOPs, enough at 6N a
        token for {trillions:z.2f} trillion tokens, about half the 2 trillion the model was
        trained on. The reported hours leave the MFU little room: for 6·N·D they imply one near
        40%.
    """,
    "09.generation-with-cache": """
        With the cache the 4,096th token is one position through the model: 2N = {two_n:z.1f}
        GFLOPs for the weights, plus 4·L·T·d = {attention:z.2f} GFLOPs for its query against the
        {context:,} cached keys and the weighted values, {cached:z.1f} GFLOPs in all.
        Recomputing feeds all {context:,} positions through the model, {recomputed:z.3g} FLOPs
        (with the whole T × T scores, as the written-out attention computes them): {ratio:z,.0f}
        times as much, the number of positions. That is why generation keeps a KV cache.
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
