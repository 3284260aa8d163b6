"""Answers of notebook 02 (scaled dot-product attention), filled by `answer("02....", ...)`."""

ANSWERS = {
    "02.dk-64": """
        √64 = {sqrt_dk:z.0f}; measured above: {std:z.2f}. Scores spread over about ±8 to ±16 push
        the softmax towards one-hot (mean max weight {max_weight:z.3f} over 16 keys). Dividing by
        √64 = 8 brings the spread back to 1 (measured {std_scaled:z.3f}) and the max weight down
        to {max_weight_scaled:z.3f}.
    """,
    "02.divided-by-dk": """
        std = √128 / 128 = {expected_std:z.3f} (measured {std:z.3f}). The scores are nearly equal,
        so every row is close to uniform: mean max weight {max_weight:z.3f} against 1/16 =
        {uniform:z.4f}. The opposite failure: attention can hardly prefer any key. The exercise
        check above recognises this mistake.
    """,
    "02.one-hot-gradient": """
        The Jacobian of the softmax is diag(p) - p pᵀ. For a one-hot p it is exactly zero (‖J‖ =
        {jacobian_norm:z.1f}): whatever the upstream gradient, nothing flows back to the scores,
        so W_Q and W_K receive no signal. Unscaled, the mean gradient norm fell from
        {grad_norm_first:z.3f} at d_k = 1 to {grad_norm_last:z.3f} at d_k = 1024; scaled, it
        stayed at {grad_norm_scaled:z.3f}.
    """,
    "02.saturation-curves": """
        Unscaled, the scores spread with std √d_k (measured {std_1:z.2f} at d_k = 1, {std_1024:z.1f}
        at d_k = 1024). The softmax turns score differences into weight ratios, e^Δ, so as the
        spread grows the top score of a row pulls ahead of the others by more and more: the
        mean max weight climbs from {max_weight_1:z.3f} towards 1 ({max_weight_1024:z.3f} at
        1024) and the entropy falls towards 0 ({entropy_1024:z.3f} nats). The gradient through
        the softmax is (diag(p) − p pᵀ) g, which vanishes as p becomes one-hot: after a peak of
        {grad_peak:z.3f} at small widths it falls to {grad_1024:z.3f}.

        Scaled, every width hands the softmax scores with the same spread, std 1 (the table of
        section 5), so the rows look alike whatever d_k: the mean max weight stays between
        {scaled_low:z.3f} and {scaled_high:z.3f}, the entropy and the gradient stay level too.
    """,
    "02.training-stall": """
        At the first step the unscaled scores spread with std {score_std:z.1f}, so each query's
        softmax is nearly one-hot (mean max weight {max_weight:z.2f}) on a pair chosen by the
        random initial weights, not by the query: the mean weight on the queried pair was
        {answer_weight:z.3f}, about 1/{n_pairs}. The head reads a pair unrelated to the query,
        its output says little about the answer, and the loss sits near guessing, ln
        {n_values} = {chance:z.2f} nats.

        It stays there because the saturated softmax passes little gradient: ‖∂L/∂z‖ was
        {grad_ratio:z.2f} times the scaled head's, and the gradient on the queried pair's score,
        proportional to that pair's small weight, {answer_ratio:z.2f} times. Training gets
        almost no push towards the right pair: learning stalls.
    """,
}
