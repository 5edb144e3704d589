"""L-UCBFair's planning, policy and dual step as pure numpy functions (no Ray).

Yin et al. 2023, Sec. 3.1.1 and Algorithm 1 as we reconstructed it (docs/methods/yin2023.md,
"L-UCBFair"):

* LSVI step (Sec. 3.1; Jin et al. 2020): per step ``h`` (backwards),
  ``Lambda_h = sum_tau phi phi^T + ridge I`` and
  ``w_{j,h} = Lambda_h^{-1} sum_tau phi (j_h + V_{j,h+1}(s_{h+1}))`` for ``j in {r, g}``;
* bonus (Sec. 3.1): ``Q_{j,h} = clip(w^T phi + beta (phi^T Lambda_h^{-1} phi)^{1/2},
  0, H - h)`` (0-based ``h``: the values' true range ``[0, H - h + 1]`` in the paper's
  1-based index);
* adaptive search policy (Sec. 3.1.1): ``pi_h(i | s) = softmax_i(alpha (Q_r(s, c_i) +
  Y Q_g(s, c_i)))`` over the region centres; ``V_j(s) = sum_i pi_h(i | s) Q_j(s, c_i)``
  (the softmax value replaces the LSVI step's ``max_a``, which is unavailable over a
  continuous action set);
* dual update (gradient ascent on the Lagrangian of Eq. 4):
  ``Y_{k+1} = clip(Y_k + eta (b - V_{g,1}(s_1)), 0, xi)``.

Indices: ``h = 0..H-1`` is the 0-based index of a decision; the observation after ``j``
steps carries ``j / H`` (0 at reset), so ``h = round(obs_t * H)``.

Data layout of :func:`plan_lsvi`: ``k`` complete episodes of ``H`` steps; ``phi_sa[k, H,
d]`` the features of the visited pairs, ``r, g [k, H]`` the per-step reward and utility,
``phi_next[k, H, M, d]`` the features ``phi(s_{h+1}, c_i)`` of the next state with every
centre (cached once per transition, so planning is pure linear algebra;
``phi_next[:, H-1]`` is unused).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

TARGET_MODES: tuple[str, ...] = ("lsvi", "reference_online")
Q_CLIPS: tuple[str, ...] = ("remaining", "horizon")


@dataclass
class Plan:
    """Per-step weights of one planning pass.

    Attributes:
        w_r: ``[H, d]`` reward weights.
        w_g: ``[H, d]`` utility weights.
        lambda_inv: ``[H, d, d]`` inverse Gram matrices (for the bonus).
    """

    w_r: np.ndarray
    w_g: np.ndarray
    lambda_inv: np.ndarray

    @classmethod
    def empty(cls, horizon: int, dim: int, ridge: float = 1.0) -> Plan:
        """The plan before any data: zero weights, ``Lambda = ridge I``."""
        eye = np.eye(dim) / ridge
        return cls(
            np.zeros((horizon, dim)),
            np.zeros((horizon, dim)),
            np.broadcast_to(eye, (horizon, dim, dim)).copy(),
        )


def default_alpha(num_regions: int, num_episodes: int, xi: float, horizon: int) -> float:
    """Softmax temperature of Thm 3.3: ``log(M) K / (2 (1 + xi + H))``."""
    return math.log(num_regions) * num_episodes / (2.0 * (1.0 + xi + horizon))


def default_eta(xi: float, num_episodes: int, horizon: int) -> float:
    """Dual step size ``xi / sqrt(K H^2)`` (the reference's ``xi/sqrt(K*H*H)``)."""
    return xi / math.sqrt(num_episodes * horizon * horizon)


def q_upper(h: int, horizon: int, q_clip: str = "remaining") -> float:
    """Upper clip of ``Q_h``: ``H - h`` ("remaining", 0-based h) or ``H`` ("horizon", reference)."""
    return float(horizon - h) if q_clip == "remaining" else float(horizon)


def q_values(
    w: np.ndarray, lambda_inv: np.ndarray, phi: np.ndarray, beta: float, upper: float
) -> np.ndarray:
    """``clip(w^T phi + beta (phi^T Lambda^{-1} phi)^{1/2}, 0, upper)`` for ``phi[..., d]``."""
    flat = phi.reshape(-1, phi.shape[-1])
    mean = flat @ w
    if beta:
        quad = np.einsum("nd,nd->n", flat @ lambda_inv, flat)
        mean = mean + beta * np.sqrt(np.maximum(quad, 0.0))
    return np.clip(mean, 0.0, upper).reshape(phi.shape[:-1])


def softmax_policy(q_r: np.ndarray, q_g: np.ndarray, dual: float, alpha: float) -> np.ndarray:
    """``softmax_i(alpha (Q_r + Y Q_g))`` over the last axis (regions)."""
    z = alpha * (q_r + dual * q_g)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def q_pair(
    w_r: np.ndarray,
    w_g: np.ndarray,
    lambda_inv: np.ndarray,
    phi: np.ndarray,
    beta: float,
    upper: float,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`q_values` for ``r`` and ``g`` sharing one bonus computation."""
    flat = phi.reshape(-1, phi.shape[-1])
    dt = flat.dtype
    mean_r = flat @ w_r.astype(dt, copy=False)
    mean_g = flat @ w_g.astype(dt, copy=False)
    if beta:
        quad = np.einsum("nd,nd->n", flat @ lambda_inv.astype(dt, copy=False), flat)
        bonus = beta * np.sqrt(np.maximum(quad, 0.0))
        mean_r = mean_r + bonus
        mean_g = mean_g + bonus
    shape = phi.shape[:-1]
    return (
        np.clip(mean_r, 0.0, upper).astype(np.float64).reshape(shape),
        np.clip(mean_g, 0.0, upper).astype(np.float64).reshape(shape),
    )


def step_values(
    plan: Plan,
    h: int,
    phi_regions: np.ndarray,
    *,
    beta: float,
    alpha: float,
    dual: float,
    q_clip: str = "remaining",
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Policy and values at step ``h`` for states with features ``phi_regions[N, M, d]``.

    Returns:
        ``(probs, Q_r, Q_g, V_r, V_g)``: ``[N, M]`` thrice, ``[N]`` twice.
    """
    horizon = plan.w_r.shape[0]
    upper = q_upper(h, horizon, q_clip)
    qr, qg = q_pair(plan.w_r[h], plan.w_g[h], plan.lambda_inv[h], phi_regions, beta, upper)
    probs = softmax_policy(qr, qg, dual, alpha)
    return probs, qr, qg, (probs * qr).sum(-1), (probs * qg).sum(-1)


def plan_lsvi(
    phi_sa: np.ndarray,
    r: np.ndarray,
    g: np.ndarray,
    phi_next: np.ndarray,
    *,
    ridge: float = 1.0,
    beta: float = 0.05,
    alpha: float = 1.0,
    dual: float = 0.0,
    q_clip: str = "remaining",
    horizon: int | None = None,
) -> Plan:
    """One backward planning pass of L-UCBFair on all stored episodes (true LSVI).

    Every past target is recomputed with the current weights (that makes it LSVI): for
    ``h = H-1..0``, ``V_{j,h+1}(s_{h+1}^tau)`` is the softmax value of the just-computed
    ``Q_{h+1}`` at every stored next state. With no data the plan is
    :meth:`Plan.empty`. ``horizon`` is only needed when ``phi_sa`` has no episodes.
    """
    k = phi_sa.shape[0]
    H = phi_sa.shape[1] if horizon is None else horizon
    d = phi_sa.shape[-1]
    plan = Plan.empty(H, d, ridge)
    if k == 0:
        return plan
    eye = ridge * np.eye(d)
    for h in range(H - 1, -1, -1):
        x = phi_sa[:, h]
        gram = x.T @ x + eye
        inv = np.linalg.inv(gram)
        plan.lambda_inv[h] = 0.5 * (inv + inv.T)
        if h == H - 1:
            v_r = v_g = np.zeros(k)
        else:
            _, _, _, v_r, v_g = step_values(
                plan, h + 1, phi_next[:, h], beta=beta, alpha=alpha, dual=dual, q_clip=q_clip
            )
        plan.w_r[h] = np.linalg.solve(gram, x.T @ (r[:, h] + v_r))
        plan.w_g[h] = np.linalg.solve(gram, x.T @ (g[:, h] + v_g))
    return plan


def dual_step(dual: float, eta: float, threshold: float, v_g1: float, xi: float) -> float:
    """``Y_{k+1} = clip(Y_k + eta (b - V_{g,1}(s_1)), 0, xi)`` (ascent on Eq. 4)."""
    return float(min(max(dual + eta * (threshold - v_g1), 0.0), xi))


# ---------------------------------------------------------------- reference_online mode


def reference_accumulators(horizon: int, dim: int) -> dict[str, np.ndarray]:
    """Empty accumulators ``{"gram": [H, d, d], "b_r": [H, d], "b_g": [H, d]}``."""
    return {
        "gram": np.zeros((horizon, dim, dim)),
        "b_r": np.zeros((horizon, dim)),
        "b_g": np.zeros((horizon, dim)),
    }


def reference_accumulate(
    acc: dict[str, np.ndarray],
    phi_sa: np.ndarray,
    r: np.ndarray,
    g: np.ndarray,
    v_r_visit: np.ndarray,
    v_g_visit: np.ndarray,
) -> dict[str, np.ndarray]:
    """Adds one episode the way the reference did (targets never recomputed; new accumulators).

    ``phi_sa[H, d]``, ``r, g [H]``; ``v_*_visit[H]`` are the softmax values computed
    *while acting* at the visited states ``s_h`` with the episode's own weights
    (``vr_graph[k, h]``); the target of step ``h`` uses ``V[k, h + 1]`` and ``V[k, H] = 0``.
    Past targets are never recomputed.
    """
    H = phi_sa.shape[0]
    nxt_r = np.append(np.asarray(v_r_visit, dtype=np.float64)[1:], 0.0)[:H]
    nxt_g = np.append(np.asarray(v_g_visit, dtype=np.float64)[1:], 0.0)[:H]
    return {
        "gram": acc["gram"] + np.einsum("hd,he->hde", phi_sa, phi_sa),
        "b_r": acc["b_r"] + phi_sa * (r + nxt_r)[:, None],
        "b_g": acc["b_g"] + phi_sa * (g + nxt_g)[:, None],
    }


def plan_reference(acc: dict[str, np.ndarray], ridge: float = 1.0) -> Plan:
    """Weights from the reference accumulators: ``w_h = (sum phi phi^T + ridge I)^{-1} b_h``."""
    d = acc["gram"].shape[-1]
    inv = np.linalg.inv(acc["gram"] + ridge * np.eye(d))
    return Plan(
        np.einsum("hde,he->hd", inv, acc["b_r"]),
        np.einsum("hde,he->hd", inv, acc["b_g"]),
        0.5 * (inv + np.swapaxes(inv, 1, 2)),
    )


# ---------------------------------------------------------------- acting


def choose_regions(
    probs: np.ndarray, rng: np.random.Generator, explore: bool, uniforms: np.ndarray | None = None
) -> np.ndarray:
    """Region per row: sampled from ``probs`` (explore) or the argmax (inference)."""
    if not explore:
        return probs.argmax(axis=-1)
    u = rng.random(probs.shape[0]) if uniforms is None else np.asarray(uniforms)
    cdf = np.cumsum(probs, axis=-1)
    idx = (cdf < (u * cdf[:, -1])[:, None]).sum(axis=-1)
    return np.minimum(idx, probs.shape[-1] - 1)
