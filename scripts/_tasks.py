"""Shared by the reproduction scripts: runs as one-CPU Ray tasks, rows to CSV."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path


def run_as_tasks(fn: Callable[..., dict], calls: list[tuple], num_cpus: int) -> list[dict]:
    """Runs ``fn(*call)`` for every call as a one-CPU Ray task (``num_cpus`` at a time),
    printing each row as it arrives; returns the rows in call order."""
    import ray

    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        task = ray.remote(num_cpus=1)(fn)
        refs = [task.remote(*call) for call in calls]
        rows = []
        for ref in refs:
            row = ray.get(ref)
            rows.append(row)
            print(row, flush=True)
        return rows
    finally:
        ray.shutdown()


def write_csv(rows: list[dict], path: Path) -> None:
    """One row per run, columns in the first row's order."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
