"""Issue 12's learning test: L-UCBFair against Myopic-Fair on fair/Replicator-v0 (tp, DP).

The pass criteria of docs/methods/yin2023.md, "Claims we test" (H = 100, true-positive
loss ``1 - tp``, squared
demographic-parity disparity): L-UCBFair's mean final qualification rate over the last
episodes is above Myopic-Fair's + 0.3, and its mean episode loss over the same episodes is
below Myopic-Fair's. Myopic-Fair (Eq. 7b, lambda 0.5, ``myopic_action`` with lattice 41 and
30 gradient steps, as in ``docs/results/lucbfair.md``) is rolled out greedily from the
initial states of those last episodes; it accepts (almost) everyone and drives q to 0.

Setting as the tuned example ``tuned_examples/lucbfair/replicator-lucbfair.yaml``:
``threshold_range (-3, 3)`` (docs/methods/yin2023.md: on the default (-4, 4) only the region
centre a = 0.5 raises qualification, and 60-150 episodes never raised the final q above
0.1), package defaults otherwise (rbf features, ridge 0.01, beta = 0.1 H, xi = 20,
b = 0.9 H, alpha and eta from ``K``). Numpy core (its plans equal the RLlib path's,
``tests/algorithms/test_lucbfair_rllib.py``), no Ray; episode k of seed s resets with
``seed=1000 s + k``.

Caveat (``docs/results/lucbfair.md``): with these defaults the optimistic plan saturates
and pi^K is close to uniform over the regions; uniform random thresholds reach a similar
final q (0.715 at K = 500). The criteria test the paper's claim against the myopic
baseline, not learning beyond random thresholds.
"""

from __future__ import annotations

import numpy as np
import pytest

from rllib_fair.algorithms.lucbfair import lsvi
from rllib_fair.algorithms.lucbfair.core import LUCBFairCore, Settings, run_episode
from rllib_fair.algorithms.lucbfair.features import make_feature_map, region_grid
from rllib_fair.envs.replicator import ReplicatorEnv
from rllib_fair.envs.replicator_myopic import myopic_action

H = 100
TASK = {"max_steps": H, "loss": "tp", "disparity": "dp", "threshold_range": (-3.0, 3.0)}
MYOPIC_FAIR = {"lam": 0.5, "grid": 41, "iters": 30}


def settings(episodes: int) -> Settings:
    """The package defaults of ``LUCBFairConfig.settings()`` for ``K = episodes``."""
    xi = 20.0
    return Settings(
        horizon=H,
        ridge=0.01,
        beta=0.1 * H,
        alpha=lsvi.default_alpha(len(region_grid(0.1)[0]), episodes, xi, H),
        xi=xi,
        eta=lsvi.default_eta(xi, episodes, H),
        threshold=0.9 * H,
    )


def train_lucbfair(episodes: int, seed: int) -> dict[str, np.ndarray]:
    """Algorithm 1 for ``episodes`` episodes; per-episode loss, final q, first state."""
    env = ReplicatorEnv(**TASK)
    core = LUCBFairCore(settings(episodes), make_feature_map("rbf"))
    rng = np.random.default_rng(seed)
    out = {"loss": [], "final_q": [], "q0": []}
    for k in range(episodes):
        _, ep = run_episode(env, core, rng, seed=1000 * seed + k)
        out["loss"].append(ep["loss"].mean())
        out["final_q"].append(ep["q"][-1].mean())
        out["q0"].append(ep["q"][0])
    return {key: np.asarray(val) for key, val in out.items()}


def myopic_fair(q0s: np.ndarray) -> dict[str, np.ndarray]:
    """Myopic-Fair's greedy episodes from the initial states ``q0s[N, 2]``."""
    env = ReplicatorEnv(**TASK)
    loss, final_q = [], []
    for q0 in q0s:
        env.reset(options={"q": [float(q0[0]), float(q0[1])]})
        step_losses = []
        for _ in range(H):
            action = myopic_action(env, "myopic_fair", q=env.q, **MYOPIC_FAIR)
            *_, info = env.step(action)
            step_losses.append(info["loss"])
        loss.append(np.mean(step_losses))
        final_q.append(env.q.mean())
    return {"loss": np.asarray(loss), "final_q": np.asarray(final_q)}


def check_spec5(episodes: int, last: int, seed: int) -> None:
    """The two pass criteria over the last ``last`` training episodes."""
    lucb = train_lucbfair(episodes, seed)
    base = myopic_fair(lucb["q0"][-last:])
    q_lucb, q_base = lucb["final_q"][-last:].mean(), base["final_q"].mean()
    loss_lucb, loss_base = lucb["loss"][-last:].mean(), base["loss"].mean()
    assert q_lucb > q_base + 0.3, (q_lucb, q_base)
    assert loss_lucb < loss_base, (loss_lucb, loss_base)


def test_lucbfair_beats_myopic_fair_short_budget():
    """K = 40 episodes, last 10, seed 0; 10 s measured here (up to ~45 s under load).

    Measured (L-UCBFair final q / loss vs Myopic-Fair final q / loss, last 10 episodes):
    seed 0 0.696 / 0.634 vs 0.000 / 0.949; seed 1 0.696 / 0.608 vs 0.000 / 0.925;
    seed 2 0.722 / 0.575 vs 0.000 / 0.913; seed 3 0.634 / 0.619 vs 0.000 / 0.931;
    seed 4 0.523 / 0.688 vs 0.000 / 0.950; seed 5 0.708 / 0.582 vs 0.000 / 0.919;
    seed 6 0.692 / 0.583 vs 0.000 / 0.931; seed 7 0.602 / 0.688 vs 0.000 / 0.956.
    """
    check_spec5(episodes=40, last=10, seed=0)


@pytest.mark.slow
def test_lucbfair_beats_myopic_fair_paper_budget():
    """The pass criteria at the tuned example's budget: K = 500, last 50 episodes, seed 0.

    The run of ``docs/results/lucbfair.md`` (reset seeds k): L-UCBFair final q 0.731,
    last-50 loss 0.577; Myopic-Fair 0.000 / 0.925. Re-measured: the same numbers; 118 s
    and 271 s in two runs here (the machine's load).
    """
    check_spec5(episodes=500, last=50, seed=0)
