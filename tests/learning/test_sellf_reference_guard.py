"""Regression guard for the SELLF Table 1 FICO protocol (issue 14; slow, not in the default suite).

POCAR (Oracle) and PPO train on FICO lending with equal opportunity exactly as
``scripts/reproduce_sellf_table1.py --paper-settings`` trains them (the reference's PPO
settings and its orthogonal initialisation, seed 0), then deploy with sampled actions
(the reference's protocol). POCAR (Oracle)'s time-averaged true disparity must stay
clearly below PPO's. The budget is ``SELLF_GUARD_STEPS`` env steps (default 500,000, the
paper's: at lr 1e-5 both policies are still near-uniform, hence near-fair, much earlier);
about 10-20 minutes on one idle core per method.

Run: ``SELLF_GUARD_STEPS=500000 pytest -m slow tests/learning/test_sellf_reference_guard.py``
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.ray]

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _script():
    sys.path.insert(0, str(SCRIPTS))  # the script imports its sibling _tasks
    spec = importlib.util.spec_from_file_location(
        "reproduce_sellf_table1", SCRIPTS / "reproduce_sellf_table1.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pocar_oracle_sampled_disparity_clearly_below_ppo(ray_session):
    import torch

    torch.set_num_threads(1)
    script = _script()
    steps = int(os.environ.get("SELLF_GUARD_STEPS", 500_000))
    rows = {
        method: script.run_one(method, "fico-eo", 0, steps, 10_000, 5, True, 4000, True)
        for method in ("ppo", "pocar_oracle")
    }
    assert rows["ppo"]["actions"] == "sampled" and rows["ppo"]["weight_init"] == "orthogonal"
    ppo, oracle = rows["ppo"]["disparity_mean"], rows["pocar_oracle"]["disparity_mean"]
    # measured at 500k, seed 0, 10 deployments (docs/results/sellf_table1.md): POCAR
    # (Oracle) 0.055, PPO 0.400 (ratio 0.14); with RLlib's initialisation and greedy
    # deployment the same pair gave 0.162 and 0.430 (ratio 0.38)
    assert oracle < 0.3 * ppo, (oracle, ppo)
