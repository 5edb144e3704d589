"""The five decision strategies of Lee et al. 2026 behind one :func:`decide` (numpy only).

Paper Sec. 4 ("Debiasing approaches"). Each quarter the bank scores the quarter's applicants
with the model trained up to the previous quarter and grants at most ``B_q`` loans (budget).
Common pieces (our choices where the paper is silent are marked as such):

* eligible set ``E_q = {i : p_i >= rejection_threshold}`` (Table 2: 0.1), computed by the
  caller (:func:`eligible_mask`);
* certain set ``C_q`` = the top ``floor(proportion_certain * B_q)`` eligible applicants by
  ``p`` (ties by index), computed in exact decimal arithmetic (float rounding would
  give floor(0.7 * 690) = 482 instead of 483);
  ``tau_q = min_{i in C_q} p_i`` is the quarter's "clear acceptance threshold" (1 if empty);
* uncertain region ``U_q = E_q minus C_q`` ("the region between a clear acceptance and
  rejection threshold", Sec. 4);
* exploration budget ``B^E_q = min(round(delta * N_q), B_q - |C_q|, |candidates|)``;
* budget fill (``fill_budget=True``): loans left after ``C_q`` and the exploration set go to
  the highest-``p`` remaining eligible applicants, so every strategy grants
  ``min(B_q, |E_q|)`` loans.

==========================  ===============================================================
``naive``                   top ``min(B_q, |E_q|)`` eligible by ``p``
``naive_exploration``       ``C_q`` + uniform sample of ``B^E_q`` from ``U_q`` + fill
``prob_weighted``           ``C_q`` + successive sampling from ``U_q`` with probabilities
                            proportional to ``p`` ("stratified sample ... weighed by their
                            probability of repayment") + fill
``uncertainty_aware``       ``C_q`` + uniform sample from ``U'_q = {i in U_q: p_i + Delta_i
                            >= tau_q}`` ("confidence intervals overlap with the decision
                            threshold"; the UCB rule of Sec. 3) + fill
``counterfactual``          no exploration; top ``min(B_q, |E_q|)`` by the scores of the model
                            trained on the counterfactual objective (the training differs,
                            not the decision rule; see :mod:`.loop`)
==========================  ===============================================================

``exploration_sizing="literal"`` reads the paper's per-method wording
instead: naive exploration includes each ``U_q`` applicant with probability ``delta``
("any applicant could be chosen with probability delta"); the other two sample "until the
budget runs out", i.e. ``B_q - |C_q|`` draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = [
    "EXPLORATION_SIZINGS",
    "STRATEGIES",
    "Decision",
    "decide",
    "eligible_mask",
    "exact_floor",
    "exact_round",
    "top_k",
]

STRATEGIES: tuple[str, ...] = (
    "naive",
    "naive_exploration",
    "prob_weighted",
    "uncertainty_aware",
    "counterfactual",
)
EXPLORATION_SIZINGS: tuple[str, ...] = ("unified", "literal")


def _decimal(value: float) -> Fraction:
    # The decimal the user wrote (0.7 -> 7/10), not the binary float (0.69999...).
    return Fraction(repr(float(value)))


def exact_floor(fraction: float, count: int) -> int:
    """``floor(fraction * count)`` in exact decimal arithmetic (0.7 * 690 is 483, not 482)."""
    return math.floor(_decimal(fraction) * int(count))


def exact_round(fraction: float, count: float) -> int:
    """``round(fraction * count)`` in exact decimal arithmetic, halves rounded up."""
    return math.floor(_decimal(fraction) * Fraction(repr(float(count))) + Fraction(1, 2))


def eligible_mask(p_hat: np.ndarray, rejection_threshold: float = 0.1) -> np.ndarray:
    """``E_q = {i : p_i >= rejection_threshold}`` (Table 2: minimum p to grant a loan)."""
    return np.asarray(p_hat, dtype=np.float64) >= rejection_threshold


def top_k(p_hat: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest ``p_hat`` among ``mask`` (ties by lower index)."""
    idx = np.flatnonzero(mask)
    if k <= 0 or idx.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(-p_hat[idx], kind="stable")
    return idx[order[:k]]


@dataclass(frozen=True)
class Decision:
    """One quarter's decision and the sets that produced it (all masks are ``[N]`` bool).

    Attributes:
        granted: loans granted (``D``); ``|granted| <= budget``, ``granted`` within eligible.
        certain: the certain set ``C_q``.
        uncertain: the uncertain region ``U_q`` (eligible, not certain).
        candidates: the exploration candidates (``U_q``, or ``U'_q`` for uncertainty-aware;
            empty for naive and counterfactual).
        explored: the exploration set ``X_q``.
        filled: loans given by the budget fill.
        tau: the clear acceptance threshold ``tau_q`` (1 if ``C_q`` is empty).
        n_explore: the exploration budget ``B^E_q`` (before capping by candidates for
            ``literal`` sizing of naive exploration: the realised count is ``explored``).
        budget: ``B_q``.
    """

    granted: np.ndarray
    certain: np.ndarray
    uncertain: np.ndarray
    candidates: np.ndarray
    explored: np.ndarray
    filled: np.ndarray
    tau: float
    n_explore: int
    budget: int


def decide(
    strategy: str,
    p_hat: np.ndarray,
    budget: int,
    eligible: np.ndarray,
    rng: np.random.Generator | None = None,
    *,
    halfwidth: np.ndarray | None = None,
    proportion_certain: float = 0.7,
    delta: float = 0.05,
    fill_budget: bool = True,
    exploration_sizing: str = "unified",
) -> Decision:
    """Decides one quarter (paper Sec. 4).

    Args:
        strategy: one of :data:`STRATEGIES`.
        p_hat: ``[N]`` predicted repayment probabilities (scores) of the quarter.
        budget: ``B_q``, the most loans that may be granted.
        eligible: ``[N]`` bool, ``E_q`` (see :func:`eligible_mask`).
        rng: generator for the exploration draws (needed by the three exploration methods).
        halfwidth: ``[N]`` delta-method half-widths ``Delta_i`` (uncertainty-aware only).
        proportion_certain: share of the budget for the certain set (Table 2: 0.6-0.8).
        delta: fraction of the quarter's applicants reserved for exploration (0.02-0.1).
        fill_budget: give unspent loans to the highest-``p`` remaining eligible applicants.
        exploration_sizing: ``"unified"`` (default) or ``"literal"`` (module docstring).

    Returns:
        The :class:`Decision`.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
    if exploration_sizing not in EXPLORATION_SIZINGS:
        raise ValueError(f"exploration_sizing must be one of {EXPLORATION_SIZINGS}")
    if not 0.0 <= proportion_certain <= 1.0 or not 0.0 <= delta <= 1.0:
        raise ValueError("proportion_certain and delta must lie in [0, 1]")
    p_hat = np.asarray(p_hat, dtype=np.float64)
    eligible = np.asarray(eligible, dtype=bool)
    n = p_hat.shape[0]
    if eligible.shape != (n,):
        raise ValueError(f"eligible must have shape ({n},)")
    budget = int(budget)
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    empty = np.zeros(n, dtype=bool)

    def mask_of(idx: np.ndarray) -> np.ndarray:
        m = np.zeros(n, dtype=bool)
        m[idx] = True
        return m

    if strategy in ("naive", "counterfactual"):
        granted = mask_of(top_k(p_hat, eligible, budget))
        tau = float(p_hat[granted].min()) if granted.any() else 1.0
        return Decision(granted, granted.copy(), eligible & ~granted, empty, empty, empty,
                        tau, 0, budget)  # fmt: skip

    if rng is None:
        raise ValueError(f"strategy {strategy!r} samples: pass a seeded rng")
    certain = mask_of(top_k(p_hat, eligible, exact_floor(proportion_certain, budget)))
    tau = float(p_hat[certain].min()) if certain.any() else 1.0
    uncertain = eligible & ~certain
    left = budget - int(certain.sum())

    if strategy == "uncertainty_aware":
        if halfwidth is None:
            raise ValueError("uncertainty_aware needs the half-widths (halfwidth=...)")
        halfwidth = np.asarray(halfwidth, dtype=np.float64)
        # CI overlaps the threshold: p - Delta <= tau <= p + Delta; on U_q p <= tau.
        candidates = uncertain & (p_hat + halfwidth >= tau) & (p_hat - halfwidth <= tau)
    else:
        candidates = uncertain
    cand_idx = np.flatnonzero(candidates)

    if exploration_sizing == "unified":
        n_explore = min(exact_round(delta, n), left, cand_idx.size)
    elif strategy == "naive_exploration":
        n_explore = min(left, cand_idx.size)  # cap; the draw below is Bernoulli(delta)
    else:
        n_explore = min(left, cand_idx.size)  # "until the budget runs out"

    if n_explore <= 0 or cand_idx.size == 0:
        chosen = np.zeros(0, dtype=np.int64)
    elif strategy == "naive_exploration" and exploration_sizing == "literal":
        chosen = cand_idx[rng.random(cand_idx.size) < delta]
        if chosen.size > n_explore:
            chosen = rng.choice(chosen, size=n_explore, replace=False)
    elif strategy == "prob_weighted":
        w = p_hat[cand_idx]
        # Successive sampling without replacement, renormalising after each draw; numpy's
        # choice(replace=False, p=...) is exactly that.
        chosen = rng.choice(cand_idx, size=n_explore, replace=False, p=w / w.sum())
    else:
        chosen = rng.choice(cand_idx, size=n_explore, replace=False)
    explored = mask_of(chosen)

    filled = empty
    if fill_budget:
        rest = budget - int(certain.sum()) - int(explored.sum())
        filled = mask_of(top_k(p_hat, eligible & ~certain & ~explored, rest))
    granted = certain | explored | filled
    return Decision(granted, certain, uncertain, candidates, explored, filled, tau,
                    int(n_explore), budget)  # fmt: skip
