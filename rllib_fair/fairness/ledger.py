"""Long-term benefit rates, their gap (bias), soft bias, and per-step disparity.

Supply and demand come from a fairness notion (:mod:`rllib_fair.fairness.notions`). This
module aggregates them and turns them into rates and gaps:

* pure functions on arrays: :func:`benefit_rates`, :func:`bias` (Eq. 1 of Xu et al. 2024),
  :func:`soft_bias` (Eq. 6), their gradients :func:`bias_grad` / :func:`soft_bias_grad`
  (the ``dh/dz`` of ELBERT-PO), and fairlearn-style :func:`difference` / :func:`ratio`;
* :class:`Ledger`: cumulative, optionally discounted supply and demand per group (Def. 2.2
  of Xu et al. 2024), whose ratio is the long-term benefit rate (Def. 2.3, ratio *after*
  aggregation), used for episode metrics and ELBERT-PO;
* :class:`WindowedDisparity`: the per-step disparity ``Delta_t`` over the episode so far
  (POCAR, Yu et al. 2022) or over the last ``n`` decisions (SELLF), O(F*G) per update;
* :func:`disparity_series`: the same per-step disparity for a whole stacked episode.

Zero-demand convention
----------------------
A group's benefit rate ``S / D`` is **defined only when its demand is positive**,
``D + smoothing > DEMAND_EPS`` (``1e-12``). Everywhere in this package:

1. an undefined rate is *reported* as ``0.0`` (like scikit-learn's ``zero_division=0``),
   next to a boolean mask ``defined`` that says which rates are real;
2. undefined groups are **excluded from every gap**: bias, soft bias and difference are
   computed over the defined groups only and are ``0.0`` when fewer than two groups are
   defined; the ratio is ``1.0`` then (and when the largest defined rate is 0);
3. nothing returns NaN or inf; non-finite rates passed to the pure functions count as
   undefined.

Example: with equal opportunity, a group that had no qualified applicant yet has no
true positive rate, so it neither counts as "rate 0" nor widens the gap.

``smoothing > 0`` adds a constant to every demand, ``rate = S / (D + smoothing)`` (the
POCAR reference implementation uses ``+1``); it makes every rate defined.

The static metric functions in :mod:`rllib_fair.fairness.metrics` deliberately differ:
they follow fairlearn, where a group that is present but has zero demand counts as rate
``0.0`` *and* takes part in the gap.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from rllib_fair.fairness.counts import NUM_FIELDS
from rllib_fair.fairness.notions import Notion, get_notion

__all__ = [
    "DEMAND_EPS",
    "Ledger",
    "WindowedDisparity",
    "benefit_rates",
    "bias",
    "bias_grad",
    "difference",
    "disparity_series",
    "ratio",
    "soft_bias",
    "soft_bias_grad",
]

DEMAND_EPS = 1e-12
"""A rate ``S / (D + smoothing)`` is defined only when ``D + smoothing > DEMAND_EPS``."""


# --------------------------------------------------------------------------------------
# Pure functions
# --------------------------------------------------------------------------------------


def _check_smoothing(smoothing: float) -> float:
    smoothing = float(smoothing)
    if not (math.isfinite(smoothing) and smoothing >= 0.0):
        raise ValueError(f"smoothing must be a finite number >= 0, got {smoothing}")
    return smoothing


def _check_beta(beta: float) -> float:
    beta = float(beta)
    if not (math.isfinite(beta) and beta > 0.0):
        raise ValueError(f"beta (soft-bias temperature) must be a finite number > 0, got {beta}")
    return beta


def _out(value: np.ndarray) -> float | np.ndarray:
    """Returns a Python float for a 0-d result, else the array."""
    return float(value) if value.ndim == 0 else value


def _masked(rates, defined) -> tuple[np.ndarray, np.ndarray]:
    """Returns ``(rates, mask)`` as arrays; non-finite rates are never defined."""
    z = np.asarray(rates, dtype=np.float64)
    if z.ndim == 0 or z.shape[-1] == 0:
        raise ValueError(f"rates: expected shape [..., n_groups] with n_groups >= 1, got {z.shape}")
    mask = np.isfinite(z)
    if defined is not None:
        mask &= np.broadcast_to(np.asarray(defined, dtype=bool), z.shape)
    return z, mask


def _extremes(z: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns the max, min and count of the defined entries along the last axis."""
    hi = np.max(z, axis=-1, where=mask, initial=-np.inf)
    lo = np.min(z, axis=-1, where=mask, initial=np.inf)
    return hi, lo, np.count_nonzero(mask, axis=-1)


def benefit_rates(supply, demand, smoothing: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Per-group benefit rates ``S / (D + smoothing)`` under the zero-demand convention.

    Args:
        supply: supply, shape ``[..., K, G]`` (any shape broadcastable with ``demand``).
        demand: demand, same shape.
        smoothing: non-negative constant added to the demand.

    Returns:
        ``(rates, defined)``: ``float64`` rates with undefined entries set to ``0.0``, and
        the boolean mask of defined entries (``D + smoothing > DEMAND_EPS``).
    """
    smoothing = _check_smoothing(smoothing)
    supply = np.asarray(supply, dtype=np.float64)
    denom = np.asarray(demand, dtype=np.float64) + smoothing
    defined = denom > DEMAND_EPS
    rates = np.zeros(np.broadcast_shapes(supply.shape, denom.shape), dtype=np.float64)
    # Def. 2.3, Xu et al. 2024: long-term benefit rate eta^S_g / eta^D_g
    np.divide(supply, denom, out=rates, where=defined)
    return rates, np.broadcast_to(defined, rates.shape).copy()


def bias(rates, defined=None) -> float | np.ndarray:
    """Gap between the largest and smallest defined rate, along the last axis.

    Args:
        rates: benefit rates, shape ``[..., G]``.
        defined: optional boolean mask of defined rates (default: all finite rates).

    Returns:
        ``max_g z_g - min_g z_g`` over the defined groups (0.0 when fewer than two are
        defined): a float for 1-d input, else an array over the leading dims.
    """
    z, mask = _masked(rates, defined)
    hi, lo, n = _extremes(z, mask)
    # Eq. 1, Xu et al. 2024: b = max_g eta^S_g/eta^D_g - min_g eta^S_g/eta^D_g
    return _out(np.where(n >= 2, hi - lo, 0.0))


def difference(rates, defined=None) -> float | np.ndarray:
    """Between-groups difference ``group_max - group_min`` as in fairlearn; same as :func:`bias`.

    Args:
        rates: benefit rates, shape ``[..., G]``.
        defined: optional boolean mask of defined rates.

    Returns:
        The difference over the defined groups (0.0 when fewer than two are defined).
    """
    return bias(rates, defined)


def ratio(rates, defined=None) -> float | np.ndarray:
    """Between-groups ratio ``group_min / group_max`` over defined groups, as in fairlearn.

    Args:
        rates: non-negative benefit rates, shape ``[..., G]``.
        defined: optional boolean mask of defined rates.

    Returns:
        ``min / max`` over the defined groups; 1.0 when fewer than two are defined or
        when the largest rate is 0 (all equal), where fairlearn would give NaN.
    """
    z, mask = _masked(rates, defined)
    hi, lo, n = _extremes(z, mask)
    ok = (n >= 2) & (hi > 0.0)
    quotient = np.divide(lo, hi, out=np.ones_like(hi), where=ok)
    return _out(quotient)


def soft_bias(rates, beta: float, defined=None) -> float | np.ndarray:
    """Soft bias: the max and min of the gap replaced by temperature-``beta`` log-sum-exps.

    ``b_soft = (1/beta) * (logsumexp(beta z) + logsumexp(-beta z))`` over the defined
    groups, computed stably as ``(max - min) + (log sum e^{beta(z - max)} +
    log sum e^{beta(min - z)}) / beta``. With ``M`` defined groups
    ``b <= b_soft <= b + 2 log(M) / beta`` (Prop. 3.3, Xu et al. 2024).

    Args:
        rates: benefit rates, shape ``[..., G]``.
        beta: temperature, > 0 (larger is closer to :func:`bias`).
        defined: optional boolean mask of defined rates.

    Returns:
        The soft bias (0.0 when fewer than two groups are defined): a float for 1-d
        input, else an array over the leading dims.
    """
    beta = _check_beta(beta)
    z, mask = _masked(rates, defined)
    hi, lo, n = _extremes(z, mask)
    any_defined = n > 0
    hi = np.where(any_defined, hi, 0.0)
    lo = np.where(any_defined, lo, 0.0)
    # Undefined entries are parked at the extreme so exp() stays in (0, 1].
    up = np.exp(beta * (np.where(mask, z, hi[..., None]) - hi[..., None]))
    down = np.exp(beta * (lo[..., None] - np.where(mask, z, lo[..., None])))
    up_sum = np.where(any_defined, np.sum(up, axis=-1, where=mask), 1.0)
    down_sum = np.where(any_defined, np.sum(down, axis=-1, where=mask), 1.0)
    # Eq. 6, Xu et al. 2024: b_soft = (1/beta)[log sum e^{beta z} + log sum e^{-beta z}]
    value = (hi - lo) + (np.log(up_sum) + np.log(down_sum)) / beta
    return _out(np.where(n >= 2, value, 0.0))


def soft_bias_grad(rates, beta: float, defined=None) -> np.ndarray:
    """Gradient of :func:`soft_bias` with respect to the rates.

    ``d b_soft / d z_g = softmax(beta z)_g - softmax(-beta z)_g`` over the defined groups;
    0 on undefined groups and everywhere when fewer than two groups are defined. ELBERT-PO
    uses it for ``dh/dz`` (Eq. 5 and 7, Xu et al. 2024; multiply by ``2 b_soft`` for
    ``h = b_soft^2``).

    Args:
        rates: benefit rates, shape ``[..., G]``.
        beta: temperature, > 0.
        defined: optional boolean mask of defined rates.

    Returns:
        An array of the same shape as ``rates``.
    """
    beta = _check_beta(beta)
    z, mask = _masked(rates, defined)
    hi, lo, n = _extremes(z, mask)
    any_defined = (n > 0)[..., None]
    hi = np.where(any_defined, hi[..., None], 0.0)
    lo = np.where(any_defined, lo[..., None], 0.0)
    up = np.where(mask, np.exp(beta * (np.where(mask, z, hi) - hi)), 0.0)
    down = np.where(mask, np.exp(beta * (lo - np.where(mask, z, lo))), 0.0)
    up_sum = np.where(any_defined, up.sum(axis=-1, keepdims=True), 1.0)
    down_sum = np.where(any_defined, down.sum(axis=-1, keepdims=True), 1.0)
    # d/dz of Eq. 6, Xu et al. 2024: softmax(beta z) - softmax(-beta z)
    grad = up / up_sum - down / down_sum
    return np.where((n >= 2)[..., None], grad, 0.0)


def bias_grad(rates, defined=None) -> np.ndarray:
    """A (sub)gradient of :func:`bias`: +1 at the largest and -1 at the smallest defined rate.

    Ties go to the first group; the gradient is 0 everywhere when fewer than two groups
    are defined or all defined rates are equal. ELBERT-PO uses it for ``dh/dz`` with the
    exact bias (Eq. 1 and 5, Xu et al. 2024).

    Args:
        rates: benefit rates, shape ``[..., G]``.
        defined: optional boolean mask of defined rates.

    Returns:
        An array of the same shape as ``rates``.
    """
    z, mask = _masked(rates, defined)
    n = np.count_nonzero(mask, axis=-1)
    arg_hi = np.argmax(np.where(mask, z, -np.inf), axis=-1)
    arg_lo = np.argmin(np.where(mask, z, np.inf), axis=-1)
    groups = np.arange(z.shape[-1])
    grad = (groups == arg_hi[..., None]).astype(np.float64)
    grad -= groups == arg_lo[..., None]
    return np.where((n >= 2)[..., None], grad, 0.0)


# --------------------------------------------------------------------------------------
# Ledger
# --------------------------------------------------------------------------------------


def _check_n_groups(n_groups: int) -> int:
    if isinstance(n_groups, bool) or int(n_groups) != n_groups or n_groups < 1:
        raise ValueError(f"n_groups must be an integer >= 1, got {n_groups!r}")
    return int(n_groups)


def _group_labels(group_names: Sequence[str] | None, n_groups: int) -> list[str]:
    if group_names is None:
        return [str(g) for g in range(n_groups)]
    names = [str(name) for name in group_names]
    if len(names) != n_groups:
        raise ValueError(f"group_names: expected {n_groups} names, got {len(names)}")
    return names


class Ledger:
    """Cumulative (optionally discounted) supply and demand per group.

    After steps ``t = 0, 1, ...`` the ledger holds ``sum_t gamma**t S_g(t)`` and
    ``sum_t gamma**t D_g(t)`` for every supply-demand pair of the notion (Def. 2.2, Xu et
    al. 2024); their ratio is the long-term benefit rate (Def. 2.3) and the largest
    minus the smallest rate is the bias (Eq. 1). Rates follow the module's zero-demand
    convention (undefined groups reported as 0.0 and excluded from every gap).

    For notions with several pairs (equalized odds), :meth:`bias`, :meth:`soft_bias` and
    :meth:`difference` return the largest gap over the pairs and :meth:`ratio` the
    smallest ratio (fairlearn's ``agg="worst_case"``).

    Args:
        notion: a :class:`~rllib_fair.fairness.notions.Notion` or its short name.
        n_groups: number of groups ``G``.
        gamma: discount in ``(0, 1]``; step ``t`` since :meth:`reset` is weighted
            ``gamma**t``.
        smoothing: non-negative constant added to every demand when computing rates.

    Attributes:
        notion: the fairness notion.
        n_groups: number of groups.
        gamma: the discount.
        smoothing: the demand smoothing constant.
        steps: number of steps recorded (summed over merged ledgers).
    """

    def __init__(
        self,
        notion: str | Notion,
        n_groups: int,
        gamma: float = 1.0,
        smoothing: float = 0.0,
    ) -> None:
        self.notion: Notion = get_notion(notion)
        self.n_groups: int = _check_n_groups(n_groups)
        gamma = float(gamma)
        if not (0.0 < gamma <= 1.0):
            raise ValueError(f"gamma must lie in (0, 1], got {gamma}")
        self.gamma: float = gamma
        self.smoothing: float = _check_smoothing(smoothing)
        k = self.notion.n_pairs
        self._k = k
        self._coef = np.concatenate([self.notion.supply_coef, self.notion.demand_coef])
        self._totals = np.zeros((2 * k, self.n_groups), dtype=np.float64)
        self._step = np.zeros_like(self._totals)
        self._weight = 1.0
        self.steps = 0

    # ---- construction and bookkeeping ------------------------------------------------

    @classmethod
    def from_counts(
        cls,
        notion: str | Notion,
        counts: np.ndarray,
        gamma: float = 1.0,
        smoothing: float = 0.0,
    ) -> Ledger:
        """Builds a ledger from one step ``[F, G]`` or stacked steps ``[T, F, G]``.

        Args:
            notion: notion or short name.
            counts: the counts; ``G`` is read from the last axis.
            gamma: discount in ``(0, 1]``.
            smoothing: constant added to the demand for rates.

        Returns:
            A new ledger holding the given steps.
        """
        counts = np.asarray(counts, dtype=np.float64)
        ledger = cls(notion, counts.shape[-1], gamma=gamma, smoothing=smoothing)
        if counts.ndim == 2:
            ledger.update(counts)
        else:
            ledger.update_many(counts)
        return ledger

    @classmethod
    def combine(cls, ledgers: Iterable[Ledger]) -> Ledger:
        """Returns a new ledger holding the sum of ``ledgers`` (e.g. over episodes).

        Args:
            ledgers: one or more compatible ledgers (same notion, groups and gamma).

        Returns:
            A new ledger; the inputs are left unchanged.

        Raises:
            ValueError: if ``ledgers`` is empty or the ledgers are incompatible.
        """
        items = list(ledgers)
        if not items:
            raise ValueError("Ledger.combine needs at least one ledger")
        total = items[0].copy()
        for other in items[1:]:
            total.merge(other)
        return total

    def reset(self) -> None:
        """Clears supply and demand and restarts the discount at ``gamma**0``."""
        self._totals.fill(0.0)
        self._weight = 1.0
        self.steps = 0

    def copy(self) -> Ledger:
        """Returns an independent copy."""
        new = Ledger(self.notion, self.n_groups, gamma=self.gamma, smoothing=self.smoothing)
        new._totals[...] = self._totals
        new._weight = self._weight
        new.steps = self.steps
        return new

    def merge(self, other: Ledger) -> Ledger:
        """Adds another ledger's supply and demand into this one, in place.

        Use it to aggregate ledgers of separate episodes (each discounted from its own
        start). This ledger's discount clock is unchanged, so further :meth:`update`
        calls keep the weights they would have had without the merge.

        Args:
            other: a ledger with the same notion, number of groups and gamma.

        Returns:
            ``self``, to allow chaining.

        Raises:
            ValueError: if the ledgers are incompatible.
        """
        if not isinstance(other, Ledger):
            raise TypeError(f"can only merge a Ledger, got {type(other).__name__}")
        if other.notion != self.notion or other.n_groups != self.n_groups:
            raise ValueError(
                f"cannot merge a ledger of {other.notion.name} over {other.n_groups} groups "
                f"into one of {self.notion.name} over {self.n_groups} groups"
            )
        if other.gamma != self.gamma:
            raise ValueError(f"cannot merge ledgers with gamma {other.gamma} and {self.gamma}")
        self._totals += other._totals
        self.steps += other.steps
        return self

    # ---- updates ---------------------------------------------------------------------

    def update(self, counts: np.ndarray) -> None:
        """Adds one step.

        Args:
            counts: counts of shape ``[NUM_FIELDS, n_groups]``.
        """
        if type(counts) is not np.ndarray:
            counts = np.asarray(counts, dtype=np.float64)
        if counts.shape != (NUM_FIELDS, self.n_groups):
            raise ValueError(
                f"counts: expected shape ({NUM_FIELDS}, {self.n_groups}), got {counts.shape}"
            )
        np.matmul(self._coef, counts, out=self._step)
        if self._weight != 1.0:
            # Def. 2.2, Xu et al. 2024: step t enters with weight gamma**t
            self._step *= self._weight
        self._totals += self._step
        self._weight *= self.gamma
        self.steps += 1

    def update_many(self, counts: np.ndarray) -> None:
        """Adds ``T`` consecutive steps at once; equals ``T`` calls of :meth:`update`.

        Args:
            counts: counts of shape ``[T, NUM_FIELDS, n_groups]``.
        """
        counts = np.asarray(counts, dtype=np.float64)
        if counts.ndim != 3 or counts.shape[1:] != (NUM_FIELDS, self.n_groups):
            raise ValueError(
                f"counts: expected shape (T, {NUM_FIELDS}, {self.n_groups}), got {counts.shape}"
            )
        n_steps = counts.shape[0]
        if n_steps == 0:
            return
        per_step = self._coef @ counts  # [T, 2K, G]
        # Def. 2.2, Xu et al. 2024: weights gamma**t, continuing the current clock
        factors = np.full(n_steps, self.gamma)
        factors[0] = self._weight
        weights = np.cumprod(factors)
        self._totals += np.tensordot(weights, per_step, axes=(0, 0))
        self._weight = float(weights[-1]) * self.gamma
        self.steps += n_steps

    # ---- read-outs -------------------------------------------------------------------

    @property
    def supply(self) -> np.ndarray:
        """Cumulative supply, shape ``[K, G]`` (a copy)."""
        return self._totals[: self._k].copy()

    @property
    def demand(self) -> np.ndarray:
        """Cumulative demand, shape ``[K, G]`` (a copy)."""
        return self._totals[self._k :].copy()

    def rates(self) -> np.ndarray:
        """Long-term benefit rates, shape ``[K, G]``; undefined rates are 0.0.

        One row per supply-demand pair (``notion.pair_names``: one pair for most notions,
        ``tpr`` and ``fpr`` for equalized odds), one column per group: ``rates()[0]`` is
        the per-group rate of a single-pair notion; :meth:`by_group` names them.
        """
        return benefit_rates(self._totals[: self._k], self._totals[self._k :], self.smoothing)[0]

    @property
    def defined(self) -> np.ndarray:
        """Boolean mask ``[K, G]`` of defined rates (demand + smoothing > ``DEMAND_EPS``)."""
        return benefit_rates(self._totals[: self._k], self._totals[self._k :], self.smoothing)[1]

    def _rates_defined(self) -> tuple[np.ndarray, np.ndarray]:
        return benefit_rates(self._totals[: self._k], self._totals[self._k :], self.smoothing)

    def pair_bias(self) -> np.ndarray:
        """Bias of every supply-demand pair, shape ``[K]``."""
        return np.asarray(bias(*self._rates_defined()), dtype=np.float64).reshape(self._k)

    def bias(self) -> float:
        """The gap: the largest over pairs of max minus min defined rate (Eq. 1)."""
        return float(np.max(self.pair_bias()))

    def difference(self) -> float:
        """fairlearn-style between-groups difference; equals :meth:`bias`."""
        return self.bias()

    def ratio(self) -> float:
        """Smallest over pairs of min/max defined rate (1.0 when no gap is defined)."""
        return float(np.min(ratio(*self._rates_defined())))

    def soft_bias(self, beta: float) -> float:
        """Largest over pairs of the soft bias with temperature ``beta`` (Eq. 6)."""
        rates, defined = self._rates_defined()
        return float(np.max(soft_bias(rates, beta, defined)))

    def bias_grad(self) -> np.ndarray:
        """Subgradient of each pair's bias w.r.t. its rates, shape ``[K, G]``."""
        return bias_grad(*self._rates_defined())

    def soft_bias_grad(self, beta: float) -> np.ndarray:
        """Gradient of each pair's soft bias w.r.t. its rates, shape ``[K, G]``."""
        rates, defined = self._rates_defined()
        return soft_bias_grad(rates, beta, defined)

    def by_group(self, group_names: Sequence[str] | None = None) -> dict:
        """Per pair, per group: supply, demand, rate and whether the rate is defined.

        Args:
            group_names: optional names for the groups (default ``"0"``, ``"1"``, ...).

        Returns:
            ``{pair: {group: {"supply": float, "demand": float, "rate": float,
            "defined": bool}}}``.
        """
        names = _group_labels(group_names, self.n_groups)
        rates, defined = self._rates_defined()
        supply, demand = self._totals[: self._k], self._totals[self._k :]
        return {
            pair: {
                name: {
                    "supply": float(supply[k, g]),
                    "demand": float(demand[k, g]),
                    "rate": float(rates[k, g]),
                    "defined": bool(defined[k, g]),
                }
                for g, name in enumerate(names)
            }
            for k, pair in enumerate(self.notion.pair_names)
        }

    def summary(
        self, group_names: Sequence[str] | None = None, beta: float | None = None
    ) -> dict[str, float]:
        """Flat ``{key: float}`` dict for metric loggers.

        Keys always carry the pair level, also for single-pair notions, so they name
        what they measure and have the same shape for every notion:

        * ``rate/<pair>/<group>``, ``supply/<pair>/<group>``, ``demand/<pair>/<group>``
          (e.g. ``rate/tpr/1``; undefined rates are 0.0, see the module docstring),
        * ``bias/<pair>`` (each pair's gap) and ``bias`` (the largest),
        * ``ratio`` (the smallest min/max ratio),
        * ``soft_bias`` when ``beta`` is given.

        Args:
            group_names: optional names for the groups (default ``"0"``, ``"1"``, ...).
            beta: optional soft-bias temperature.

        Returns:
            The flat dict of floats.
        """
        names = _group_labels(group_names, self.n_groups)
        rates, defined = self._rates_defined()
        supply, demand = self._totals[: self._k], self._totals[self._k :]
        out: dict[str, float] = {}
        for k, pair in enumerate(self.notion.pair_names):
            for g, name in enumerate(names):
                out[f"rate/{pair}/{name}"] = float(rates[k, g])
                out[f"supply/{pair}/{name}"] = float(supply[k, g])
                out[f"demand/{pair}/{name}"] = float(demand[k, g])
        pair_gaps = np.asarray(bias(rates, defined), dtype=np.float64).reshape(self._k)
        for k, pair in enumerate(self.notion.pair_names):
            out[f"bias/{pair}"] = float(pair_gaps[k])
        out["bias"] = float(np.max(pair_gaps))
        out["ratio"] = float(np.min(ratio(rates, defined)))
        if beta is not None:
            out["soft_bias"] = float(np.max(soft_bias(rates, beta, defined)))
        return out

    def __repr__(self) -> str:
        return (
            f"Ledger({self.notion.name!r}, n_groups={self.n_groups}, gamma={self.gamma}, "
            f"smoothing={self.smoothing}, steps={self.steps}, bias={self.bias():.4g})"
        )


# --------------------------------------------------------------------------------------
# Per-step disparity
# --------------------------------------------------------------------------------------


class WindowedDisparity:
    """Running per-step disparity ``Delta_t`` over the episode so far or a sliding window.

    After each :meth:`update` the value is the gap of the benefit rates computed from the
    supply and demand summed over

    * every step since :meth:`reset` (``window=None``): the running gap used by POCAR
      (Yu et al. 2022), identical to an undiscounted :class:`Ledger` over the same steps;
    * the last ``window`` steps (``window=n``): SELLF's per-step disparity over the last
      ``n`` decisions (with one decision per step, ``n`` decisions); ``window=1`` is the
      gap of the current step alone (e.g. the current population state for
      qualification parity).

    The zero-demand convention of the module applies. :attr:`value` is the unsigned gap
    (largest over pairs of max minus min defined rate). For two groups,
    :attr:`signed_value` is SELLF's signed disparity ``Delta = mu^1 - mu^0`` = rate of
    group 1 minus rate of group 0 (0.0 unless both are defined); with several pairs it is
    taken from the pair with the largest absolute gap.

    Each update costs O(F * G): a ring buffer of per-step supply and demand with running
    sums, no copies of the history and no new arrays beyond one small list. The running
    sums are recomputed from the ring every ``window`` steps so rounding cannot drift.

    Args:
        notion: a :class:`~rllib_fair.fairness.notions.Notion` or its short name.
        n_groups: number of groups ``G``.
        window: ``None`` for all steps since reset, else the number of most recent steps.
        smoothing: non-negative constant added to every demand.

    Attributes:
        notion: the fairness notion.
        n_groups: number of groups.
        window: the window length (``None``: all steps since reset).
        smoothing: the demand smoothing constant.
        steps: number of updates since reset.
    """

    def __init__(
        self,
        notion: str | Notion,
        n_groups: int,
        window: int | None = None,
        smoothing: float = 0.0,
    ) -> None:
        self.notion: Notion = get_notion(notion)
        self.n_groups: int = _check_n_groups(n_groups)
        if window is not None and (isinstance(window, bool) or int(window) != window or window < 1):
            raise ValueError(f"window must be None or an integer >= 1, got {window!r}")
        self.window: int | None = None if window is None else int(window)
        self.smoothing: float = _check_smoothing(smoothing)
        k = self.notion.n_pairs
        self._k = k
        self._coef = np.concatenate([self.notion.supply_coef, self.notion.demand_coef])
        self._shape = (NUM_FIELDS, self.n_groups)
        self._sums = np.zeros((2 * k, self.n_groups), dtype=np.float64)
        self._step = np.zeros_like(self._sums)
        self._ring = None if self.window is None else np.zeros((self.window, 2 * k, self.n_groups))
        self._pos = 0
        self._value = 0.0
        self.steps = 0

    def reset(self) -> None:
        """Forgets all steps."""
        self._sums.fill(0.0)
        if self._ring is not None:
            self._ring.fill(0.0)
        self._pos = 0
        self._value = 0.0
        self.steps = 0

    def update(self, counts: np.ndarray) -> float:
        """Adds one step and returns the disparity after it.

        Args:
            counts: counts of shape ``[NUM_FIELDS, n_groups]``.

        Returns:
            The current disparity :attr:`value`.
        """
        if type(counts) is not np.ndarray:
            counts = np.asarray(counts, dtype=np.float64)
        if counts.shape != self._shape:
            raise ValueError(f"counts: expected shape {self._shape}, got {counts.shape}")
        step = self._step
        np.matmul(self._coef, counts, out=step)
        ring = self._ring
        if ring is None:
            self._sums += step
        else:
            slot = ring[self._pos]
            self._sums -= slot
            slot[...] = step
            self._sums += step
            self._pos += 1
            if self._pos == self.window:
                self._pos = 0
                np.sum(ring, axis=0, out=self._sums)
        self.steps += 1
        self._value = self._gap()
        return self._value

    def _pair_rates(self, k: int, sums: list) -> list:
        """Rates of pair ``k`` as a list, ``None`` where undefined (pure Python, small G)."""
        smoothing = self.smoothing
        out = []
        for s, d in zip(sums[k], sums[self._k + k]):
            d += smoothing
            out.append(s / d if d > DEMAND_EPS else None)
        return out

    def _gap(self) -> float:
        sums = self._sums.tolist()
        best = 0.0
        for k in range(self._k):
            defined = [r for r in self._pair_rates(k, sums) if r is not None]
            if len(defined) >= 2:
                gap = max(defined) - min(defined)
                if gap > best:
                    best = gap
        return best

    @property
    def value(self) -> float:
        """Current unsigned disparity (0.0 before the first update)."""
        return self._value

    @property
    def signed_value(self) -> float:
        """SELLF's signed disparity ``rate[group 1] - rate[group 0]`` (two groups only).

        Raises:
            ValueError: if the tracker does not have exactly two groups.
        """
        if self.n_groups != 2:
            raise ValueError(f"signed_value needs exactly 2 groups, got {self.n_groups}")
        sums = self._sums.tolist()
        best = 0.0
        for k in range(self._k):
            r0, r1 = self._pair_rates(k, sums)
            if r0 is not None and r1 is not None and abs(r1 - r0) > abs(best):
                best = r1 - r0
        return best

    @property
    def supply(self) -> np.ndarray:
        """Supply summed over the window, shape ``[K, G]`` (a copy)."""
        return self._sums[: self._k].copy()

    @property
    def demand(self) -> np.ndarray:
        """Demand summed over the window, shape ``[K, G]`` (a copy)."""
        return self._sums[self._k :].copy()

    def rates(self) -> np.ndarray:
        """Benefit rates over the window, shape ``[K, G]``; undefined rates are 0.0."""
        return benefit_rates(self._sums[: self._k], self._sums[self._k :], self.smoothing)[0]

    @property
    def defined(self) -> np.ndarray:
        """Boolean mask ``[K, G]`` of defined rates over the window."""
        return benefit_rates(self._sums[: self._k], self._sums[self._k :], self.smoothing)[1]

    def __repr__(self) -> str:
        return (
            f"WindowedDisparity({self.notion.name!r}, n_groups={self.n_groups}, "
            f"window={self.window}, smoothing={self.smoothing}, value={self._value:.4g})"
        )


def disparity_series(
    notion: str | Notion,
    counts: np.ndarray,
    window: int | None = None,
    smoothing: float = 0.0,
    signed: bool = False,
) -> np.ndarray:
    """Per-step disparity of a stacked episode, vectorised; matches :class:`WindowedDisparity`.

    Entry ``t`` is the value :meth:`WindowedDisparity.update` returns after step ``t``
    (or :attr:`WindowedDisparity.signed_value` when ``signed``), computed from
    cumulative sums (up to floating-point rounding for fractional counts).

    Args:
        notion: notion or short name.
        counts: counts of shape ``[T, NUM_FIELDS, G]``.
        window: ``None`` for all steps so far, else the number of most recent steps.
        smoothing: non-negative constant added to every demand.
        signed: return ``rate[1] - rate[0]`` (two groups only) instead of the gap.

    Returns:
        A ``float64`` array of shape ``[T]``.
    """
    notion = get_notion(notion)
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 3 or counts.shape[1] != NUM_FIELDS:
        raise ValueError(f"counts: expected shape (T, {NUM_FIELDS}, n_groups), got {counts.shape}")
    if window is not None and (isinstance(window, bool) or int(window) != window or window < 1):
        raise ValueError(f"window must be None or an integer >= 1, got {window!r}")
    supply, demand = notion.supply_demand(counts)  # [T, K, G]
    supply = np.cumsum(supply, axis=0)
    demand = np.cumsum(demand, axis=0)
    if window is not None and window < counts.shape[0]:
        supply[window:] = supply[window:] - supply[:-window]
        demand[window:] = demand[window:] - demand[:-window]
    rates, defined = benefit_rates(supply, demand, smoothing)
    if not signed:
        if counts.shape[0] == 0:
            return np.zeros(0)
        return np.max(bias(rates, defined).reshape(counts.shape[0], -1), axis=-1)
    if counts.shape[2] != 2:
        raise ValueError(f"signed disparity needs exactly 2 groups, got {counts.shape[2]}")
    both = defined[..., 0] & defined[..., 1]
    per_pair = np.where(both, rates[..., 1] - rates[..., 0], 0.0)  # [T, K]
    pick = np.argmax(np.abs(per_pair), axis=-1)
    return np.take_along_axis(per_pair, pick[:, None], axis=-1)[:, 0]
