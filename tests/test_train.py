"""The training loop against a hand-written reference loop, its schedule, budget and failures."""

import math
import warnings
from dataclasses import replace as dataclasses_replace

import pytest
import torch

from gptlib import GPT, GPTConfig, seed_everything
from gptlib.data import SONNETS, BatchSampler, CharTokenizer, train_val_split
from gptlib.train import (
    History,
    NonFiniteLossError,
    TrainConfig,
    Trainer,
    learning_rate,
    make_optimizer,
)
from gptlib.validation import check_token_ids

TOKENIZER = CharTokenizer.from_text(SONNETS)
TRAIN_IDS, VAL_IDS = train_val_split(TOKENIZER.encode(SONNETS))


def small_model(seed: int = 0, **overrides) -> GPT:
    seed_everything(seed)
    settings = dict(vocab_size=TOKENIZER.vocab_size, d_model=32, n_heads=4, n_layers=2, max_len=16)
    return GPT(GPTConfig(**{**settings, **overrides}))


def small_config(**overrides) -> TrainConfig:
    settings = dict(
        steps=12, batch_size=4, block_size=16, warmup_steps=3, eval_interval=5, eval_batches=2
    )
    return TrainConfig(**{**settings, **overrides})


def test_learning_rate_schedule_by_hand():
    c = TrainConfig(lr=1e-3, min_lr=1e-4, warmup_steps=4)
    mid = 1e-4 + 0.5 * 9e-4 * (1 + math.cos(math.pi * 0.5))  # cosine halfway: 5.5e-4
    assert learning_rate(0, 0.0, c) == pytest.approx(1e-3 / 4)  # warmup: 1/4 of the peak
    assert learning_rate(3, 0.0, c) == pytest.approx(1e-3)
    assert learning_rate(100, 0.5, c) == pytest.approx(mid)
    assert learning_rate(100, 1.0, c) == pytest.approx(1e-4)
    assert learning_rate(100, 1.7, c) == pytest.approx(1e-4)  # past the end: stays at min_lr
    flat = TrainConfig(lr=2e-3, min_lr=2e-3, warmup_steps=0)
    assert learning_rate(0, 0.3, flat) == pytest.approx(2e-3)


def reference_losses(model: GPT, config: TrainConfig) -> list[float]:
    """The same run written out: plain (for-loop) AdamW, two param groups, clipping, schedule."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": config.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=config.lr,
        betas=(config.beta1, config.beta2),
        foreach=False,
    )
    sampler = BatchSampler(TRAIN_IDS, config.batch_size, config.block_size, seed=config.seed)
    losses = []
    for step in range(config.steps):
        progress = step / config.steps
        cosine = config.min_lr + 0.5 * (config.lr - config.min_lr) * (
            1 + math.cos(math.pi * progress)
        )
        for group in opt.param_groups:
            group["lr"] = cosine * min(1.0, (step + 1) / config.warmup_steps)
        x, y = sampler.sample()
        logits, _ = model(x)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        opt.step()
        losses.append(loss.item())
    return losses


def test_trainer_matches_a_hand_written_loop():
    config = small_config(lr=1e-2, min_lr=1e-3, grad_clip=0.5)
    trainer = Trainer(small_model(), TRAIN_IDS, VAL_IDS, config)
    history = trainer.run(progress=False)
    expected = reference_losses(small_model(), config)
    # fused and for-loop AdamW round differently; the trajectories agree closely
    torch.testing.assert_close(
        torch.tensor(history.train_loss), torch.tensor(expected), atol=1e-5, rtol=0
    )
    assert history.step == list(range(12))


def test_the_loss_falls_from_log_vocab():
    config = small_config(steps=60, lr=1e-2, eval_interval=20)
    trainer = Trainer(small_model(), TRAIN_IDS, VAL_IDS, config)
    history = trainer.run(progress=False)
    assert history.eval_step == [0, 20, 40, 60]
    assert abs(history.eval_train_loss[0] - math.log(TOKENIZER.vocab_size)) < 0.15
    assert history.eval_train_loss[-1] < history.eval_train_loss[0] - 1.0
    assert len(history.train_loss) == len(history.lr) == 60
    assert history.lr[0] < history.lr[5] and history.lr[-1] < history.lr[5]


def test_held_out_estimate_is_the_mean_over_fixed_batches_in_eval_mode():
    model = small_model(dropout=0.2)
    trainer = Trainer(model, TRAIN_IDS, VAL_IDS, small_config(eval_batches=3))
    first = trainer.evaluate()
    assert trainer.evaluate() == first  # same batches, dropout off
    assert model.training  # mode restored
    model.eval()
    batches = trainer.eval_sets["val"]
    assert len(batches) == 3
    manual = sum(model(x, y)[1].item() for x, y in batches) / 3
    assert first["val"] == pytest.approx(manual, abs=1e-6)
    assert all(int(x.max()) < TOKENIZER.vocab_size for x, _ in batches)


def test_time_budget_stops_early_and_schedules_by_time():
    config = small_config(steps=1000, time_budget_s=1e-6)
    trainer = Trainer(small_model(), TRAIN_IDS, VAL_IDS, config)
    trainer.run(progress=False)
    assert trainer.step == 1
    assert trainer.progress() >= 1.0
    assert trainer.summary()["steps"] == 1


def test_max_steps_pauses_a_run():
    trainer = Trainer(small_model(), TRAIN_IDS, VAL_IDS, small_config())
    trainer.run(max_steps=4, progress=False)
    assert trainer.step == 4 and trainer.history.eval_step == [0, 4]
    trainer.run(progress=False)
    assert trainer.step == 12 and trainer.history.eval_step == [0, 4, 5, 10, 12]


def test_summary_counts_tokens():
    trainer = Trainer(small_model(), TRAIN_IDS, VAL_IDS, small_config(steps=3))
    trainer.run(progress=False)
    s = trainer.summary()
    assert s["steps"] == 3 and s["tokens"] == 3 * 4 * 16
    assert s["val_loss"] == pytest.approx(trainer.history.eval_val_loss[-1], abs=1e-4)
    assert s["tokens_per_s"] == pytest.approx(s["tokens"] / trainer.train_seconds, rel=1e-3)


def test_weight_decay_spares_biases_and_norms():
    trainer = Trainer(small_model(), TRAIN_IDS, VAL_IDS, small_config(weight_decay=0.3))
    decayed, spared = trainer.optimizer.param_groups
    assert decayed["weight_decay"] == 0.3 and spared["weight_decay"] == 0.0
    assert all(p.dim() == 2 for p in decayed["params"])
    assert all(p.dim() == 1 for p in spared["params"])
    n = sum(p.numel() for g in trainer.optimizer.param_groups for p in g["params"])
    assert n == trainer.model.num_parameters()


def test_the_cpu_gets_the_fused_adamw():
    optimizer = make_optimizer(small_model(), small_config())
    assert all(g["fused"] and not g["foreach"] for g in optimizer.param_groups)


class AdamWWithoutFusedKernels(torch.optim.AdamW):
    """AdamW on a device without a fused kernel: the settings are written into the param
    groups, then fused=True is refused."""

    def __init__(self, params, *args, fused: bool | None = None, **kwargs):
        super().__init__(params, *args, **kwargs)
        if fused:
            for group in self.param_groups:  # the caller's dicts, as in torch
                group["fused"] = True
            raise RuntimeError("`fused=True` requires all the params to be floating point Tensors")


def test_without_a_fused_kernel_the_optimizer_takes_foreach_and_trains(monkeypatch):
    monkeypatch.setattr(torch.optim, "AdamW", AdamWWithoutFusedKernels)
    config = small_config(weight_decay=0.3)
    trainer = Trainer(small_model(), TRAIN_IDS, VAL_IDS, config)
    decayed, spared = trainer.optimizer.param_groups
    assert decayed["foreach"] and spared["foreach"]
    assert not decayed["fused"] and not spared["fused"]
    assert decayed["weight_decay"] == 0.3 and spared["weight_decay"] == 0.0
    history = trainer.run(progress=False)
    assert len(history.train_loss) == config.steps
    assert all(math.isfinite(loss) for loss in history.train_loss)


@pytest.mark.parametrize("bad_step", [0, 3])
def test_a_non_finite_loss_stops_with_the_step_and_advice(bad_step):
    model = small_model()
    trainer = Trainer(model, TRAIN_IDS, VAL_IDS, small_config())
    trainer.run(max_steps=bad_step, progress=False)
    with torch.no_grad():
        model.lm_head.weight[0, 0] = float("nan")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(
        NonFiniteLossError, match=f"loss became nan at step {bad_step}.*lower learning rate"
    ):
        trainer.run(progress=False)
    assert trainer.step == bad_step
    after = model.state_dict()
    for k in before:
        torch.testing.assert_close(before[k], after[k], rtol=0, atol=0, equal_nan=True)


def test_an_infinite_gradient_is_caught_before_the_update():
    model = small_model()
    trainer = Trainer(model, TRAIN_IDS, VAL_IDS, small_config())
    model.tok_emb.weight.register_hook(lambda g: g * float("inf"))
    with pytest.raises(NonFiniteLossError, match="gradient norm became .* at step 0"):
        trainer.train_step()


def test_bad_configurations_are_explained():
    with pytest.raises(ValueError, match="block_size=32 exceeds the model's max_len=16"):
        Trainer(small_model(), TRAIN_IDS, VAL_IDS, small_config(block_size=32))
    with pytest.raises(ValueError, match="steps must be a positive int"):
        TrainConfig(steps=0)
    with pytest.raises(ValueError, match="need 0 < lr < 1 and 0 <= min_lr <= lr"):
        TrainConfig(lr=1e-3, min_lr=1e-2)
    with pytest.raises(ValueError, match="time_budget_s must be > 0"):
        TrainConfig(time_budget_s=0)
    with pytest.raises(ValueError, match=r"unknown TrainConfig fields \['learning_rate'\]"):
        TrainConfig.from_dict({"learning_rate": 1.0})


def test_history_round_trips_through_a_dict():
    h = History(step=[0, 1], train_loss=[4.1, 3.9], lr=[1e-3, 2e-3])
    assert History.from_dict(h.to_dict()) == h


def test_bfloat16_precision_multiplies_in_bfloat16_and_keeps_float32_state():
    losses = {}
    for precision in ("float32", "bfloat16"):
        model = small_model()
        seen = []  # the dtype of one matrix product's output, at every forward pass
        model.blocks[0].mlp.up.register_forward_hook(
            lambda m, i, out, seen=seen: seen.append(out.dtype)
        )
        trainer = Trainer(model, TRAIN_IDS, VAL_IDS, small_config(precision=precision))
        losses[precision] = [trainer.train_step() for _ in range(6)]
        assert set(seen) == {getattr(torch, precision)}
        assert {p.dtype for p in model.parameters()} == {torch.float32}
        assert {p.grad.dtype for p in model.parameters()} == {torch.float32}
        assert trainer.optimizer.state[model.lm_head.weight]["exp_avg"].dtype == torch.float32
        seen.clear()
        estimate = trainer.evaluate()  # held-out estimates always run in float32
        assert set(seen) == {torch.float32}
        assert estimate == Trainer(model, TRAIN_IDS, VAL_IDS, small_config()).evaluate()
    # bfloat16 keeps 8 bits of mantissa: the same run, a few thousandths apart
    torch.testing.assert_close(
        torch.tensor(losses["bfloat16"]), torch.tensor(losses["float32"]), atol=0.03, rtol=0
    )
    assert losses["bfloat16"] != losses["float32"]


def test_an_unknown_precision_is_explained():
    with pytest.raises(ValueError, match="precision must be one of float32, bfloat16, got 'fp16'"):
        TrainConfig(precision="fp16")
    assert TrainConfig.from_dict({"steps": 3}).precision == "float32"  # checkpoints before it


def test_a_bfloat16_step_on_the_cpu_runs_the_attention_kernel_in_float32():
    trainer = Trainer(small_model(), TRAIN_IDS, VAL_IDS, small_config(precision="bfloat16"))
    layer = trainer.model.blocks[0].attn
    q, k, v = (torch.randn(2, 4, 5, 8).to(torch.bfloat16) for _ in range(3))
    expected = layer.attend(q.float(), k.float(), v.float()).to(torch.bfloat16)
    with trainer.mixed_precision():
        out = layer.attend(q, k, v)
    assert out.dtype == torch.bfloat16 and torch.equal(out, expected)
    assert "attend" not in vars(layer)  # the layer's own method again afterwards


def test_compile_trains_like_eager_and_falls_back_where_no_compiler_works(monkeypatch):
    """TrainConfig(compile=True) wraps the forward pass in torch.compile; where compiling fails
    (here: a stand-in compiler that raises, as inductor does without a C++ compiler) the first
    step warns and the run goes on eagerly, with the eager run's numbers."""

    def broken_compile(module, **options):
        def fails(*args):
            raise RuntimeError("no working C++ compiler found")

        return fails

    monkeypatch.setattr(torch, "compile", broken_compile)
    config = small_config(steps=4, eval_interval=0)
    trainer = Trainer(small_model(), TRAIN_IDS, VAL_IDS, dataclasses_replace(config, compile=True))
    with pytest.warns(RuntimeWarning, match="torch.compile failed .*no working C"):
        compiled = list(trainer.run(progress=False).train_loss)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning, at the first step only
        trainer.config = dataclasses_replace(trainer.config, steps=6)
        trainer.run(progress=False)
    eager = Trainer(small_model(), TRAIN_IDS, VAL_IDS, config).run(progress=False).train_loss
    assert compiled == eager
    assert TrainConfig.from_dict(trainer.config.to_dict()).compile


def test_a_compiled_step_reads_no_id_values(monkeypatch):
    """Under torch.compile the ids' range is not read (it would split the compiled graph in
    two); their shape and dtype still are."""
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    bad = torch.full((2, 4), 70)
    check_token_ids(bad, 65, max_len=8, targets=bad)
    with pytest.raises(ValueError, match="integer token ids"):
        check_token_ids(bad.float(), 65)
    with pytest.raises(ValueError, match="exceeds the model's max_len"):
        check_token_ids(bad, 65, max_len=2)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: False)
    with pytest.raises(ValueError, match="token id 70 is out of range"):
        check_token_ids(bad, 65)
