"""Notebook 05's exercises: the MLP module is checked against gptlib's with copied weights, the
deep-stack measurements against computations done another way; right answers written in other
ways pass, and structural slips are explained."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gptlib import GPT, MLP, GPTConfig
from gptlib.lessons.engine.checks import REGISTRY, CheckError, verify
from gptlib.lessons.nb05 import checks as nb05
from gptlib.lessons.nb05 import experiments as residuals
from gptlib.lessons.shared.references import loss_gradient_norms


class WithModules(nn.Module):
    """GELU and dropout as modules, the layers built in another order."""

    def __init__(self, d_model):
        super().__init__()
        self.down = nn.Linear(4 * d_model, d_model)
        self.up = nn.Linear(d_model, 4 * d_model)
        self.act = nn.GELU()
        self.drop = nn.Dropout(0.0)

    def forward(self, x):
        return self.drop(self.down(self.act(self.up(x))))


class ByHand(nn.Module):
    """GELU written with erf, the products with F.linear on flattened tokens, in float64."""

    def __init__(self, d_model, expansion=4):
        super().__init__()
        self.up = nn.Linear(d_model, expansion * d_model)
        self.down = nn.Linear(expansion * d_model, d_model)

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1]).double()
        h = F.linear(flat, self.up.weight.double(), self.up.bias.double())
        h = 0.5 * h * (1 + torch.erf(h / math.sqrt(2)))
        y = F.linear(h, self.down.weight.double(), self.down.bias.double())
        return y.view(x.shape).to(x.dtype)


@pytest.mark.parametrize("answer", [WithModules, ByHand])
def test_other_right_mlps_pass(answer):
    assert verify("mlp", answer) == 2


def test_the_reference_is_gptlibs_mlp_and_inputs_use_gelus_bend():
    d, x, weights = REGISTRY["mlp"].inputs()[0]
    mlp = MLP(d)
    mlp.load_state_dict(weights)
    hidden = mlp.up(x)
    assert (hidden < -0.5).float().mean() > 0.2  # many inputs where GELU and ReLU differ
    assert all(w.abs().min() > 0 or w.dim() == 2 for w in weights.values())


class Sequential(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )

    def forward(self, x):
        return self.net(x)


class Extra(WithModules):
    def __init__(self, d_model):
        super().__init__(d_model)
        self.scale = nn.Parameter(torch.ones(d_model))


class HiddenTwoD(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.up, self.down = nn.Linear(d_model, 2 * d_model), nn.Linear(2 * d_model, d_model)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


STRUCTURAL = {
    "layers not named up and down": (Sequential, "no up.weight or down.weight"),
    "an extra parameter": (Extra, "parameters gptlib's does not: ['scale']"),
    "hidden width 2d": (HiddenTwoD, "up.weight has shape [16, 8], gptlib's MLP(8) has [32, 8]"),
}


@pytest.mark.parametrize(("answer", "said"), STRUCTURAL.values(), ids=STRUCTURAL)
def test_structural_slips_are_explained(answer, said):
    with pytest.raises(CheckError) as info:
        verify("mlp", answer)
    assert said in str(info.value)


def test_a_function_instead_of_a_module_is_explained():
    with pytest.raises(CheckError, match="should make an nn.Module"):
        verify("mlp", lambda d_model: lambda x: x)


# ---------------------------------------------------------------- position_similarity


def _similarity_by_cosine_similarity(h):
    c = h - h.mean(-1, keepdim=True)
    cos = F.cosine_similarity(c[:, :, None, :], c[:, None, :, :], dim=-1)  # [B, T, T]
    T = h.shape[1]
    return (cos.sum(dim=(1, 2)) - cos.diagonal(dim1=1, dim2=2).sum(-1)).mean() / (T * (T - 1))


def _similarity_by_loops(h):
    B, T, _ = h.shape
    total, count = 0.0, 0
    for b in range(B):
        for i in range(T):
            for j in range(T):
                if i != j:
                    u = h[b, i] - h[b, i].mean()
                    v = h[b, j] - h[b, j].mean()
                    total += float(u @ v / (u.norm() * v.norm()))
                    count += 1
    return total / count


def _similarity_through_layer_norm(h):
    """F.layer_norm centres each vector and divides it by its spread, F.normalize makes it
    unit: the directions are those of the centred vectors."""
    unit = F.normalize(F.layer_norm(h.double(), h.shape[-1:]), dim=-1)
    cos = torch.einsum("btd,bsd->bts", unit, unit)
    T = h.shape[1]
    return cos.masked_select(~torch.eye(T, dtype=torch.bool)).mean().float()


SIMILARITIES = {
    "F.cosine_similarity": _similarity_by_cosine_similarity,
    "loops over pairs": _similarity_by_loops,
    "F.layer_norm then einsum": _similarity_through_layer_norm,
}


@pytest.mark.parametrize("answer", SIMILARITIES.values(), ids=SIMILARITIES)
def test_other_right_similarities_pass(answer):
    assert verify("position_similarity", answer) == 3


def test_the_similarity_reference_at_its_extremes():
    same = torch.randn(1, 1, 8).expand(2, 5, 8)
    assert nb05._position_similarity(same * torch.rand(2, 5, 1) + 3) == pytest.approx(1.0)
    e = torch.eye(4)
    orthogonal = torch.stack([e[0] - e[1], e[2] - e[3]])[None]  # centred and orthogonal
    assert nb05._position_similarity(orthogonal) == pytest.approx(0.0, abs=1e-7)
    opposite = torch.stack([e[0] - e[1], e[1] - e[0]])[None]
    assert nb05._position_similarity(opposite) == pytest.approx(-1.0)


def test_the_sweeps_scaling_changes_no_cosine():
    """gradient_flow hands the similarity each vector scaled to largest entry 1: a stack
    without skips shrinks its stream to 1e-100 and below, where the reference's division by
    the norm would still work but the small-number guards of F.normalize and
    F.cosine_similarity (1e-12, 1e-8) would not."""
    flow = residuals.gradient_flow(
        24, residual=False, layer_norm=False, grad_norms=loss_gradient_norms
    )
    assert flow.stream_norms[-1] < 1e-100
    last = flow.outputs[-1]
    raw = last * torch.rand(last.shape[:-1] + (1,), dtype=torch.float64)  # any positive sizes
    expected = nb05._position_similarity(last).item()
    assert nb05._position_similarity(raw).item() == pytest.approx(expected, abs=1e-12)
    assert _similarity_by_cosine_similarity(last).item() == pytest.approx(expected, abs=1e-9)


# ---------------------------------------------------------------- fan_in_init_


def _init_by_kaiming(model, gain_after_gelu):
    """kaiming_normal_ with the linear nonlinearity draws std 1/√fan_in; the gain multiplies."""
    for block in model.blocks:
        for layer in (block.attn.qkv, block.attn.proj, block.mlp.up, block.mlp.down):
            nn.init.kaiming_normal_(layer.weight, mode="fan_in", nonlinearity="linear")
            nn.init.zeros_(layer.bias)
        with torch.no_grad():
            block.mlp.down.weight.mul_(gain_after_gelu)
    nn.init.kaiming_normal_(model.lm_head.weight, nonlinearity="linear")
    for table in (model.tok_emb, model.pos_emb):
        nn.init.normal_(table.weight)


def _init_by_copy(model, gain_after_gelu):
    """randn_like copied in under no_grad, layers found by their parameters' names."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "emb" in name:
                p.copy_(torch.randn_like(p))
            elif name.endswith("bias") and "ln" not in name:
                p.zero_()
            elif name.endswith("weight") and p.dim() == 2:
                gain = gain_after_gelu if "mlp.down" in name else 1
                p.copy_(torch.randn_like(p) * gain / p.shape[1] ** 0.5)
    return model


INITS = {"kaiming_normal_": _init_by_kaiming, "randn_like by name": _init_by_copy}


@pytest.mark.parametrize("answer", INITS.values(), ids=INITS)
def test_other_right_initialisations_pass(answer):
    assert verify("fan_in_init_", answer) == 4


@pytest.mark.parametrize("seed", range(5))
def test_a_right_initialisation_drawn_in_any_order_passes(seed):
    """The statistics come from samples: another order of draws gives other samples, which
    must stay inside the tolerance (here: five different orders of the reference's draws)."""

    def shuffled(model, gain):
        torch.manual_seed(100 + seed)
        modules = list(model.named_modules())
        order = torch.randperm(len(modules)).tolist()
        for i in order:
            name, module = modules[i]
            if isinstance(module, nn.Linear):
                g = gain if name.endswith("mlp.down") else 1.0
                nn.init.normal_(module.weight, std=g / module.in_features**0.5)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight)

    assert verify("fan_in_init_", shuffled) == 4


def _init_blocks_and_tables(model, gain_after_gelu):
    """Every block's linear layers and both tables, by their attributes: the unembedding,
    outside the blocks, is forgotten."""
    for block in model.blocks:
        for layer in (block.attn.qkv, block.attn.proj, block.mlp.up, block.mlp.down):
            gain = gain_after_gelu if layer is block.mlp.down else 1.0
            nn.init.normal_(layer.weight, std=gain / layer.in_features**0.5)
            nn.init.zeros_(layer.bias)
    nn.init.normal_(model.tok_emb.weight)
    nn.init.normal_(model.pos_emb.weight)


def test_an_initialisation_that_forgets_the_unembedding_is_named_not_sent_to_the_gain():
    with pytest.raises(CheckError) as info:
        verify("fan_in_init_", _init_blocks_and_tables)
    assert info.value.mistake == "lm-head-untouched"
    assert "GELU's output)" in info.value.detail and "gain on top" not in info.value.detail


def _he_defaults(model, gain_after_gelu):
    """kaiming_normal_ as it comes (fan-in, gain √2 for a ReLU) on every linear layer."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.kaiming_normal_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight)


def _gain_everywhere(model, gain_after_gelu):
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=gain_after_gelu / module.in_features**0.5)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight)


@pytest.mark.parametrize(
    ("answer", "mistake"),
    [(_he_defaults, "he-default-gain"), (_gain_everywhere, "gain-everywhere")],
)
def test_he_initialisations_default_gain_and_the_gain_everywhere_are_told_apart(answer, mistake):
    """A student trial's kaiming_normal_ with its defaults was told 'no catalogued mistake';
    √2 everywhere and the given gain everywhere differ by less than the tolerance at GELU's
    gain, so the first input's gain (1.8) keeps them apart."""
    with pytest.raises(CheckError) as info:
        verify("fan_in_init_", answer)
    assert info.value.mistake == mistake


def test_the_initialisation_keeps_each_sublayers_signal_at_its_inputs_size():
    """What the exercise is for: with the GELU gain an MLP hands on a signal of its input's
    second moment; without it, about 0.425 of it."""
    torch.manual_seed(0)
    model = nb05._fan_in_init_(GPT(GPTConfig(vocab_size=5, d_model=256, n_layers=1)), 1.5335)
    x = torch.randn(64, 256)
    assert model.blocks[0].mlp(x).pow(2).mean().item() == pytest.approx(1.0, rel=0.1)
    nb05._fan_in_init_(model, 1.0)
    assert model.blocks[0].mlp(x).pow(2).mean().item() == pytest.approx(0.425, rel=0.1)


def test_the_initialisation_statistics_of_the_reference():
    weights, bias, embeddings, norms = REGISTRY["fan_in_init_"].as_function(nb05._fan_in_init_)(
        nb05.InitModel(2, layer_norm=True), 1.5335
    )
    torch.testing.assert_close(weights, torch.tensor([1, 1, 1, 1.5335, 1]), atol=0.03, rtol=0)
    assert bias == 0 and norms == 0
    torch.testing.assert_close(embeddings, torch.ones(2), atol=0.03, rtol=0)


# ---------------------------------------------------------------- stream_readout


def _readout_by_hooks(model, idx, targets):
    """The streams caught on their way through the model's own forward pass; the loss from
    log-probabilities gathered at the targets, in float64; the accuracy counted."""
    streams = []
    hooks = [model.blocks[0].register_forward_pre_hook(lambda _, args: streams.append(args[0]))]
    hooks += [b.register_forward_hook(lambda *a: streams.append(a[-1])) for b in model.blocks]
    try:
        with torch.no_grad():
            model(idx)
    finally:
        for hook in hooks:
            hook.remove()
    losses, accuracies = [], []
    for stream in streams:
        logits = model.lm_head(model.ln_f(stream)).double()
        picked = logits.log_softmax(dim=-1).gather(-1, targets[..., None])
        losses.append(-picked.mean())
        accuracies.append((logits.argmax(dim=-1) == targets).sum() / targets.numel())
    return torch.stack(losses), torch.stack(accuracies)


def _readout_as_floats(model, idx, targets):
    x = model.tok_emb(idx) + model.pos_emb.weight[: idx.shape[1]]
    losses, accuracies = [], []
    for stage in range(len(model.blocks) + 1):
        if stage:
            x = model.blocks[stage - 1](x)
        logits = model.lm_head(model.ln_f(x))
        losses.append(F.cross_entropy(logits.transpose(1, 2), targets).item())
        accuracies.append((logits.argmax(dim=-1) == targets).float().mean().item())
    return torch.tensor(losses), torch.tensor(accuracies)


def _readout_last_from_the_model(model, idx, targets):
    losses, accuracies = _readout_by_hooks(model, idx, targets)
    logits, loss = model(idx, targets)  # the last stage is the model's own prediction
    losses[-1], accuracies[-1] = loss, (logits.argmax(-1) == targets).double().mean()
    return losses, accuracies


READOUTS = {
    "hooks and log-probabilities": _readout_by_hooks,
    "numbers gathered, then a tensor": _readout_as_floats,
    "last stage from the model": _readout_last_from_the_model,
}


@pytest.mark.parametrize("answer", READOUTS.values(), ids=READOUTS)
def test_other_right_readouts_pass(answer):
    assert verify("stream_readout", answer) == 3


def test_the_readouts_last_stage_is_the_models_own_prediction():
    for model, idx, targets in REGISTRY["stream_readout"].inputs():
        losses, accuracies = nb05._stream_readout(model, idx, targets)
        logits, loss = model(idx, targets)
        assert len(losses) == len(model.blocks) + 1
        assert losses[-1].item() == pytest.approx(loss.item(), abs=1e-5)
        assert accuracies[-1] == (logits.argmax(-1) == targets).float().mean()


# ---------------------------------------------------------------- read for every exercise
# tests/lessons/engine/checks/test_every_exercise.py runs, for each exercise of this lesson,
# every right answer written another way (at least two) through its check, and holds the one
# named in INDEPENDENT, which shares no code with the reference, to not copying its formula.
RIGHT_ANSWERS = {
    "mlp": {"modules": WithModules, "by hand in float64": ByHand},
    "fan_in_init_": INITS,
    "position_similarity": SIMILARITIES,
    "stream_readout": READOUTS,
}
INDEPENDENT = {
    "mlp": "by hand in float64",
    "fan_in_init_": "kaiming_normal_",
    "position_similarity": "loops over pairs",
    "stream_readout": "hooks and log-probabilities",
}
