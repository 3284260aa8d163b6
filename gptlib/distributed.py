"""Data-parallel training over several processes with torch.distributed (notebook 08).

    torchrun --standalone --nproc_per_node=2 -m gptlib train --time-budget 60

torchrun starts one process per rank and tells each its place through the environment (RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT). Every rank holds the whole model and draws
the same global batch of B windows, of which it computes only its own B / N rows; the gradients
are averaged across ranks (`DistributedDataParallel`), so every rank takes the same optimizer
step and the run follows the single-process run with batch B up to floating-point rounding.
One rank (rank 0) prints, logs and writes checkpoints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class World:
    """This process's place among the ranks of a run: `rank` in [0, `size`)."""

    rank: int = 0
    size: int = 1

    @property
    def is_main(self) -> bool:
        """The rank that prints, logs and writes checkpoints."""
        return self.rank == 0

    def share(self, batch_size: int) -> slice:
        """The rows of a global batch of `batch_size` windows that this rank computes."""
        if batch_size % self.size:
            nearest = max(self.size, batch_size - batch_size % self.size)
            raise ValueError(
                f"batch_size={batch_size} does not split evenly over {self.size} processes; use "
                f"a multiple of {self.size} (e.g. {nearest})"
            )
        rows = batch_size // self.size
        return slice(self.rank * rows, (self.rank + 1) * rows)

    def mean(self, values: list[float]) -> list[float]:
        """The average of each value over all ranks (one collective call); identity for one."""
        if self.size == 1:
            return values
        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t)
        return (t / self.size).tolist()


def join_from_environment(device: torch.device) -> World:
    """Join the process group torchrun describes in the environment; one process: `World()`.

    The backend is NCCL for CUDA devices and gloo on the CPU. Each CUDA rank takes the GPU of
    its LOCAL_RANK.
    """
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size == 1:
        return World()
    if not dist.is_available():
        raise ValueError("this torch build has no torch.distributed; run one process instead")
    if device.type not in ("cpu", "cuda"):
        raise ValueError(
            f"data-parallel training runs on the CPU (gloo) or CUDA GPUs (NCCL), not on "
            f"{device.type}; pass --device cpu"
        )
    if device.type == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return World(rank=dist.get_rank(), size=dist.get_world_size())


def leave(world: World) -> None:
    """End this process's part in the run (after the last collective call)."""
    if world.size > 1 and dist.is_initialized():
        dist.destroy_process_group()
