"""Answers of notebook 04 (multi-head attention), filled by `answer("04....", ...)`."""

ANSWERS = {
    "04.head-size": """
        d_h = 128 / 4 = {d_head}. The layer holds W_QKV (3d² + 3d) and W_O (d² + d): 4d² + 4d =
        {n_params_4:,} parameters, and {n_params_8:,} at h = 8, the same for any h dividing 128.
        The head count only decides how the d features are grouped.
    """,
    "04.score-tensor": """
        [12, 4, 64, 64], that is {entries_4:,} entries; q kᵀ costs 2·B·T²·d = {flops_4:,} FLOPs.
        At h = 8 the FLOPs are the same ({flops_8:,}), but there are twice as many entries
        ({entries_8:,}) to softmax and store.
    """,
    "04.split-without-transpose": """
        Tokens {tokens_in_head_0}: head 0 takes the first T·d_h = {first_numbers} numbers of
        each sequence, all 128 features of the first T/h tokens, and nothing of the others.
    """,
    "04.scale-per-head": """
        Each head's dot product sums only d_h products, so at initialisation its variance is d_h
        (notebook 02), not d. Dividing by √d = {sqrt_d:.1f} instead of √d_h = {sqrt_d_head:.2f}
        (d = 128, h = 4) would shrink every score by a further √h = {sqrt_h:.0f} and flatten
        every head's softmax; exercise 3's check names that mistake.
    """,
    "04.torch-mask": """
        Torch reads True as blocked, so each query may see only its future, and the last query,
        which has none, outputs NaN: section 5 found NaN at positions {nan_rows}. Pass
        ~causal_mask(T).
    """,
}
