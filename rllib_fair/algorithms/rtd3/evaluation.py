"""Evaluation of a threshold policy on a replicator population from fixed initial states.

The paper's Fig. 4 accumulates, per initial state, the loss and the disparity over one
episode; Figs. 1-2 draw the trajectories of the qualification rates. Both come from
deterministic rollouts (the env is deterministic given the actions), here from the
``4 x 4`` grid of initial states ``{0.2, 0.4, 0.6, 0.8}^2`` (our choice: the paper does not
list its 16 states).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

#: The 16 initial states of Figs. 1 and 4 (a 4 x 4 grid; the paper does not list them).
GRID_STATES: tuple[tuple[float, float], ...] = tuple(
    (a, b) for a in (0.2, 0.4, 0.6, 0.8) for b in (0.2, 0.4, 0.6, 0.8)
)


def rllib_greedy_policy(algo) -> Callable[[np.ndarray], np.ndarray]:
    """Greedy actions of an RLlib algorithm's module, in the env's action units.

    Handles modules with squashed actions in ``[-1, 1]`` (``normalize_actions=True``, TD3)
    and modules that emit env units (the myopic baselines).
    """
    import torch

    module = algo.get_module()
    low, high = module.action_space.low.astype(np.float64), module.action_space.high
    normalized = bool(algo.config.normalize_actions)

    def act(obs: np.ndarray) -> np.ndarray:
        batch = {"obs": torch.as_tensor(np.asarray(obs, dtype=np.float32)[None])}
        with torch.no_grad():
            out = module.forward_inference(batch)["actions"]
        a = np.asarray(out.detach().cpu().numpy()[0], dtype=np.float64)
        if normalized:
            a = low + (np.clip(a, -1.0, 1.0) + 1.0) * 0.5 * (high - low)
        return np.clip(a, low, high)

    return act


def rollouts(
    env: Any,
    act: Callable[[np.ndarray], np.ndarray],
    states: Sequence[Sequence[float]] = GRID_STATES,
) -> dict[str, np.ndarray]:
    """One episode per initial state; per-step loss, disparity and qualification rates.

    Args:
        env: a replicator env (its horizon ``max_steps`` sets the episode length).
        act: maps an observation to an action in env units.
        states: initial qualification rates ``(q_0, q_1)``.

    Returns:
        ``{"loss": [S, H], "disparity": [S, H], "q": [S, H + 1, 2]}`` (``q[:, 0]`` the
        initial states).
    """
    losses, disparities, qs = [], [], []
    for q0 in states:
        obs, _ = env.reset(options={"q": list(q0)})
        loss, disp, q = [], [], [np.asarray(q0, dtype=np.float64)]
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(act(obs))
            loss.append(info["loss"])
            disp.append(info["disparity"])
            q.append(np.asarray(info["q_next"], dtype=np.float64))
            done = terminated or truncated
        losses.append(loss)
        disparities.append(disp)
        qs.append(q)
    return {"loss": np.asarray(losses), "disparity": np.asarray(disparities), "q": np.asarray(qs)}
