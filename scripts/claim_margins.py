"""How far each notebook assertion is from failing, over seeds and perturbed numerics.

    python scripts/claim_margins.py                        # notebooks 02-08, 5 seeds x 2 numerics
    python scripts/claim_margins.py --notebooks 03 07 --seeds 3 --jobs 2

A training claim ("the unmasked model falls below the entropy floor") is asserted with a
threshold, in the guard cell under the cell that measures it. This script executes each
notebook once per seed offset (0 is the committed run; offset k shifts every seed by k) and per
numerics setting:

- `native`: this machine's fastest kernels (AVX2 or AVX-512 on x86), one thread;
- `default`: `ATEN_CPU_CAPABILITY=default`, torch's portable kernels, one thread.

One thread each, so that two notebooks run at once on two cores without fighting over them
(strict nbval runs the notebooks with their own thread counts).

In every run `scripts/guard_recorder.py` turns each `assert` into a record of its clauses, so
nothing stops a run. The table printed at the end has one row per clause of the cells whose
output nbval ignores (results of training) and of the guard cells under them, and one per clause
of any other guard cell whose values differ between runs (a measurement on random draws, such as
gradients at initialisation, whose printed output is fixed by its seed) or that broke in some
run: its bound, its worst value over all runs, the smallest margin (positive: the claim held in
every run) and how many runs broke it. The other guard clauses (the same values in every run,
and held) are counted under the table. A claim with a negative margin must change (its
threshold and the prose), never the seed.
The table goes into docs/maintainers.md ("Claim margins") after each change to a claim.

Runs write one log each into `--logs`; a later call with the same folder re-runs only the
notebooks it names (replacing their logs) and tabulates every log there, so the notebooks can
run in pieces (`--seeds 0`: no runs, the table of the logs already there).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
IGNORE_TAG = "nbval-ignore-output"
GUARD_TAG = "guard"  # the assertions of the lesson cell above (scripts/editions.py)
NUMERICS = {
    "native": {"OMP_NUM_THREADS": "1"},
    "default": {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1"},
}
KERNEL_ENV = {
    "GPTLIB_DEVICE": "cpu",
    "PYTHONHASHSEED": "0",
    "TQDM_DISABLE": "1",
    "MPLBACKEND": "agg",
}


def run_once(path: Path, offset: int, numerics: str, log: Path) -> float:
    """Execute `path` with recorded asserts and seeds shifted by `offset`; return seconds."""
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    setup = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'scripts')!r})\n"
        f"import guard_recorder; guard_recorder.install({str(log)!r}, {offset})"
    )
    nb.cells = [nbformat.v4.new_code_cell(setup), *code]
    env = {**os.environ, **KERNEL_ENV, **NUMERICS[numerics]}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    client = NotebookClient(
        nb,
        timeout=900,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    log.unlink(missing_ok=True)  # a rerun replaces this run's records
    start = time.perf_counter()
    client.execute(env=env)
    errors = [
        (i, out.get("ename"))
        for i, cell in enumerate(nb.cells[1:])
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    with open(log, "a") as f:
        for cell, name in errors:
            f.write(
                json.dumps({"cell": cell, "text": f"cell raised {name}", "holds": False}) + "\n"
            )
    return time.perf_counter() - start


def recorded_cells(path: Path) -> tuple[set[int], set[int]]:
    """Code-cell indices: (the cells whose output nbval ignores and the guard cells under them,
    every other guard cell (tag `guard`))."""
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    training, other_guards, lesson_ignored = set(), set(), False
    for i, cell in enumerate(code):
        tags = cell.metadata.get("tags", [])
        if GUARD_TAG not in tags:
            lesson_ignored = IGNORE_TAG in tags
        if IGNORE_TAG in tags or (GUARD_TAG in tags and lesson_ignored):
            training.add(i)
        elif GUARD_TAG in tags:
            other_guards.add(i)
    return training, other_guards


def varies_or_breaks(entries: list[dict]) -> bool:
    """Whether a clause broke in some run or its compared values differ between runs."""
    values = {(e.get("left"), e.get("right")) for e in entries}
    return len(values) > 1 or not all(e["holds"] for e in entries)


Key = tuple[str, int, str, int]  # notebook, code cell, clause text, pair in a chain (-1: none)


def table(records: dict[Key, list[dict]]) -> list[str]:
    """Markdown rows: each clause (each pair of a chain a < b < c), its worst run."""
    lines = [
        "| notebook | cell | clause | worst run | smallest margin | runs broken |",
        "|---|---|---|---|---|---|",
    ]
    for (notebook, cell, text, pair), entries in sorted(records.items()):
        broken = sum(not e["holds"] for e in entries)
        shown = text.replace("|", "\\|")
        if pair >= 0:
            worst = min(entries, key=lambda e: e["margin"])
            seen = f"{worst['left']:z.4g} {worst['op']} {worst['right']:z.4g}"
            row = [f"`{shown}`", seen, f"{worst['margin']:z.3g}"]
        else:
            row = [f"`{shown}`", "held" if not broken else "broken", ""]
        lines.append(f"| {notebook} | {cell} | {' | '.join(row)} | {broken} of {len(entries)} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--notebooks", nargs="*", default=["02", "03", "04", "05", "06", "07", "08"]
    )
    parser.add_argument("--seeds", type=int, default=5, help="seed offsets 0..N-1 (default 5)")
    parser.add_argument("--numerics", nargs="*", default=list(NUMERICS), choices=list(NUMERICS))
    parser.add_argument("--jobs", type=int, default=2, help="notebooks executed at once")
    parser.add_argument(
        "--logs",
        type=Path,
        help="folder for the runs' logs; the table also counts the logs "
        "already there (runs of an earlier call); default: a new temporary folder",
    )
    args = parser.parse_args(argv)
    paths = [next((ROOT / "notebooks").glob(f"{n}_*.ipynb")) for n in args.notebooks]
    timings = json.loads((ROOT / "notebooks" / "timings.json").read_text())["notebooks"]
    paths.sort(key=lambda p: -timings.get(p.name, {}).get("seconds", 0))  # the longest first
    jobs = [(p, s, n) for p in paths for n in args.numerics for s in range(args.seeds)]
    work = args.logs or Path(tempfile.mkdtemp(prefix="claim-margins-"))
    work.mkdir(parents=True, exist_ok=True)

    def run(job: tuple[Path, int, str]) -> tuple[tuple[Path, int, str], Path]:
        path, offset, numerics = job
        log = work / f"{path.stem}-{numerics}-{offset}.jsonl"
        seconds = run_once(path, offset, numerics, log)
        print(
            f"{path.name} seed+{offset} {numerics}: {seconds:z.0f} s", file=sys.stderr, flush=True
        )
        return job, log

    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(run, jobs))

    records, others = tabulated_records(work)
    runs: dict[str, set[str]] = defaultdict(set)
    for log in work.glob("*.jsonl"):
        stem, numerics, offset = log.stem.rsplit("-", 2)
        runs[stem[:2]].add(f"{numerics} +{offset}")
    for notebook, seen in sorted(runs.items()):
        print(f"notebook {notebook}: {len(seen)} runs ({', '.join(sorted(seen))})")
    print("cells are code-cell indices (nbval's 'Cell N')\n")
    print("\n".join(table(records)))
    broken = sum(any(not e["holds"] for e in entries) for entries in records.values())
    print(f"\n{len(records)} clauses, {broken} broken in at least one run")
    print(f"{others} further guard clauses gave the same values in every run and held (not shown)")
    return 1 if broken else 0


def tabulated_records(
    work: Path, notebooks: Path = ROOT / "notebooks"
) -> tuple[dict[Key, list[dict]], int]:
    """The records of the logs in `work` that the table shows, by clause, and how many clauses
    of guard cells it leaves out (the same values in every run, held)."""
    records: dict[Key, list[dict]] = defaultdict(list)
    guards: set[Key] = set()
    for log in sorted(work.glob("*.jsonl")):
        stem = log.stem.rsplit("-", 2)[0]
        training, other_guards = recorded_cells(notebooks / f"{stem}.ipynb")
        for line in log.read_text().splitlines():
            entry = json.loads(line)
            key = (stem[:2], entry["cell"], entry["text"], entry.get("pair", -1))
            if entry["cell"] in training or entry["text"].startswith("cell raised"):
                records[key].append(entry)
            elif entry["cell"] in other_guards:
                records[key].append(entry)
                guards.add(key)
    hidden = {key for key in guards if not varies_or_breaks(records[key])}
    return {k: v for k, v in records.items() if k not in hidden}, len(hidden)


if __name__ == "__main__":
    raise SystemExit(main())
