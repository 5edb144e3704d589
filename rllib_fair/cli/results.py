"""What Tune wrote for a trial, read back: flattened result rows and finite numbers.

Shared by the runner (progress lines, stopping, the final summary) and ``compare``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

#: The env's return, the key most criteria and tables use.
RETURN_KEY = "env_runners/episode_return_mean"
#: The env steps sampled so far (the usual budget).
STEPS_KEY = "num_env_steps_sampled_lifetime"


def flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    """Flattens a nested result dict into ``a/b/c`` keys (like Tune does)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "/"))
        else:
            out[key] = v
    return out


def finite_number(v: Any) -> float | None:
    """``float(v)`` if that is a finite number, else None."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def read_results(folder: str | Path | None) -> list[dict]:
    """A trial's results as Tune wrote them to ``result.json``, flattened (NaN kept)."""
    path = Path(folder) / "result.json" if folder else None
    if path is None or not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(flatten(json.loads(line)))
        except ValueError:
            continue
    return rows


def fmt(v: float | None, spec: str = ".4g") -> str:
    """``v`` formatted with ``spec``; ``-`` for a missing value."""
    return "-" if v is None else format(v, spec)
