"""Regression guard for the SELLF Table 1 FICO protocol (issue 14; slow, not in the default suite).

POCAR (Oracle) and PPO train on FICO lending with equal opportunity exactly as the plan
``valdrighi2026_tables`` trains them (the reference's PPO settings and its orthogonal
initialisation, seed 0; POCAR (Oracle) at the grid point beta_1 5, beta_2 1, its tuned
example's weights), then deploy with sampled actions on 5 deployment seeds (the plan's
``deployment`` evaluator). POCAR (Oracle)'s time-averaged true disparity must stay
clearly below PPO's. The budget is ``SELLF_GUARD_STEPS`` env steps (default 500,000, the
paper's: at lr 1e-5 both policies are still near-uniform, hence near-fair, much earlier);
about 10-20 minutes on one idle core per method.

Run: ``SELLF_GUARD_STEPS=500000 pytest -m slow tests/learning/test_sellf_reference_guard.py``
"""

from __future__ import annotations

import os

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.ray]


def test_pocar_oracle_sampled_disparity_clearly_below_ppo(ray_session):
    import torch

    from rllib_fair.cli.reproduce import run_cell
    from rllib_fair.reproduce.plan import Cell, load_plan

    torch.set_num_threads(1)
    plan = load_plan("valdrighi2026_tables")
    steps = int(os.environ.get("SELLF_GUARD_STEPS", 500_000))
    evaluation = {**plan.evaluation, "seeds": 5}
    plan = plan.__class__(**{**plan.__dict__, "budget": steps, "evaluation": evaluation})
    assert plan.evaluation["explore"] is True
    assert plan.overrides(Cell("ppo", "fico_eo", 0))["weight_init"] == "orthogonal"
    rows = {
        cell.method: run_cell(plan, cell)
        for cell in (
            Cell("ppo", "fico_eo", 0),
            Cell("pocar_oracle", "fico_eo", 0, "beta_1-5+beta_2-1"),
        )
    }
    ppo, oracle = rows["ppo"]["metrics"]["disparity"], rows["pocar_oracle"]["metrics"]["disparity"]
    # measured at 500k, seed 0, 10 deployments (docs/results/sellf_table1.md): POCAR
    # (Oracle) 0.055, PPO 0.400 (ratio 0.14); with RLlib's initialisation and greedy
    # deployment the same pair gave 0.162 and 0.430 (ratio 0.38)
    assert oracle < 0.3 * ppo, (oracle, ppo)
