"""A setting where L-UCBFair's fairness constraint binds, and the runs that show it (numpy).

Eq. 1 of Yin et al. (2023) maximises ``V_{r,1}`` subject to ``V_{g,1} >= b``; L-UCBFair
enforces the constraint through the dual variable ``Y`` of the Lagrangian (Eq. 4), raised
by ``eta (b - V_{g,1}(s_1))`` after each episode and clipped to ``[0, xi]`` (paper line
145). ``xi = 0`` pins ``Y = 0``: the same algorithm without the constraint, which is the
baseline every claim here is measured against, together with uniform random thresholds.

The setting (``BINDING``; found by a small sweep, see ``docs/results/lucbfair.md``,
"Binding constraint"): ``fair/Replicator-v0`` with its defaults (loss ``1 - tp``, squared
demographic-parity gap, ``threshold_range (-4, 4)``) at H = 20; the shipped learned
feature map (``replicator_features.npz``: fitted to r and g = 1 - DP of this env, so the
cross-group DP term is linear in the features, which the per-group rbf map cannot
express); ridge 0.01; a small bonus ``beta = 0.1`` so the planned ``V_{g,1}`` stays
below its clip ``H`` (with ``beta = 0.1 H`` it sits at ``H > b`` and ``Y`` falls back to
0); ``alpha = 5``; ``xi = 2`` (a larger bound lets the weight of g collapse
qualification); ``eta = 0.05``; ``b = 0.9 H = 18``.

Protocol (:func:`compare`): one seed trains L-UCBFair and its ``xi = 0`` twin on the
same episode seeds (episode ``k`` of seed ``s`` resets with ``seed=1000 s + k``; actions
draw from ``default_rng(s)``); uniform random thresholds (``default_rng([s, 1])``) are
rolled out from the initial states of the last ``last`` training episodes. All numbers
are means over those last episodes of the per-step loss and squared disparity.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from rllib_fair.algorithms.lucbfair.core import LUCBFairCore, Settings, run_episode
from rllib_fair.algorithms.lucbfair.features import make_feature_map
from rllib_fair.envs.replicator import ReplicatorEnv

#: Horizon of the binding setting.
HORIZON = 20
#: The numpy core's settings of the binding setting (``Settings`` keywords, no horizon).
BINDING: dict[str, float] = {
    "ridge": 0.01,
    "beta": 0.1,
    "alpha": 5.0,
    "xi": 2.0,
    "eta": 0.05,
    "threshold": 0.9 * HORIZON,
}
#: The learned feature map shipped with the package (``feature_kwargs`` of the config).
FEATURES: dict[str, Any] = {"feature_map": "learned", "path": "replicator_features.npz"}
#: Episode ``k`` of seed ``s`` resets with ``seed = RESET_STRIDE * s + k``.
RESET_STRIDE = 1000


def train(
    seed: int,
    episodes: int,
    *,
    xi: float | None = None,
    horizon: int = HORIZON,
    env_config: dict | None = None,
    settings: dict | None = None,
    features: dict | None = None,
) -> dict[str, np.ndarray]:
    """Algorithm 1 for ``episodes`` episodes; per-episode arrays.

    Args:
        seed: action draws ``default_rng(seed)``; episode ``k`` resets with
            ``seed = 1000 seed + k``.
        episodes: ``K``.
        xi: the dual bound (None = ``BINDING["xi"]``; 0 = the unconstrained twin).
        horizon: ``H``.
        env_config: ``ReplicatorEnv`` keywords (default: the env's defaults).
        settings: overrides of :data:`BINDING`.
        features: the feature map as ``{"feature_map": name, **feature_kwargs}`` (default
            :data:`FEATURES`).

    Returns:
        ``dual`` (the ``Y`` each episode's plan used), ``loss`` and ``disparity`` (episode
        means of the per-step values), ``return_r``, ``return_g`` (sums of r and g),
        ``q0`` ``[K, 2]`` (first states), ``final_q`` (mean of the last state).
    """
    kw = {**BINDING, **(settings or {})}
    if xi is not None:
        kw["xi"] = float(xi)
    env = ReplicatorEnv(**{**(env_config or {}), "max_steps": horizon})
    fkw = dict(FEATURES if features is None else features)
    fmap = make_feature_map(fkw.pop("feature_map"), **fkw)
    core = LUCBFairCore(Settings(horizon=horizon, **kw), fmap)
    rng = np.random.default_rng(seed)
    keys = ("dual", "loss", "disparity", "return_r", "return_g", "q0", "final_q")
    out: dict[str, list] = {key: [] for key in keys}
    for k in range(episodes):
        out["dual"].append(core.dual)
        _, ep = run_episode(env, core, rng, seed=RESET_STRIDE * seed + k)
        out["loss"].append(ep["loss"].mean())
        out["disparity"].append(ep["disparity"].mean())
        out["return_r"].append(ep["r"].sum())
        out["return_g"].append(ep["g"].sum())
        out["q0"].append(ep["q"][0])
        out["final_q"].append(ep["q"][-1].mean())
    return {key: np.asarray(val, dtype=np.float64) for key, val in out.items()}


def uniform_thresholds(
    q0s: np.ndarray, seed: int, *, horizon: int = HORIZON, env_config: dict | None = None
) -> dict[str, np.ndarray]:
    """Episodes of uniform random thresholds ``a ~ U[0, 1]^2`` from the states ``q0s[N, 2]``.

    Draws from ``default_rng([seed, 1])``. Returns per-episode ``loss`` and ``disparity``
    (means of the per-step values) and ``return_g``.
    """
    env = ReplicatorEnv(**{**(env_config or {}), "max_steps": horizon})
    rng = np.random.default_rng([seed, 1])
    loss, disparity, ret_g = [], [], []
    for q0 in np.asarray(q0s, dtype=np.float64):
        env.reset(options={"q": [float(q0[0]), float(q0[1])]})
        ls, ds, gs = [], [], []
        for _ in range(horizon):
            *_, info = env.step(rng.random(2))
            ls.append(info["loss"])
            ds.append(info["disparity"])
            gs.append(info["g"])
        loss.append(np.mean(ls))
        disparity.append(np.mean(ds))
        ret_g.append(np.sum(gs))
    return {
        "loss": np.asarray(loss),
        "disparity": np.asarray(disparity),
        "return_g": np.asarray(ret_g),
    }


def compare(
    seed: int,
    episodes: int,
    last: int,
    *,
    horizon: int = HORIZON,
    env_config: dict | None = None,
    settings: dict | None = None,
    features: dict | None = None,
) -> dict[str, float]:
    """L-UCBFair vs its ``xi = 0`` twin vs uniform random thresholds on one seed.

    Returns one row: the setting, then over the last ``last`` training episodes the mean,
    minimum and overall maximum of ``Y`` (``Y_mean``, ``Y_min_last``, ``Y_max``), and for
    ``fair`` (L-UCBFair), ``free`` (``xi = 0``) and ``uniform`` the mean per-step squared
    disparity (``disparity_*``), mean per-step loss (``loss_*``) and realised
    ``sum_h g_h`` (``return_g_*``); ``seconds`` is the wall time.
    """
    t0 = time.perf_counter()
    kw = {"horizon": horizon, "env_config": env_config, "settings": settings, "features": features}
    fair = train(seed, episodes, **kw)
    free = train(seed, episodes, xi=0.0, **kw)
    unif = uniform_thresholds(fair["q0"][-last:], seed, horizon=horizon, env_config=env_config)
    s = {**BINDING, **(settings or {})}
    row: dict[str, float] = {
        "seed": seed,
        "episodes": episodes,
        "last": last,
        "horizon": horizon,
        **{k: float(v) for k, v in s.items()},
        "Y_mean": float(fair["dual"][-last:].mean()),
        "Y_min_last": float(fair["dual"][-last:].min()),
        "Y_max": float(fair["dual"].max()),
        "Y_max_free": float(free["dual"].max()),
    }
    for name, run in (("fair", fair), ("free", free)):
        for key in ("disparity", "loss", "return_g"):
            row[f"{key}_{name}"] = float(run[key][-last:].mean())
    for key in ("disparity", "loss", "return_g"):
        row[f"{key}_uniform"] = float(unif[key].mean())
    row["seconds"] = time.perf_counter() - t0
    return row
