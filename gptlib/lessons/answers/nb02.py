"""Answers of notebook 02 (scaled dot-product attention), filled by `answer("02....", ...)`."""

ANSWERS = {
    "02.dk-64": """
        √64 = {sqrt_dk:.0f}; measured above: {std:.2f}. Scores spread over about ±8 to ±16 push
        the softmax towards one-hot (mean max weight {max_weight:.3f} over 16 keys). Dividing by
        √64 = 8 brings the spread back to 1 (measured {std_scaled:.3f}) and the max weight down
        to {max_weight_scaled:.3f}.
    """,
    "02.divided-by-dk": """
        std = √128 / 128 = {expected_std:.3f} (measured {std:.3f}). The scores are nearly equal,
        so every row is close to uniform: mean max weight {max_weight:.3f} against 1/16 =
        {uniform:.4f}. The opposite failure: attention can hardly prefer any key. The exercise
        check above recognises this mistake.
    """,
    "02.one-hot-gradient": """
        The Jacobian of the softmax is diag(p) - p pᵀ. For a one-hot p it is exactly zero (‖J‖ =
        {jacobian_norm:.1f}): whatever the upstream gradient, nothing flows back to the scores,
        so W_Q and W_K receive no signal. Unscaled, the mean gradient norm fell from
        {grad_norm_first:.3f} at d_k = 1 to {grad_norm_last:.3f} at d_k = 1024; scaled, it
        stayed at {grad_norm_scaled:.3f}.
    """,
}
