"""L-UCBFair's learning test: the DP constraint binds and lowers the disparity.

The package standard: an algorithm's fairness gap must really drop relative to its
unconstrained baseline on the same budget and seed. L-UCBFair's unconstrained baseline is
itself with ``xi = 0``, which pins the dual variable at 0 (``Y_{k+1} = clip(Y_k + eta
(b - V_{g,1}), 0, xi)``, Eq. 4 ascent, paper line 145; spec 7 item 16), so the policy
maximises ``Q_r`` alone.

Setting (docs/results/lucbfair.md, "Binding constraint"): ``fair/Replicator-v0`` with its
defaults (loss 1 - tp, squared DP, ``threshold_range (-4, 4)``), H = 20, K = 150, the
shipped learned feature map (``replicator_features.npz``, fitted to r and g = 1 - DP of
this env; held-out R^2 0.996 for g). The per-group rbf map cannot represent DP, a
cross-group term (erratum E12), so with it a rising Y does not lower DP. beta = 0.1 keeps
the optimistic ``V_{g,1}`` below its clip ``H`` (with beta = 0.1 H the plan saturates and
``V_{g,1} = H > b`` for ever); xi = 2 bounds the weight of g so qualification does not
collapse; b = 0.9 H = 18 (the package's default tolerance). alpha and eta are fixed so the
two runs differ only in xi.

Measured on seeds 0-7 (last 30 episodes; mean per-step squared DP, L-UCBFair vs xi = 0):
0.127/0.219, 0.138/0.229, 0.130/0.247, 0.143/0.233, 0.132/0.217, 0.122/0.200,
0.147/0.198, 0.134/0.236 (ratio 0.53-0.74); mean Y over those episodes 0.31-0.60; return
(sum of tp) 92-97 % of the xi = 0 run's; realised sum g 17.1-17.6 vs 15.0-16.1 (b = 18).
Numpy core only (no Ray); about 1 s.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import rllib_fair.algorithms.lucbfair as pkg
from rllib_fair.algorithms.lucbfair.core import LUCBFairCore, Settings, run_episode
from rllib_fair.algorithms.lucbfair.features import make_feature_map
from rllib_fair.envs.replicator import ReplicatorEnv

H, K, LAST = 20, 150, 30
BINDING = {"ridge": 0.01, "beta": 0.1, "alpha": 5.0, "xi": 2.0, "eta": 0.05, "threshold": 18.0}


def run(xi: float, seed: int, horizon: int = H, episodes: int = K) -> dict[str, np.ndarray]:
    """Algorithm 1 for ``episodes`` episodes (episode k resets with ``seed=k``)."""
    env = ReplicatorEnv(max_steps=horizon)
    fm = make_feature_map(
        "learned", path=str(Path(pkg.__file__).parent / "replicator_features.npz")
    )
    core = LUCBFairCore(Settings(horizon=horizon, **{**BINDING, "xi": xi}), fm)
    rng = np.random.default_rng(seed)
    out = {key: [] for key in ("disparity", "return_r", "return_g", "dual")}
    for k in range(episodes):
        out["dual"].append(core.dual)  # Y_k, the dual variable the episode's plan used
        _, ep = run_episode(env, core, rng, seed=k)  # plan -> act H steps -> dual step
        out["disparity"].append(ep["disparity"].mean())
        out["return_r"].append(ep["r"].sum())
        out["return_g"].append(ep["g"].sum())
    return {key: np.asarray(val) for key, val in out.items()}


def test_constraint_binds_and_lowers_disparity_against_xi_zero():
    fair, free = run(xi=BINDING["xi"], seed=0), run(xi=0.0, seed=0)
    assert np.all(free["dual"] == 0.0)  # xi = 0: the unconstrained baseline
    # the dual variable really rises (the constraint binds) and stays inside (0, xi)
    assert fair["dual"].max() > 0.2, fair["dual"].max()
    assert 0.1 < fair["dual"][-LAST:].mean() < BINDING["xi"], fair["dual"][-LAST:].mean()
    d_fair, d_free = fair["disparity"][-LAST:].mean(), free["disparity"][-LAST:].mean()
    assert d_fair < 0.75 * d_free, (d_fair, d_free)  # measured 0.58 x on seed 0
    # realised utility near the threshold b; the return stays sensible
    g_fair, g_free = fair["return_g"][-LAST:].mean(), free["return_g"][-LAST:].mean()
    assert g_fair > g_free and g_fair > BINDING["threshold"] - 1.0, (g_fair, g_free)
    r_fair, r_free = fair["return_r"][-LAST:].mean(), free["return_r"][-LAST:].mean()
    assert r_fair > 0.8 * r_free, (r_fair, r_free)
