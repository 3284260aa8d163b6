"""Is the course ready for a GPU? `make gpu-check` on a machine with an NVIDIA GPU runs

1. the unit tests with GPTLIB_DEVICE=cuda (so `gptlib.pick_device()` is the GPU);
2. every solved notebook and every workbook with GPTLIB_DEVICE=cuda: for a solved notebook,
   the cells whose printed output differs from the stored one (made on the CPU) and the cells
   that raise; for a workbook, with every exercise left undone, the cells that raise;
3. the training-throughput benchmark on the GPU (`benchmarks/train_throughput.py --device cuda`);

and prints a report, which it also writes to `gpu-check.md`. Without a CUDA GPU it says so, runs
nothing and exits 0: the course never needs one.

    python scripts/gpu_check.py [--skip-tests] [--skip-benchmark] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import torch
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
EDITIONS = {"solved": ROOT / "notebooks", "workbook": ROOT / "workbook"}
ENV = {"GPTLIB_DEVICE": "cuda", "PYTHONHASHSEED": "0", "TQDM_DISABLE": "1"}


def no_gpu_message() -> str | None:
    """Why there is nothing to check here, or None when torch sees a CUDA GPU."""
    if torch.cuda.is_available():
        return None
    built = f"built for CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
    return (
        f"No CUDA GPU here: torch {torch.__version__} ({built}) sees none, so make gpu-check has "
        "nothing to run. Run it on a machine with an NVIDIA GPU (e.g. Colab, or a lent device)."
    )


def _text(outputs: list) -> str:
    """What a cell printed (streams and plain-text results), the part nbval compares."""
    parts = []
    for out in outputs:
        if out.get("output_type") == "stream":
            parts.append(out["text"])
        elif out.get("output_type") in ("execute_result", "display_data"):
            parts.append(out.get("data", {}).get("text/plain", ""))
    return "".join(parts)


def run_notebook(path: Path, edition: str) -> list[str]:
    """Execute `path` on the GPU; the findings, one line each (empty: nothing to report)."""
    stored = nbformat.read(path, as_version=4)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=1200, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": str(path.parent)}},
    )  # fmt: skip
    client.execute()
    findings = []
    for i, (before, after) in enumerate(zip(stored.cells, nb.cells, strict=True)):
        if after.cell_type != "code":
            continue
        errors = [o for o in after.outputs if o.output_type == "error"]
        if errors:
            findings.append(f"cell {i} raises {errors[0].ename}: {errors[0].evalue[:200]}")
        elif edition == "solved" and "nbval-ignore-output" not in before.metadata.get("tags", []):
            if _text(before.outputs) != _text(after.outputs):
                first = next(
                    (a, b)
                    for a, b in zip(
                        _text(before.outputs).splitlines() + [""],
                        _text(after.outputs).splitlines() + [""],
                        strict=False,
                    )
                    if a != b
                )
                findings.append(f"cell {i} prints other text: CPU {first[0]!r}, GPU {first[1]!r}")
    return findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="file names (default: all, both editions)")
    parser.add_argument("--skip-tests", action="store_true")
    parser.add_argument("--skip-benchmark", action="store_true")
    args = parser.parse_args(argv)
    absent = no_gpu_message()
    if absent:
        print(absent)
        return 0
    os.environ.update(ENV)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])
    )
    report = [f"# make gpu-check: {torch.cuda.get_device_name()}, torch {torch.__version__}", ""]
    if not args.skip_tests:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "tests", "-m", "not slow and not ui", "-q", "-p",
             "no:cacheprovider"],
            cwd=ROOT, capture_output=True, text=True,
        )  # fmt: skip
        report += [
            "## Unit tests (GPTLIB_DEVICE=cuda)",
            "",
            done.stdout.strip().splitlines()[-1],
            "",
        ]
    report += ["## Notebooks", ""]
    for edition, folder in EDITIONS.items():
        for path in sorted(folder.glob("0*.ipynb")):
            if args.notebooks and path.name not in args.notebooks:
                continue
            start = time.perf_counter()
            findings = run_notebook(path, edition)
            seconds = time.perf_counter() - start
            verdict = "as stored" if not findings else f"{len(findings)} finding(s)"
            report.append(f"- {edition} {path.name} ({seconds:z.0f} s): {verdict}")
            report += [f"  - {line}" for line in findings]
            print(report[-1 - len(findings)], flush=True)
    if not args.skip_benchmark:
        done = subprocess.run(
            [sys.executable, "benchmarks/train_throughput.py", "--device", "cuda"],
            cwd=ROOT, capture_output=True, text=True,
        )  # fmt: skip
        report += ["", "## Training throughput on the GPU", "", "```", done.stdout.strip(), "```"]
    text = "\n".join(report) + "\n"
    (ROOT / "gpu-check.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
