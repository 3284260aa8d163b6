"""Answers of notebook 03 (the causal mask), filled by `answer("03....", ...)`."""

ANSWERS = {
    "03.masked-entries": """
        The blocked entries are the strict upper triangle, T(T-1)/2 = {blocked:,} of the
        {n_scores:,} scores. The last query sees all {seen_by_last} keys, itself included.
    """,
    "03.predictions-per-pass": """
        It depends on where the targets come from. If each window was cut from T + 1 characters,
        inputs and targets are both [{B}, {T}] (gptlib's BatchSampler and the
        chapter's training loop do this): one pass scores B·T = {with_extra_token} predictions,
        each from its own prefix only. If the targets are taken from the same {T} characters the
        model reads (logits[:, :-1] against idx[:, 1:], as in notebook 08's loss exercise), the
        last position of each window has no target: B·(T−1) = {from_same_tokens}.
    """,
    "03.minus-infinity": """
        The softmax exponentiates: e^0 = 1, so a 0-filled key still gets weight (in section 3
        the future kept {leak:z.3f} of each row's weight on average), while e^-∞ =
        {exp_minus_inf:z.0f} exactly. A very negative finite number such as -1e9 also gives 0 in
        float32, but -∞ says what is meant and cannot be outweighed.
    """,
    "03.which-tokens": """
        Token 3: {token_3_reaches_5}, position 5 may attend to it (3 ≤ 5). Token 7:
        {token_7_reaches_5}, it lies in position 5's future; on the model of section 4, changing
        it moved positions {first_moved} to {last_moved} only.
    """,
    "03.entropy-floor": """
        The floor ({floor:z.3f} nats per character) is the information the text really contains;
        a predictor that sees only the past cannot average below it. The unmasked model scored
        {unmasked_loss:z.2f}: position t attended to t+1 (weight {next_token_attention:z.2f} in
        its strongest head) and copied its target. At generation time there is no t+1 to copy,
        and predicting from the prefix alone it scores {unmasked_prefix_loss:z.2f}, against
        {masked_prefix_loss:z.2f} for the masked model.
    """,
    "03.bright-line": """
        A cell (t, t+1) is the weight query t puts on key t+1, which holds the very character
        position t is trained to predict. Head {head} of layer {layer} puts {weight_on_next:z.2f}
        there on average: it fetches its answer from one step ahead and copies it. The line sits
        one step above the diagonal because (t, t) is a token reading itself, which the mask
        allows, while (t, t+1) is the first cell the mask forbids and the one that holds the
        answer. The last query has no t+1 inside its window: that is the one position whose loss
        stayed high. In the masked model every cell above the diagonal is −∞ before the softmax,
        so its weight on t+1 is exactly {masked_weight_on_next:z.1f} and those cells are dark.
    """,
}
