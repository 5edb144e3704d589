"""Qualification gain, its causal decomposition and benefit fairness (Lear & Zhang, ICLR 2025).

The numpy core of "A Causal Lens for Learning Long-Term Fair Policies". The method, the
choices where the paper is silent and the corrections we found are written up in
``docs/methods/lear2025.md``; the section names below refer to that page. Nothing here
imports ray or torch; ``rllib_fair.envs.lending_drift`` and the PPO-C learner
build on it.

Notation: groups ``s`` (0 = s+, advantaged; 1 = s-), qualification states (bins) ``x``,
decisions ``d`` (0 = reject / d0, 1 = grant / d1). Arrays:

* ``gain`` ``G[x, x']``: the qualification gain ``g(x, x')`` (same for both groups);
* ``P[s, d, x, x']``: the transition kernel ``P(x' | x, d, s)``;
* ``pi[s, x]``: the policy's probability of d1, ``pi(d1 | x, s)``;
* ``w[j]``: visit weights, the probability that an individual's (j+1)-th decision happens
  (:func:`visit_weights`); ``w = ones(T)`` is the paper's fixed horizon T.

Contents:

* gains: :func:`cubic_gain`, :func:`potential_gain`, :func:`gain_table`;
* dynamics: :func:`kernels` (App. C's transition), :func:`benefit` (Delta, Sec. 3.5);
* exact values: :func:`visit_pmf`, :func:`visit_weights`, :func:`tabular_values`
  (Eqs. 1, 3, 4 with visit weights), :func:`finite_horizon_values` (the literal
  recursions), :func:`decomposition` (C = DPE + IPE + SPE, Sec. 3.4),
  :func:`dpe_from_benefit` (Prop. 1(a));
* rollout estimators: :func:`returns_to_go_by_individual` (the per-individual Monte Carlo
  Q), :func:`reference_pi0_heuristic` (the reference code's V_pi0 stand-in h),
  :func:`episode_decomposition` (``reference``, ``shadow``/``exact`` or a table for V_pi0;
  ``visited`` or ``population`` averaging);
* benefit fairness: :func:`benefit_fairness_lambda` (Lambda, Sec. 3.5),
  :func:`dpe_step` (the reference's per-minibatch DPE diagnostic);
* the F-PPO-L baseline's distance: :func:`windowed_count_w1` (its Sinkhorn form in
  :mod:`rllib_fair.fairness.sinkhorn`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "benefit",
    "benefit_fairness_lambda",
    "cubic_gain",
    "decomposition",
    "dpe_from_benefit",
    "dpe_step",
    "episode_decomposition",
    "finite_horizon_values",
    "gain_table",
    "kernels",
    "potential_gain",
    "reference_pi0_heuristic",
    "returns_to_go_by_individual",
    "tabular_values",
    "visit_pmf",
    "visit_weights",
    "W1_FORMS",
    "windowed_count_w1",
]

# ----------------------------------------------------------------------------- gains


def cubic_gain(x: Any, x_next: Any, n_bins: int = 14) -> np.ndarray | float:
    """The paper's qualification gain g(x, x') = (x'^3 - x^3) / |max_{|i-j|=1} g| (App. C).

    App. C: ``g(x_t, x_{t+1}) = (x_{t+1}^3 - x_t^3) / |max_{|i-j|=1} g(x_i, x_j)|``; the
    largest one-bin step is the top one, so the normaliser is ``(n-1)^3 - (n-2)^3`` (469
    for 14 bins): g(12, 13) = 1, g(0, 1) = 1/469. Additive over intervals (a potential
    difference, as Sec. 3 requires of a gain), the same for both groups.

    Args:
        x: bin(s) before (int or array).
        x_next: bin(s) after (broadcast with ``x``).
        n_bins: number of bins (>= 2).

    Returns:
        A float for scalar arguments, else a float64 array.
    """
    top = n_bins - 1
    norm = float(top**3 - (top - 1) ** 3)
    out = (np.asarray(x_next, dtype=np.float64) ** 3 - np.asarray(x, dtype=np.float64) ** 3) / norm
    return float(out) if out.ndim == 0 else out


def potential_gain(phi: Any) -> np.ndarray:
    """Gain table ``G[x, x'] = phi[x'] - phi[x]`` of a potential ``phi`` (any additive g).

    Every gain that is additive over intervals (the paper's requirement on g, Sec. 3) is
    of this form.
    """
    phi = np.asarray(phi, dtype=np.float64)
    return phi[None, :] - phi[:, None]


def gain_table(n_bins: int = 14) -> np.ndarray:
    """The cubic gain of :func:`cubic_gain` as a table ``G[x, x']`` (float64 ``[n, n]``)."""
    top = n_bins - 1
    return potential_gain(np.arange(n_bins, dtype=np.float64) ** 3 / float(top**3 - (top - 1) ** 3))


# ----------------------------------------------------------------------------- dynamics


def kernels(success: Any, drift: Any, n_bins: int | None = None) -> np.ndarray:
    """Transition kernels ``P[s, d, x, x'] = P(x' | x, d, s)`` of the credit-drift lending env.

    App. C, clipped to ``[0, n_bins - 1]`` after adding drift and outcome (the authors'
    code; the paper's equation has no clip)::

        x' = clip(x + drift + 1)  if d = 1, y = 1     (granted, repaid)
             clip(x + drift - 1)  if d = 1, y = 0     (granted, defaulted)
             clip(x + drift)      if d = 0            (rejected: drift only)

    with ``drift ~ (P(-1), P(0), P(+1)) = drift[s]`` independent of ``x`` and ``y ~
    Bernoulli(success[s, x])``.

    Args:
        success: repayment probability per bin, ``[n]`` (both groups) or ``[2, n]``.
        drift: ``[2, 3]`` drift probabilities per group, ordered (-1, 0, +1).
        n_bins: number of bins (default: ``success``'s last axis).

    Returns:
        float64 ``[2, 2, n, n]``; every row sums to 1.
    """
    drift = np.asarray(drift, dtype=np.float64)
    n_groups = drift.shape[0]
    success = np.asarray(success, dtype=np.float64)
    if success.ndim == 1:
        success = np.broadcast_to(success, (n_groups, success.shape[0]))
    n = success.shape[1] if n_bins is None else int(n_bins)
    P = np.zeros((n_groups, 2, n, n))
    xs = np.arange(n)
    for s in range(n_groups):
        p = success[s]
        for k, ck in zip((-1, 0, 1), drift[s]):
            np.add.at(P[s, 0], (xs, np.clip(xs + k, 0, n - 1)), ck)
            np.add.at(P[s, 1], (xs, np.clip(xs + k + 1, 0, n - 1)), ck * p)
            np.add.at(P[s, 1], (xs, np.clip(xs + k - 1, 0, n - 1)), ck * (1.0 - p))
    return P


def benefit(P: Any, gain: Any) -> np.ndarray:
    """Benefit ``Delta[s, x] = sum_x' (P(x'|x,d1,s) - P(x'|x,d0,s)) g(x, x')`` (Sec. 3.5).

    The conditional average effect of granting on the one-step qualification gain; with
    ``P(.|do(s)) = P(.|s)``.

    Args:
        P: ``[S, 2, n, n]`` kernels (:func:`kernels`).
        gain: ``[n, n]`` gain table.
    """
    P = np.asarray(P, dtype=np.float64)
    G = np.asarray(gain, dtype=np.float64)
    return ((P[:, 1] - P[:, 0]) * G[None]).sum(axis=-1)


# ----------------------------------------------------------------------------- exact values


def visit_pmf(T: int, q: float) -> np.ndarray:
    """``P(K = k)``, k = 0..T, of an individual's number of decisions ``K ~ Binomial(T, q)``.

    In ``fair/LendingDrift-v0`` the applicant is a uniform individual whatever the policy,
    so every individual is decided on ``K ~ Binomial(T, 1/N)`` times in a T-step episode
    (docs/methods/lear2025.md, "The environment: lending with credit drift"). Computed in
    log space (no scipy).
    """
    T = int(T)
    k = np.arange(T + 1, dtype=np.float64)
    if q <= 0.0 or q >= 1.0:
        out = np.zeros(T + 1)
        out[0 if q <= 0.0 else T] = 1.0
        return out
    log_choose = np.array(
        [math.lgamma(T + 1) - math.lgamma(j + 1) - math.lgamma(T - j + 1) for j in range(T + 1)]
    )
    return np.exp(log_choose + k * math.log(q) + (T - k) * math.log1p(-q))


def visit_weights(T: int, q: float, visited: bool = True) -> np.ndarray:
    """Visit weights ``w[j] = P(K > j)`` (j = 0..T-1) for the tabular values.

    Args:
        T: episode length (decisions in the episode).
        q: probability that a given step decides on the individual (1/N).
        visited: condition on ``K >= 1`` (the reference's estimator averages over visited
            individuals only); False gives the population variant (unvisited individuals
            count with gain 0), i.e. the visited weights times ``P(K >= 1)``.
    """
    pmf = visit_pmf(T, q)
    tail = np.cumsum(pmf[::-1])[::-1][1:]  # P(K > j) = sum_{k > j} P(K = k), j = 0..T-1
    if visited:
        tail = tail / (1.0 - pmf[0]) if pmf[0] < 1.0 else np.zeros_like(tail)  # never visited
    return tail


def _policy_kernel(P: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """``P_pi[s, x, x'] = sum_d pi(d|x,s) P(x'|x,d,s)``."""
    pi1 = pi[:, :, None]
    return (1.0 - pi1) * P[:, 0] + pi1 * P[:, 1]


def tabular_values(
    P: Any, pi: Any, gain: Any, w: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Exact values of pi, pi^PS and pi0 and the visitation measure, with visit weights.

    With ``P_pi = sum_d pi P(.|.,d)``, ``c_pi(x) = sum_x' P_pi(x, x') g(x, x')`` and
    ``c0(x) = sum_x' P(x'|x,d0) g(x, x')`` (docs/methods/lear2025.md, "Qualification
    gain and its values")::

        V_pi  = sum_j w_j P_pi^j  c_pi      Eq. (1) with the action value Q of Sec. 3.3
        V_PS  = sum_j w_j P_pi^j  c0        Eq. (4): gain as under pi0,
                                            transitions as under pi
        V_pi0 = sum_j w_j P_pi0^j c0        Eq. (3)
        eta   = sum_j w_j P_pi^j            expected visits x0 -> x

    ``w = ones(T)`` gives the paper's fixed-horizon recursions
    (:func:`finite_horizon_values` runs them literally).

    Args:
        P: ``[S, 2, n, n]`` kernels.
        pi: ``[S, n]`` probability of d1 per group and bin.
        gain: ``[n, n]`` gain table.
        w: ``[J]`` visit weights (:func:`visit_weights`).

    Returns:
        ``(V_pi, V_ps, V_pi0, eta)`` of shapes ``[S, n]`` x 3 and ``[S, n, n]``.
    """
    P = np.asarray(P, dtype=np.float64)
    pi = np.asarray(pi, dtype=np.float64)
    G = np.asarray(gain, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    P_pi = _policy_kernel(P, pi)
    P_0 = P[:, 0]
    c_pi = (P_pi * G[None]).sum(axis=-1)
    c_0 = (P_0 * G[None]).sum(axis=-1)
    n_groups, n = pi.shape
    V_pi = np.zeros((n_groups, n))
    V_ps = np.zeros((n_groups, n))
    V_0 = np.zeros((n_groups, n))
    eta = np.zeros((n_groups, n, n))
    v_pi, v_ps, v_0 = c_pi.copy(), c_0.copy(), c_0.copy()
    M = np.broadcast_to(np.eye(n), (n_groups, n, n)).copy()
    for wj in w:
        V_pi += wj * v_pi
        V_ps += wj * v_ps
        V_0 += wj * v_0
        eta += wj * M
        v_pi = np.einsum("sxy,sy->sx", P_pi, v_pi)
        v_ps = np.einsum("sxy,sy->sx", P_pi, v_ps)
        v_0 = np.einsum("sxy,sy->sx", P_0, v_0)
        M = np.einsum("sxy,syz->sxz", M, P_pi)
    return V_pi, V_ps, V_0, eta


def finite_horizon_values(
    P: Any, pi: Any, gain: Any, horizon: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The paper's recursions Eqs. (1), (3), (4) run literally for ``horizon`` decisions.

    Returns:
        ``(V_pi, V_ps, V_pi0)``, each ``[S, n]`` (equal to :func:`tabular_values` with
        ``w = ones(horizon)``).
    """
    P = np.asarray(P, dtype=np.float64)
    pi = np.asarray(pi, dtype=np.float64)
    G = np.asarray(gain, dtype=np.float64)
    n_groups, n = pi.shape
    V = np.zeros((n_groups, n))
    V_ps = np.zeros((n_groups, n))
    V_0 = np.zeros((n_groups, n))
    c0 = (P[:, 0] * G[None]).sum(axis=-1)
    P_pi = _policy_kernel(P, pi)
    for _ in range(int(horizon)):
        # Q(x, d) = sum_x' P(x'|x,d,s) (g(x,x') + V(x')); Eq. (1) V = sum_d pi Q
        Q = (P * (G[None, None] + V[:, None, None, :])).sum(axis=-1)  # [S, 2, n]
        V_new = (1.0 - pi) * Q[:, 0] + pi * Q[:, 1]
        # Eq. (4): gain as under pi0, continuation as under pi
        V_ps = c0 + np.einsum("sxy,sy->sx", P_pi, V_ps)
        # Eq. (3): always d0
        V_0 = (P[:, 0] * (G[None] + V_0[:, None, :])).sum(axis=-1)
        V = V_new
    return V, V_ps, V_0


def decomposition(V_pi: Any, V_ps: Any, V_pi0: Any, x0_dist: Any) -> dict[str, float]:
    """``C = DPE + IPE + SPE`` from the three value tables (Sec. 3.4).

    With ``E_s[V] = sum_x0 P(x0|s) V[s, x0]`` and groups 0 = s+, 1 = s- (Definition 1,
    signed s+ - s-)::

        C   = E+[V_pi]            - E-[V_pi]
        DPE = E+[V_pi - V_PS]     - E-[V_pi - V_PS]      direct policy effect
        IPE = E+[V_PS - V_pi0]    - E-[V_PS - V_pi0]     indirect (delayed) effect
        SPE = E+[V_pi0]           - E-[V_pi0]            spurious effect

    The identity holds exactly (telescoping) for any tables.

    Args:
        V_pi: ``[2, n]`` value of pi (:func:`tabular_values`).
        V_ps: ``[2, n]`` value of pi^PS.
        V_pi0: ``[2, n]`` value of pi0.
        x0_dist: ``[2, n]`` initial distribution per group.

    Returns:
        ``{"C", "DPE", "IPE", "SPE"}`` plus each group's expected values
        ``"V_pi"``, ``"V_ps"``, ``"V_pi0"`` (``[2]`` arrays).
    """
    x0 = np.asarray(x0_dist, dtype=np.float64)
    e_pi = (np.asarray(V_pi) * x0).sum(axis=-1)
    e_ps = (np.asarray(V_ps) * x0).sum(axis=-1)
    e_0 = (np.asarray(V_pi0) * x0).sum(axis=-1)
    return _decompose(e_pi, e_ps, e_0)


def _decompose(e_pi: np.ndarray, e_ps: np.ndarray, e_0: np.ndarray) -> dict[str, Any]:
    """C, DPE, IPE, SPE from per-group means of V_pi, V_PS, V_pi0 (Sec. 3.4)."""
    return {
        "C": float(e_pi[0] - e_pi[1]),
        "DPE": float((e_pi[0] - e_ps[0]) - (e_pi[1] - e_ps[1])),
        "IPE": float((e_ps[0] - e_0[0]) - (e_ps[1] - e_0[1])),
        "SPE": float(e_0[0] - e_0[1]),
        "V_pi": np.asarray(e_pi, dtype=np.float64),
        "V_ps": np.asarray(e_ps, dtype=np.float64),
        "V_pi0": np.asarray(e_0, dtype=np.float64),
    }


def dpe_from_benefit(pi: Any, delta: Any, eta: Any, x0_dist: Any) -> float:
    """DPE through the benefit (Sec. 3.5, from Prop. 1(a)).

    ``DPE = E_{x~pi|s+}[pi(d1|x,s+) Delta(x,s+)] - E_{x~pi|s-}[pi(d1|x,s-) Delta(x,s-)]``
    with the (unnormalised) visitation measure ``sum_x0 P(x0|s) eta(x0 -> x)``. Prop. 1(a)
    reads ``V_pi - V_PS = eta (pi1 * Delta)``, with the benefit at the visited state x'
    (the paper prints x, a typo; docs/methods/lear2025.md, "Corrections and
    discrepancies").
    """
    pi = np.asarray(pi, dtype=np.float64)
    delta = np.asarray(delta, dtype=np.float64)
    visits = np.einsum("sx,sxy->sy", np.asarray(x0_dist, dtype=np.float64), np.asarray(eta))
    per_group = (visits * pi * delta).sum(axis=-1)
    return float(per_group[0] - per_group[1])


# ----------------------------------------------------------------------------- estimators


def returns_to_go_by_individual(ids: Any, gains: Any) -> np.ndarray:
    """Per-step reward-to-go of ``gains`` over the same individual's later steps.

    ``q_t = sum_{t' >= t, ids[t'] = ids[t]} gains[t']``: the undiscounted Monte Carlo
    estimate of ``Q_{do(pi, s)}(x_t, d_t)`` of the reference code (``Individual.compute_q_mc``),
    in time order. Vectorised: a stable sort by id, then a reverse cumulative sum within
    each id's segment. For the cubic gain it telescopes to ``g(x_t, x_final(i))``.

    Args:
        ids: ``[T]`` individual id per step.
        gains: ``[T]`` gain realised at each step.

    Returns:
        float64 ``[T]``.
    """
    ids = np.asarray(ids)
    g = np.asarray(gains, dtype=np.float64)
    if g.size == 0:
        return np.zeros(0)
    order = np.argsort(ids, kind="stable")
    gs = g[order][::-1]
    sid = ids[order][::-1]
    csum = np.cumsum(gs)
    # Reverse cumulative sum restarted at every id boundary (in reversed order).
    start = np.r_[True, sid[1:] != sid[:-1]]
    before = np.where(start, csum - gs, 0.0)
    offset = np.maximum.accumulate(np.where(start, np.arange(gs.size), 0))
    seg = csum - before[offset]
    out = np.empty_like(g)
    out[order] = seg[::-1]
    return out


def reference_pi0_heuristic(n_bins: int = 14, gain: Any = None) -> np.ndarray:
    """The reference code's stand-in for V_pi0: ``h(x0) = mean_j g(x0, j)``.

    The reference's comment: "assumes credit scores will eventually be uniformly
    distributed". It is not Eq. (3) and is biased: under pi0 it gives IPE != 0 and a
    policy-independent SPE (-0.665672 in Settings 1/2; the true SPE is 0.006526), see
    docs/methods/lear2025.md, "Estimating from rollouts".
    """
    G = gain_table(n_bins) if gain is None else np.asarray(gain, dtype=np.float64)
    return G.mean(axis=1)


def episode_decomposition(
    ids: Any,
    groups: Any,
    x: Any,
    g: Any,
    g_ps: Any,
    *,
    v_pi0: Any = "reference",
    g_pi0: Any = None,
    average: str = "visited",
    n_per_group: Any = None,
    gain: Any = None,
) -> dict[str, Any]:
    """Per-episode estimates of C, DPE, IPE, SPE from one episode's steps (Fig. 5's).

    For group s over its visited individuals ``I_s`` (first visit ``t_{i,1}``, initial bin
    ``x_{i,0}`` = its bin at the first visit):

    * ``V_pi(s)  = mean_i sum_k g_{t_{i,k}}`` (the reference's ``q`` at the first visit);
    * ``V_PS(s)  = mean_i sum_k g^PS_{t_{i,k}}`` (gain as if rejected, same drift draw);
    * ``V_pi0(s)``: ``v_pi0="reference"``: ``mean_i h(x_{i,0})`` with the heuristic of
      :func:`reference_pi0_heuristic` (what the paper's Fig. 5 plots; biased);
      ``"shadow"`` (alias ``"exact"``): ``mean_i sum_k g^pi0_{t_{i,k}}`` from the env's
      shadow pi0 trajectory (``g_pi0``, unbiased); an array ``[2, n]``: ``mean_i
      table[s, x_{i,0}]`` (e.g. the exact V_pi0 of :func:`tabular_values`).

    ``average="population"`` divides the per-group sums by ``n_per_group[s]`` instead of the
    number of visited individuals (unvisited individuals count with gain 0; use a
    population-variant table then). Then C, DPE, IPE, SPE as in :func:`decomposition`.

    Args:
        ids: ``[T]`` individual per step (``info["individual"]``).
        groups: ``[T]`` group per step.
        x: ``[T]`` bin before the decision (``info["credit_bin"]``).
        g: ``[T]`` realised gain (``info["qual_gain"]``).
        g_ps: ``[T]`` gain under pi0 with the same draws (``info["qual_gain_ps"]``).
        v_pi0: ``"reference"``, ``"shadow"`` / ``"exact"`` or a ``[2, n]`` table.
        g_pi0: ``[T]`` shadow pi0 gains (``info["qual_gain_pi0"]``), for ``"shadow"``.
        average: ``"visited"`` (the reference) or ``"population"``.
        n_per_group: ``[2]`` individuals per group, for ``"population"``.
        gain: ``[n, n]`` gain table for the heuristic (default: the cubic one, 14 bins).

    Returns:
        ``{"C", "DPE", "IPE", "SPE"}`` (floats), ``"V_pi"``, ``"V_ps"``, ``"V_pi0"``,
        ``"n_visited"`` (``[2]`` arrays), ``"G"`` (``[2]``: each group's total realised
        gain in the episode) and ``"G_gap"`` (``G[0] - G[1]``).

    Raises:
        ValueError: on an unknown ``v_pi0`` / ``average`` or a missing ``g_pi0`` /
            ``n_per_group``.
    """
    ids = np.asarray(ids, dtype=np.int64)
    groups = np.asarray(groups, dtype=np.int64)
    x = np.asarray(x, dtype=np.int64)
    g = np.asarray(g, dtype=np.float64)
    g_ps = np.asarray(g_ps, dtype=np.float64)
    if isinstance(v_pi0, str) and v_pi0 not in ("reference", "shadow", "exact"):
        raise ValueError(
            f"v_pi0={v_pi0!r}: expected 'reference', 'shadow', 'exact' or a [2, n_bins] table"
        )
    if average not in ("visited", "population"):
        raise ValueError(f"average={average!r}: expected 'visited' or 'population'")
    if average == "population" and n_per_group is None:
        raise ValueError("n_per_group=None: average='population' needs the group sizes")
    # Individuals in order of first visit; per-individual sums.
    uniq, first, inv = np.unique(ids, return_index=True, return_inverse=True)
    m = uniq.size
    tot_g = np.bincount(inv, weights=g, minlength=m)
    tot_ps = np.bincount(inv, weights=g_ps, minlength=m)
    grp = groups[first]
    x0 = x[first]
    if isinstance(v_pi0, str) and v_pi0 == "reference":
        h = reference_pi0_heuristic(gain=gain_table() if gain is None else gain)
        tot_0 = h[x0]
    elif isinstance(v_pi0, str):
        if g_pi0 is None:
            raise ValueError(f"g_pi0=None: v_pi0={v_pi0!r} needs the shadow pi0 gains")
        tot_0 = np.bincount(inv, weights=np.asarray(g_pi0, dtype=np.float64), minlength=m)
    else:
        table = np.asarray(v_pi0, dtype=np.float64)
        tot_0 = table[grp, x0]
    n_visited = np.bincount(grp, minlength=2).astype(np.float64)
    if average == "population":
        denom = np.asarray(n_per_group, dtype=np.float64)
    else:
        denom = np.maximum(n_visited, 1.0)  # an unvisited group gives 0, not NaN
    e_pi = np.bincount(grp, weights=tot_g, minlength=2) / denom
    e_ps = np.bincount(grp, weights=tot_ps, minlength=2) / denom
    e_0 = np.bincount(grp, weights=tot_0, minlength=2) / denom
    out = _decompose(e_pi, e_ps, e_0)
    G = np.bincount(groups, weights=g, minlength=2)
    out.update({"n_visited": n_visited, "G": G, "G_gap": float(G[0] - G[1])})
    return out


# ----------------------------------------------------------------------------- benefit fairness


def benefit_fairness_lambda(
    p_plus: Any,
    p_minus: Any,
    d_plus: Any,
    d_minus: Any,
    eps: float = 1e-6,
    w_plus: Any = None,
    w_minus: Any = None,
) -> float:
    """Benefit-fairness measure Lambda (Sec. 3.5).

    ``Lambda = sum_{t, u} eps |p+_t - p-_u| / (eps + |Delta+_t - Delta-_u|) w+_t w-_u``

    over **all** cross-group pairs (the normaliser is every pair, not the equal-benefit
    ones; docs/methods/lear2025.md, "Benefit fairness"). With ``w = None`` the weights
    are ``1/|B+|`` and ``1/|B-|`` (the reference's minibatch form, ``sum / numel``); with
    the population form pass
    ``w+ = P(x|s+)``, ``w- = P(x'|s-)`` over bins. As ``eps -> 0`` it tends to the sum over
    equal-benefit pairs of ``|p+ - p-| w+ w-``. An empty group gives 0.

    Args:
        p_plus: probabilities of d1 of the s+ items (steps or bins).
        p_minus: probabilities of d1 of the s- items.
        d_plus: benefits Delta of the s+ items.
        d_minus: benefits Delta of the s- items.
        eps: the radius of "similar benefit" (the reference: 1e-6).
        w_plus: optional weights of the s+ items (used as given).
        w_minus: optional weights of the s- items (used as given).
    """
    pp = np.asarray(p_plus, dtype=np.float64).ravel()
    pm = np.asarray(p_minus, dtype=np.float64).ravel()
    dp = np.asarray(d_plus, dtype=np.float64).ravel()
    dm = np.asarray(d_minus, dtype=np.float64).ravel()
    if pp.size == 0 or pm.size == 0:
        return 0.0
    wp = np.full(pp.size, 1.0 / pp.size) if w_plus is None else np.asarray(w_plus, float).ravel()
    wm = np.full(pm.size, 1.0 / pm.size) if w_minus is None else np.asarray(w_minus, float).ravel()
    num = np.abs(pp[:, None] - pm[None, :])
    den = eps + np.abs(dp[:, None] - dm[None, :])
    return float(np.sum(eps * num / den * wp[:, None] * wm[None, :]))


def dpe_step(groups: Any, prob_grant: Any, delta: Any) -> float:
    """The reference's per-minibatch DPE diagnostic (logged there as ``dpe_loss``).

    ``mean_{t in B0} Delta(x_t, 0) pi(d1|o_t) - mean_{t in B1} Delta(x_t, 1) pi(d1|o_t)``,
    the per-step analogue of :func:`dpe_from_benefit`; an empty group's mean is 0.

    Args:
        groups: ``[B]`` group per step.
        prob_grant: ``[B]`` pi(d1 | o_t).
        delta: ``[B]`` Delta(x_t, s_t) (``info["benefit"]``).
    """
    groups = np.asarray(groups)
    v = np.asarray(prob_grant, dtype=np.float64) * np.asarray(delta, dtype=np.float64)
    means = [float(v[groups == s].mean()) if np.any(groups == s) else 0.0 for s in (0, 1)]
    return means[0] - means[1]


# ----------------------------------------------------------------------------- F-PPO-L distance


#: ``form`` values of :func:`windowed_count_w1`.
W1_FORMS: tuple[str, ...] = ("reference", "sorted_counts", "intended")


def windowed_count_w1(
    groups: Any,
    bins: Any,
    n_bins: int = 14,
    window: int = 300,
    form: str = "reference",
    carry: dict[str, Any] | None = None,
    *,
    p: int = 1,
    blur: float = 0.01,
    scaling: float = 0.5,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Per-step distance W_t between the two groups' recent bin histograms, for F-PPO-L.

    At step t, ``h_s[b]`` counts the last ``window`` decided applicants (step t included)
    of group s in bin b (the reference keeps the last 300 applicants, the one just decided
    included, in one queue shared by both groups). Then:

    * ``form="reference"``: what F-PPO-L's reference code computes: the debiased Sinkhorn
      divergence (:func:`rllib_fair.fairness.sinkhorn.sinkhorn_divergence_1d`, cost
      ``|x - y|^p / p``, final blur ``blur``, annealing ratio ``scaling``; the reference:
      p = 1, blur = 0.01, scaling = 0.5) between ``h_0`` and ``h_1``, each taken as
      ``n_bins`` one-dimensional points whose coordinates are the counts (so it compares
      the multisets of counts, not the score distributions);
    * ``form="sorted_counts"``: the exact 1-Wasserstein distance between those two point
      clouds, ``mean_i |sort(h_0)_i - sort(h_1)_i|``: the value the reference's Sinkhorn
      approaches as ``blur -> 0`` and ``scaling -> 1`` (with the reference's settings it
      comes out about 15-30% lower);
    * ``form="intended"``: W1 between the normalised bin distributions,
      ``sum_b |F_0(b) - F_1(b)|`` with the cumulative distributions ``F_s`` (0 while a
      group has no applicant in the window).

    Resumable across chunks: pass the returned ``carry`` with the next chunk of the same
    episode (``None`` starts an episode).

    Args:
        groups: ``[T]`` group (0 or 1) of each decided applicant.
        bins: ``[T]`` its bin before the decision (``info["credit_bin"]``).
        n_bins: number of bins.
        window: applicants in the window (the reference: 300).
        form: one of :data:`W1_FORMS`.
        carry: state returned by the previous call of the same episode.
        p: Sinkhorn cost exponent of ``form="reference"``, 1 or 2 (reference: 1).
        blur: its final blur scale (reference: 0.01).
        scaling: its annealing ratio, in (0, 1) (reference: 0.5).

    Returns:
        ``(W [T], carry)``; ``carry["last"]`` is the last W (for ``W_t - W_{t-1}``).

    Raises:
        ValueError: on an unknown ``form``, a window < 1 or bad Sinkhorn settings.
    """
    if form not in W1_FORMS:
        raise ValueError(f"form: {form!r} is invalid; valid choices: {', '.join(W1_FORMS)}")
    if isinstance(window, bool) or int(window) != window or int(window) < 1:
        raise ValueError(f"window: {window!r} is invalid; valid: an integer >= 1")
    window = int(window)
    codes = np.asarray(groups, dtype=np.int64) * n_bins + np.asarray(bins, dtype=np.int64)
    prev = np.zeros(0, dtype=np.int64) if carry is None else np.asarray(carry["codes"])
    allc = np.concatenate([prev, codes])
    onehot = np.zeros((allc.size + 1, 2 * n_bins))
    onehot[np.arange(1, allc.size + 1), allc] = 1.0
    cum = np.cumsum(onehot, axis=0)  # cum[k] = counts over the first k codes
    end = np.arange(prev.size + 1, allc.size + 1)  # window ends (exclusive) of this chunk
    counts = cum[end] - cum[np.maximum(end - window, 0)]
    h0, h1 = counts[:, :n_bins], counts[:, n_bins:]
    if form == "reference":
        from rllib_fair.fairness.sinkhorn import sinkhorn_divergence_1d

        if h0.shape[0]:
            w = sinkhorn_divergence_1d(h0, h1, p=p, blur=blur, scaling=scaling)
        else:
            w = np.zeros(0)
    elif form == "sorted_counts":
        w = np.abs(np.sort(h0, axis=1) - np.sort(h1, axis=1)).mean(axis=1)
    else:
        n0 = h0.sum(axis=1, keepdims=True)
        n1 = h1.sum(axis=1, keepdims=True)
        f0 = np.cumsum(h0, axis=1) / np.maximum(n0, 1.0)
        f1 = np.cumsum(h1, axis=1) / np.maximum(n1, 1.0)
        w = np.where((n0[:, 0] > 0) & (n1[:, 0] > 0), np.abs(f0 - f1).sum(axis=1), 0.0)
    last = float(w[-1]) if w.size else (0.0 if carry is None else carry["last"])
    return w, {"codes": allc[max(allc.size - (window - 1), 0) :], "last": last}
