"""environment.yml (conda) and pyproject.toml (pip) must ask for the same packages and bounds."""

import re
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
    project = _pyproject()["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["lab"]
    conda, _ = _conda_dependencies()
    for requirement in wanted:
        name, bound = _split(requirement)
        conda_name = CONDA_NAMES.get(name, name)
        assert conda_name in conda, f"{requirement} (pyproject.toml) missing in environment.yml"
        assert conda[conda_name] == bound, f"{conda_name}: {conda[conda_name]} vs pyproject {bound}"


def test_environment_yml_installs_the_package_and_matches_python_bound():
    conda, pip = _conda_dependencies()
    assert "-e ." in pip or "." in pip
    assert conda["python"] == _pyproject()["project"]["requires-python"]


def test_dependencies_have_lower_bounds_only():
    project = _pyproject()["project"]
    groups = [project["dependencies"], *project["optional-dependencies"].values()]
    for requirement in (r for group in groups for r in group):
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
    project = _pyproject()["project"]
    groups = [project["dependencies"], *project["optional-dependencies"].values()]
    pins = _locked()
    for requirement in (Requirement(r) for group in groups for r in group):
        name = canonicalize_name(requirement.name)
        if name == "torch":
            continue
        assert name in pins, f"{requirement} is not in constraints.txt: run make lock"
        assert pins[name] in requirement.specifier, f"{name}=={pins[name]} outside {requirement}"


def test_the_lock_leaves_torch_and_its_own_dependencies_free():
    pins = _locked()
    chosen_with_torch = [n for n in pins if re.fullmatch(r"torch|triton|nvidia-.*|sympy", n)]
    assert chosen_with_torch == [], "torch is chosen separately (CI pins it, make test takes any)"
