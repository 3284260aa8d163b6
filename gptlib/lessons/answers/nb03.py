"""Answers of notebook 03 (the causal mask), filled by `answer("03....", ...)`."""

ANSWERS = {
    "03.masked-entries": """
        The blocked entries are the strict upper triangle, T(T-1)/2 = {blocked:,} of the
        {n_scores:,} scores. The last query sees all {seen_by_last} keys, itself included.
    """,
    "03.predictions-per-pass": """
        One per position of every window: B·T = {n_predictions} predictions from a single pass,
        each made from its own prefix only (section 2 checked this against {T} separate prefix
        passes).
    """,
    "03.minus-infinity": """
        The softmax exponentiates: e^0 = 1, so a 0-filled key still gets weight (in section 1
        the future kept {leak:.3f} of each row's weight on average), while e^-∞ =
        {exp_minus_inf:.0f} exactly. A very negative finite number such as -1e9 also gives 0 in
        float32, but -∞ says what is meant and cannot be outweighed.
    """,
    "03.which-tokens": """
        Token 3: {token_3_reaches_5}, position 5 may attend to it (3 ≤ 5). Token 7:
        {token_7_reaches_5}, it lies in position 5's future; on the model of section 2, changing
        it moved positions {first_moved} to {last_moved} only.
    """,
    "03.entropy-floor": """
        The floor ({floor:.3f} nats per character) is the information the text really contains;
        a predictor that sees only the past cannot average below it. The unmasked model scored
        {unmasked_loss:.2f}: position t attended to t+1 (weight {next_token_attention:.2f} in
        its strongest head) and copied its target. At generation time there is no t+1 to copy,
        and predicting from the prefix alone it scores {unmasked_prefix_loss:.2f}, against
        {masked_prefix_loss:.2f} for the masked model.
    """,
}
