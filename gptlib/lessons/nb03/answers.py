"""Answers of notebook 03 (the causal mask), filled by `Question("03....", ...)`."""

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
        model reads (logits[:, :-1] against idx[:, 1:], as in section 4), the last position of
        each window has no target: B·(T−1) = {from_same_tokens}.
    """,
    "03.diagonal-blocked": """
        Row 0 would have no key left: every score in it is −∞. What that gives depends on the
        code. The softmax written out (your function, torch.softmax) divides 0 by 0 and the row
        is NaN ({nan_rows} of the {T} rows of section 3's picture); the next layer mixes every
        position with position 0's output, and any weight times NaN is NaN, so after one more
        mixing {nan_after} of {T} rows are NaN: the bug announces itself. The course's model does
        not take that path: gptlib's attention calls F.scaled_dot_product_attention, which in
        recent versions of torch (the one here included) returns 0 for a row with no key. On the
        same scores it gives {fused_nan} NaN, and row 0's output is {fused_row0:z.1f} in every
        feature: position 0 silently gets nothing from attention. Section 4's model, every
        attention run that way, gives {model_nan} NaN among its {n_logits} logits and a finite
        loss, {model_loss:z.2f}: nothing announces the bug (with the softmax written out instead,
        {written_nan} of them are NaN).
        Either way, position t would not lose its own token: the residual connection adds the
        attention's output to x rather than replacing x, so the token reaches its position past
        the attention. It could only no longer weigh itself against the earlier keys.
    """,
    "03.no-detour": """
        Every hop goes one way. In each layer, position i reads only the keys j ≤ i, so
        information moves from a position to the same or a later one, never to an earlier one.
        A chain of such hops, through any number of layers, can only move forwards: token 7
        reaches positions 7 and after, never 5. The measurement of section 5 agrees: on the
        two-layer model, the largest change anywhere before the changed token was exactly
        {largest_before:z.1f}, not merely small. A bug that moves information between positions
        inside a layer, such as notebook 04's wrong reshape, opens such detours.
    """,
    "03.worse-than-guessing": """
        The loss punishes confidence in a wrong answer. In training, the unmasked model had its
        answer in view (key t+1) at every position but a window's last, so it learned to be
        sure. From a prefix alone it is still sure, with {top_probability:z.2f} of the
        probability on its top choice on average, but that choice is right only
        {top_right:z.0%} of the time. The right character then gets little: in
        {below_uniform:z.0%} of the predictions it gets less than the 1/{V} of a uniform guess,
        and −ln of a small probability is large (−ln 0.01 = 4.6). A uniform guess pays
        ln {V} = {uniform:z.2f} on every character, whatever comes; the unmasked model paid
        {prefix_loss:z.2f} on average.
    """,
    "03.one-step-mask": """
        No. The cheat needs only that one key: head {head} of layer {layer} of the unmasked model
        puts {on_next:z.2f} of its weight on key t+1 and {beyond:z.2f} on all the keys after it
        together. Key t+1 holds the very character position t must predict, so with it visible
        the model can copy its answer as before. The mask has to block every key j > i.
    """,
}
