"""Re-execute notebooks in place, each in one fresh kernel, and store clean outputs.

    python scripts/run_notebooks.py                 # every notebooks/*.ipynb and docs/*.ipynb
    python scripts/run_notebooks.py notebooks/02_*.ipynb
    python scripts/run_notebooks.py --dry-run       # execute and time, write nothing

Run it after any change to gptlib or a notebook, then commit the notebooks and the workbook:
once the notebooks are written it regenerates the student edition, workbook/ (see
scripts/editions.py), from them. It prints each notebook's execution time and records it in
notebooks/timings.json (the run times the course website shows; not with --dry-run). Kernels
import this checkout's gptlib and run on the CPU (GPTLIB_DEVICE=cpu) with a fixed hash seed, so
the stored outputs are what strict nbval (`pytest --nbval`) reproduces.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
DOCS = ROOT / "docs"  # the maintainers' notebook, under_the_hood.ipynb
KEPT_CELL_METADATA = ("tags", "nbgrader", "editable", "deletable")
NOTEBOOK_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}
KERNEL_ENV = {"GPTLIB_DEVICE": "cpu", "PYTHONHASHSEED": "0", "TQDM_DISABLE": "1"}
TIMINGS = NOTEBOOKS / "timings.json"
TIMINGS_NOTE = (
    "Written by scripts/run_notebooks.py (make notebooks), never by hand: the wall-clock seconds "
    "each notebook took to execute top to bottom in one fresh kernel on the CPU. code_sha256 "
    "identifies the code cells that were timed (see code_digest), so a reader can tell a figure "
    "measured on an earlier version of the notebook."
)


def clean_metadata(nb: nbformat.NotebookNode) -> None:
    """Keep only metadata that readers and graders need (no timings, no widget state)."""
    nb.metadata = nbformat.from_dict(NOTEBOOK_METADATA)
    for cell in nb.cells:
        cell.metadata = nbformat.from_dict(
            {k: v for k, v in cell.metadata.items() if k in KEPT_CELL_METADATA}
        )
        cell.pop("id", None)
    nb.nbformat, nb.nbformat_minor = 4, 4


def merge_streams(nb: nbformat.NotebookNode) -> None:
    """Join consecutive stdout (or stderr) outputs of a cell into one, as nbval compares them.

    How a kernel splits printed text into messages depends on timing; merged, the stored
    notebook does not change from one regeneration to the next.
    """
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        merged: list = []
        for out in cell.outputs:
            last = merged[-1] if merged else None
            if out.output_type == "stream" and last and last.get("name") == out.name:
                last.text += out.text
            else:
                merged.append(out)
        cell.outputs = merged


def code_digest(nb: nbformat.NotebookNode) -> str:
    """sha256 of the notebook's code cells' sources, in order (markdown and outputs left out)."""
    sources = (cell.source for cell in nb.cells if cell.cell_type == "code")
    return hashlib.sha256("\0".join(sources).encode()).hexdigest()


def machine_summary() -> str:
    """What the timings were measured on, e.g. 'x86_64, 2 CPUs, torch 2.13.0'."""
    try:
        torch = f", torch {metadata.version('torch')}"
    except metadata.PackageNotFoundError:
        torch = ""
    return f"{platform.machine()}, {os.cpu_count()} CPUs{torch}"


def record_timings(measured: dict[str, tuple[float, str]], path: Path = TIMINGS) -> None:
    """Merge {notebook file name: (seconds, code digest)} into the timings file; entries of
    notebooks no longer in its folder are dropped (renamed or removed notebooks)."""
    entries = json.loads(path.read_text())["notebooks"] if path.exists() else {}
    today, machine = datetime.date.today().isoformat(), machine_summary()
    for name, (seconds, digest) in measured.items():
        entries[name] = {
            "seconds": round(seconds, 1),
            "code_sha256": digest,
            "measured": today,
            "machine": machine,
        }
    present = {p.name for p in path.parent.glob("*.ipynb")}
    kept = {name: entries[name] for name in sorted(entries) if name in present}
    path.write_text(json.dumps({"about": TIMINGS_NOTE, "notebooks": kept}, indent=2) + "\n")


def execute(path: Path, timeout: int) -> tuple[nbformat.NotebookNode, float]:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    return nb, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb and docs/*.ipynb"
    )
    parser.add_argument("--dry-run", action="store_true", help="execute and time, write nothing")
    parser.add_argument("--timeout", type=int, default=600, help="seconds allowed per cell")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb")) + sorted(DOCS.glob("*.ipynb"))
    os.environ.update(KERNEL_ENV)
    # the kernels import this checkout's gptlib, installed or not
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    total = 0.0
    measured: dict[str, tuple[float, str]] = {}
    for path in paths:
        nb, seconds = execute(path, args.timeout)
        total += seconds
        clean_metadata(nb)
        merge_streams(nb)
        if not args.dry_run:
            nbformat.validate(nb)
            nbformat.write(nb, path)
            if path.resolve().parent == NOTEBOOKS:
                measured[path.name] = (seconds, code_digest(nb))
                record_timings(measured)
        print(f"{path.name:45s} {seconds:z7.1f} s", flush=True)
    print(f"{'total':45s} {total:z7.1f} s")
    if not args.dry_run:
        from editions import build as build_workbook  # beside this script (book/ loads it by path)

        print(f"workbook/: {len(build_workbook())} notebooks written from notebooks/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
