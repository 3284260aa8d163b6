"""Answers of notebook 07 (build the GPT), filled by `Question("07....", ...)`."""

ANSWERS = {
    "07.init-loss": """
        At one position the loss is logsumexp(z) minus the target's logit z_t. Shifting every
        logit of the position by the same amount changes neither, so measure them from their
        mean: u = z - mean(z), which averages 0. The mean of exp(u) is at least exp of the mean
        of u, that is 1, so logsumexp(u) is at least ln V, equal only when all V logits are
        equal; for a small spread it is ln V + var(u)/2 (the second-order term of the
        exponential). Here σ = {sigma:z.3f} within a position gives σ²/2 = {half_variance:z.3f},
        against a measured spread cost of {spread_cost:z.3f}.

        The target lead, the mean of u_t, is luck: at initialisation nothing ties a position's
        largest logits to the character that follows it, so the lead is a small number of
        either sign that depends on the weights drawn. Over five seeds of this model it ran from
        {lowest_lead:z.3f} to {highest_lead:z.3f}.

        gptlib starts with GPT-2's smaller weights (std 0.02 instead of PyTorch's defaults): its
        logits spread by only σ = {sigma_gpt2:z.3f} within a position, so their spread costs
        {spread_gpt2:z.3f}, and its first loss, {loss_gpt2:z.3f}, sits closer to ln V =
        {ln_v:z.3f}, on whichever side its target lead, {lead_gpt2:z.3f}, puts it.
    """,
    "07.tying": """
        V·d = {vocab} · {d_model} = {saving:,} parameters, {share:z.1%} of this model: a
        41-character vocabulary makes the tables small. With GPT-2's vocabulary of 50,257 tokens
        at d = 768 the same sharing saves {gpt2_saving:,} of {gpt2_untied:,} parameters
        ({gpt2_share:z.0%}): GPT-2 small ties them and has {gpt2_tied:,}. The model still works
        because reading a token in (a row of E) and scoring it as the next token (a row of W_U)
        can use the same vector.
    """,
    "07.max-len": """
        The training windows are {block_size} characters long, so the loss only ever reaches
        rows 0–{last_trained} of the position table; rows {block_size}–{last_row} would keep
        their random initial values (weight decay aside). Generating past {block_size}
        characters, a model with max_len = 256 reads those untrained rows. With max_len =
        {block_size} the crop keeps it on the positions it learned, and it has {fewer:,} fewer
        parameters. The chapter's script trains on windows of 64 with max_len = 256, then
        generates {n_new} characters after a {prompt}-character prompt: its last {untrained}
        draws read windows that include untrained positions.
    """,
    "07.memorisation-curve": """
        The orange line, {one_character:z.2f} nats, is the best loss from the current character
        alone: the statistics of which character follows which. A model learns them first
        because they need no attention: the token's own vector travels up the residual stream
        to the unembedding, and a table of which character follows which is a matrix product
        away. Reading earlier characters needs heads whose queries and keys have found each
        other, which takes longer; once they have, the loss leaves the orange line (it stays
        below it from step {below_from}) and falls towards 0, because a repeated sonnet, read
        with a few dozen characters of context, holds almost no uncertainty: the model has
        memorised it, down to {final:z.2f} nats a character.

        On a real corpus a training loss far below what the text allows means the same thing,
        memorisation, which is why notebook 08 watches a loss on text the model never trains
        on.
    """,
    "07.same-machine": """
        The copy replaces every weight of your model, so how either model was initialised
        plays no part: what is compared is the computation. torch.testing.assert_close allows
        float32 rounding only (relative {rtol:z.1e}, absolute {atol:z.0e}); the fused kernel and
        the written-out softmax compute the same sums in a different order, nothing more. Any
        real difference (the LayerNorms placed differently, a missing final norm, √d instead
        of √d_h, ReLU instead of GELU) moves the logits far beyond that: the capstone's check
        shows each of these as a named mistake.
    """,
}
