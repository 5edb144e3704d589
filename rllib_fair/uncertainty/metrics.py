"""Per-quarter fairness and profit metrics of Lee et al. 2026 (App. B, Sec. 3; numpy only).

Fairness metrics are computed against the **true** labels ``Y_real`` (App. B: "All fairness
metrics are computed with respect to Y_real"), from the package's counts record
(:func:`rllib_fair.fairness.counts.counts_from_decisions`) and notions:

===========  ======================================  =====================================
metric       definition (App. B)                      package notion (supply / demand)
===========  ======================================  =====================================
SR(a)        P(D = 1 | A = a)                         ``demographic_parity``
FNR(a)       P(D = 0 | Y_real = 1, A = a)             1 - ``equal_opportunity`` (TPR)
FPR(a)       P(D = 1 | Y_real = 0, A = a)             ``equalized_odds`` pair ``"fpr"``
Acc(a)       P(D = Y_real | A = a) (plotted in App.   ``accuracy_parity``
             C, not defined in App. B)
===========  ======================================  =====================================

Signed differences are ``Delta M = M(0) - M(1)`` (App. B). Reading the sign:
with group 0 the disadvantaged group, a **negative** Delta SR or Delta FPR (fewer loans) and
a **positive** Delta FNR (more creditworthy applicants rejected) mean group 0 is worse off;
the paper's "negative = disadvantaged" is right for SR and FPR and backwards for FNR. Under
``l_y_b > 0`` the biased group 0 is the *favoured* one (the generator adds ``+ l_y_b R A``).
A rate whose group has
no denominator (e.g. no ``Y_real = 0`` in a group) is undefined: reported as 0 with a
``*_defined`` flag of False (package convention, NaN-free).

Profit (g = ``gain_percentage`` = 0.4, l = 1 the principal): a granted loan earns
``g`` if repaid and loses ``l`` if not. Table 1 bookkeeping and the utility ``u(d, y1, g, l)``
of Sec. 3 (observed + unobserved part, implemented exactly as written: a rejected defaulter
earns ``+g``, a rejected repayer costs ``-l``).
"""

from __future__ import annotations

import numpy as np

from rllib_fair.fairness.counts import DECIDED, QUALIFIED, counts_from_decisions
from rllib_fair.fairness.notions import get_notion

__all__ = [
    "PROFIT_NORMALIZATIONS",
    "auc",
    "group_rates",
    "profit",
    "quarter_metrics",
    "signed_differences",
    "table1_bookkeeping",
    "utility",
]

PROFIT_NORMALIZATIONS: tuple[str, ...] = ("per_100_applicants", "per_loan", "none")
RATES: tuple[str, ...] = ("sr", "fpr", "fnr", "acc")


def _ratio(supply: np.ndarray, demand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    defined = demand > 0
    out = np.where(defined, supply / np.where(defined, demand, 1.0), 0.0)
    return out, defined


def group_rates(
    decisions: np.ndarray, y_real: np.ndarray, group: np.ndarray, n_groups: int = 2
) -> dict[str, np.ndarray]:
    """Per-group SR, FPR, FNR and accuracy against ``y_real`` (App. B).

    Returns:
        ``{"sr", "fpr", "fnr", "acc"}`` -> ``[n_groups]`` rates and ``"<rate>_defined"`` ->
        ``[n_groups]`` bool (False where the group has no denominator; the rate is then 0),
        plus ``"counts"``: the package counts record ``[NUM_FIELDS, n_groups]``.
    """
    counts = counts_from_decisions(y_real, decisions, group, n_groups)
    out: dict[str, np.ndarray] = {"counts": counts}
    s, d = get_notion("demographic_parity").supply_demand(counts)
    out["sr"], out["sr_defined"] = _ratio(s[0], d[0])
    s, d = get_notion("equalized_odds").supply_demand(counts)  # pairs (tpr, fpr)
    tpr, tpr_defined = _ratio(s[0], d[0])
    out["fnr"] = np.where(tpr_defined, 1.0 - tpr, 0.0)
    out["fnr_defined"] = tpr_defined
    out["fpr"], out["fpr_defined"] = _ratio(s[1], d[1])
    s, d = get_notion("accuracy_parity").supply_demand(counts)
    out["acc"], out["acc_defined"] = _ratio(s[0], d[0])
    return out


def signed_differences(rates: dict[str, np.ndarray]) -> dict[str, float | bool]:
    """``Delta M = M(0) - M(1)`` for SR, FPR, FNR, Acc, with ``delta_<m>_defined`` flags."""
    out: dict[str, float | bool] = {}
    for name in RATES:
        ok = bool(rates[f"{name}_defined"][0] and rates[f"{name}_defined"][1])
        out[f"delta_{name}"] = float(rates[name][0] - rates[name][1]) if ok else 0.0
        out[f"delta_{name}_defined"] = ok
    return out


def profit(decisions: np.ndarray, y: np.ndarray, gain: float = 0.4, loss: float = 1.0) -> float:
    """``Pi = sum_{i granted} (y_i g - (1 - y_i) l)``."""
    d = np.asarray(decisions, dtype=bool)
    y = np.asarray(y, dtype=np.float64)[d]
    return float(np.sum(y * gain - (1.0 - y) * loss))


def utility(decisions, y1, gain: float = 0.4, loss: float = 1.0) -> float:
    """``sum_i u(d_i, y1_i, g, l)``, ``u = d(y g - (1-y) l) + (1-d)((1-y) g - y l)`` (Sec. 3)."""
    d = np.asarray(decisions, dtype=np.float64)
    y = np.asarray(y1, dtype=np.float64)
    return float(np.sum(d * (y * gain - (1 - y) * loss) + (1 - d) * ((1 - y) * gain - y * loss)))


def table1_bookkeeping(
    decisions: np.ndarray, y1: np.ndarray, gain: float = 0.4, loss: float = 1.0
) -> dict[str, float]:
    """Table 1 of the paper in money: realised / unrealised gains and losses, and ``sum u``.

    Returns:
        ``realised_gain = g #(D=1, Y=1)``, ``realised_loss = l #(D=1, Y=0)``,
        ``unrealised_gain = g #(D=0, Y=1)`` (opportunity cost), ``unrealised_loss =
        l #(D=0, Y=0)`` (avoided), ``utility`` (Sec. 3, as written).
    """
    d = np.asarray(decisions, dtype=bool)
    y = np.asarray(y1, dtype=bool)
    return {
        "realised_gain": gain * float(np.sum(d & y)),
        "realised_loss": loss * float(np.sum(d & ~y)),
        "unrealised_gain": gain * float(np.sum(~d & y)),
        "unrealised_loss": loss * float(np.sum(~d & ~y)),
        "utility": utility(d, y, gain, loss),
    }


def auc(score: np.ndarray, label: np.ndarray) -> float:
    """ROC AUC of ``score`` vs binary ``label`` (Mann-Whitney, ties averaged; 0.5 if one class)."""
    score = np.asarray(score, dtype=np.float64)
    label = np.asarray(label, dtype=bool)
    n_pos, n_neg = int(label.sum()), int((~label).sum())
    if n_pos == 0 or n_neg == 0:
        return 0.5
    order = np.argsort(score, kind="mergesort")
    ranks = np.empty(score.shape[0])
    sorted_scores = score[order]
    # average ranks of ties
    _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    avg = first + (counts + 1) / 2.0
    ranks[order] = np.repeat(avg, counts)
    return float((ranks[label].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def quarter_metrics(
    decisions: np.ndarray,
    y_real: np.ndarray,
    group: np.ndarray,
    *,
    y_obs: np.ndarray | None = None,
    gain: float = 0.4,
    loss: float = 1.0,
    profit_label: str = "y_real",
    profit_normalization: str = "per_100_applicants",
    p_hat: np.ndarray | None = None,
    halfwidth: np.ndarray | None = None,
) -> dict[str, float]:
    """All per-quarter metrics (the paper's App. B plus profit) as one flat ``{name: float}`` dict.

    Args:
        decisions: ``[N]`` granted (bool / 0-1).
        y_real: ``[N]`` true labels (fairness metrics, Table 1).
        group: ``[N]`` group 0/1.
        y_obs: ``[N]`` the bank's recorded labels ``Y`` (for ``profit_label="y"`` and the
            observed-only profit estimate); defaults to ``y_real``.
        gain: ``g``, margin on a repaid loan.
        loss: ``l``, lost on a default.
        profit_label: ``"y_real"`` (default: true repayment) or ``"y"``.
        profit_normalization: the reported ``utility_q``: ``"per_100_applicants"``
            (``100 Pi_q / N_q``, default), ``"per_loan"`` (``Pi_q / |D_q|``) or ``"none"``.
        p_hat: optional scores (diagnostics: AUC, mean score per group).
        halfwidth: optional CI half-widths (diagnostics: mean half-width per group).

    Returns:
        Keys ``sr_0, sr_1, fpr_0, ..., delta_sr, delta_sr_defined, ...``, ``profit`` (raw
        ``Pi_q``), ``profit_per_100``, ``profit_per_loan``, ``utility_q`` (normalised),
        ``profit_observed`` (on ``y_obs``), Table 1 entries, ``n_applicants``, ``n_granted``,
        ``n_granted_<g>``, ``n_<g>`` and the diagnostics when given.
    """
    if profit_label not in ("y_real", "y"):
        raise ValueError(f"profit_label must be 'y_real' or 'y', got {profit_label!r}")
    if profit_normalization not in PROFIT_NORMALIZATIONS:
        raise ValueError(f"profit_normalization must be one of {PROFIT_NORMALIZATIONS}")
    d = np.asarray(decisions, dtype=bool)
    y_real = np.asarray(y_real, dtype=np.int64)
    group = np.asarray(group, dtype=np.int64)
    y_obs = y_real if y_obs is None else np.asarray(y_obs, dtype=np.int64)
    n = d.shape[0]
    rates = group_rates(d, y_real, group)
    out: dict[str, float] = {}
    for name in RATES:
        for g in (0, 1):
            out[f"{name}_{g}"] = float(rates[name][g])
    out.update(signed_differences(rates))
    for g in (0, 1):
        out[f"n_{g}"] = float(rates["counts"][DECIDED, g])
        out[f"n_qualified_{g}"] = float(rates["counts"][QUALIFIED, g])
        out[f"n_granted_{g}"] = float(np.sum(d & (group == g)))
    n_granted = int(d.sum())
    out["n_applicants"] = float(n)
    out["n_granted"] = float(n_granted)
    pi = profit(d, y_real if profit_label == "y_real" else y_obs, gain, loss)
    out["profit"] = pi
    out["profit_per_100"] = 100.0 * pi / n if n else 0.0
    out["profit_per_loan"] = pi / n_granted if n_granted else 0.0
    out["utility_q"] = {
        "per_100_applicants": out["profit_per_100"],
        "per_loan": out["profit_per_loan"],
        "none": pi,
    }[profit_normalization]
    out["profit_observed"] = profit(d, y_obs, gain, loss)  # what the bank's records show
    out.update(table1_bookkeeping(d, y_real, gain, loss))
    if p_hat is not None:
        p_hat = np.asarray(p_hat, dtype=np.float64)
        out["auc"] = auc(p_hat, y_real)
        for g in (0, 1):
            sel = group == g
            out[f"mean_p_{g}"] = float(p_hat[sel].mean()) if sel.any() else 0.0
    if halfwidth is not None:
        halfwidth = np.asarray(halfwidth, dtype=np.float64)
        for g in (0, 1):
            sel = group == g
            out[f"mean_halfwidth_{g}"] = float(halfwidth[sel].mean()) if sel.any() else 0.0
    return out
