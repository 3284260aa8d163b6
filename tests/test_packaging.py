"""environment.yml (conda) and pyproject.toml (pip) must ask for the same packages and bounds."""

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
CONDA_NAMES = {"torch": "pytorch-cpu"}  # pip name → conda-forge name where they differ
# The only upper bounds allowed: a next major version that is another tool altogether.
MAJOR_CAPS = {"jupyter-book": "<2"}  # 2.x is mystmd-based, with another config and CLI


def _split(requirement: str) -> tuple[str, str]:
    match = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*(.*)", requirement)
    assert match, requirement
    return match.group(1).lower(), match.group(2).replace(" ", "")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _requirements(*groups: str) -> list[str]:
    """The requirements of the named groups ("" for the core), without gptlib's own extras."""
    project = _pyproject()["project"]
    found = []
    for group in groups:
        found += project["dependencies"] if group == "" else project["optional-dependencies"][group]
    return [r for r in found if not r.startswith("gptlib[")]


def _all_requirements() -> list[str]:
    return _requirements("", *_pyproject()["project"]["optional-dependencies"])


def _conda_dependencies() -> tuple[dict[str, str], list[str]]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]
    conda, pip = {}, []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            pip.extend(dep["pip"])
        else:
            name, bound = _split(dep)
            conda[name] = bound
    return conda, pip


def test_every_runtime_and_lab_dependency_is_in_environment_yml_with_the_same_bound():
    wanted = _requirements("", "lessons", "lab")
    conda, _ = _conda_dependencies()
    for requirement in wanted:
        name, bound = _split(requirement)
        conda_name = CONDA_NAMES.get(name, name)
        assert conda_name in conda, f"{requirement} (pyproject.toml) missing in environment.yml"
        assert conda[conda_name] == bound, f"{conda_name}: {conda[conda_name]} vs pyproject {bound}"


def test_environment_yml_installs_the_package_and_matches_python_bound():
    conda, pip = _conda_dependencies()
    assert "-e .[lessons]" in pip
    assert conda["python"] == _pyproject()["project"]["requires-python"]


def test_dependencies_have_lower_bounds_only():
    for requirement in _all_requirements():
        name, bound = _split(requirement)
        lower, *cap = bound.split(",")
        assert lower.startswith(">=") and "==" not in bound, requirement
        assert cap in ([], [MAJOR_CAPS.get(name)]), f"{requirement}: only MAJOR_CAPS may cap"


def _locked() -> dict[str, Version]:
    """constraints.txt (`make lock`) as {canonical name: pinned version}."""
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, sep, version = line.partition("==")
        assert sep and version, f"constraints.txt: {line!r} is not an exact pin"
        pins[canonicalize_name(name)] = Version(version)
    return pins


def test_the_lock_pins_every_requirement_but_torch_within_its_bound():
    pins = _locked()
    for requirement in (Requirement(r) for r in _all_requirements()):
        name = canonicalize_name(requirement.name)
        if name == "torch":
            continue
        assert name in pins, f"{requirement} is not in constraints.txt: run make lock"
        assert pins[name] in requirement.specifier, f"{name}=={pins[name]} outside {requirement}"


def test_the_lock_leaves_torch_and_its_own_dependencies_free():
    pins = _locked()
    chosen_with_torch = [n for n in pins if re.fullmatch(r"torch|triton|nvidia-.*|sympy", n)]
    assert chosen_with_torch == [], "torch is chosen separately (CI pins it, make test takes any)"


def test_gptlib_itself_needs_torch_alone_and_the_lessons_come_with_an_extra():
    project = _pyproject()["project"]
    assert [_split(r)[0] for r in project["dependencies"]] == ["torch"]
    extras = project["optional-dependencies"]
    lessons = {_split(r)[0] for r in extras["lessons"]}
    assert {"matplotlib", "ipywidgets"} <= lessons
    assert "gptlib[lessons]" in extras["lab"] and "gptlib[lessons]" in extras["test"]


def test_the_model_wing_runs_without_the_lessons_packages(tmp_path):
    """As after `pip install gptlib` (torch alone): import gptlib, train a step, save and load a
    checkpoint, sample, with numpy, matplotlib, ipywidgets and tqdm unimportable."""
    script = f"""
import sys
for name in ("numpy", "matplotlib", "ipywidgets", "tqdm"):
    sys.modules[name] = None  # import name -> ImportError
import torch
import gptlib
from gptlib.checkpoint import load_checkpoint, save_checkpoint
from gptlib.data import SONNETS, CharTokenizer, train_val_split
from gptlib.train import TrainConfig, Trainer

gptlib.seed_everything(0)
tokenizer = CharTokenizer.from_text(SONNETS)
train, val = train_val_split(tokenizer.encode(SONNETS))
model = gptlib.GPT(gptlib.GPTConfig(vocab_size=tokenizer.vocab_size, d_model=16, n_heads=2,
                                    n_layers=1, max_len=16))
config = TrainConfig(steps=2, batch_size=2, block_size=16, eval_interval=1, eval_batches=1)
trainer = Trainer(model, train, val, config)
trainer.run()
path = save_checkpoint({str(tmp_path / "c.pt")!r}, model, tokenizer, trainer)
rebuilt = load_checkpoint(path).build_model()
print(tokenizer.decode(rebuilt.generate(tokenizer.encode("Sh")[None], 5)[0]))
assert not any(sys.modules.get(n) for n in ("numpy", "matplotlib", "ipywidgets", "tqdm"))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Sh") and len(done.stdout.strip()) == 7
