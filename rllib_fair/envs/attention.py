"""``fair/Attention-v0`` and ``fair/AttentionHard-v0``: attention allocation to incident sites.

The dynamics follow ml-fairness-gym's ``LocationAllocationEnv``
(``environments/attention_allocation.py``, commit 38eaf45) in the setting POCAR (Yu et al.
2022) trained on, with POCAR's PPO wrapper around it (``attention_allocation_experiment/
agents/ppo/ppo_wrapper_env.py``: score actions turned into an integer allocation, an
8-step observation history): 5 sites, 6 attention units, initial incident rates
(8, 6, 4, 3, 1.5), dynamic rate 0.1, reward ``discovered - 0.25 * missed``, 1000-step
episodes. The harder variant is ELBERT's (Xu et al. 2024, App. D.1, Eq. 25-26;
``harder_env.py``): 30 units, rates (30, 25, 22.5, 17.5, 12.5), per-site decrease and
increase rates, reward ``-0.25 * missed``.
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import combinations
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rllib_fair.envs.base import (
    MAX_MAGNITUDE,
    FairEnvMixin,
    _fmt,
    as_count,
    as_discrete_action,
    as_flag,
    as_float_array,
    as_positive,
    check_magnitude,
)
from rllib_fair.envs.declared import amount, max_steps
from rllib_fair.fairness.counts import (
    ALLOCATED,
    DECIDED,
    NEEDED,
    POPULATION,
    QUALIFIED,
    QUALIFIED_MASS,
    SELECTED,
    SELECTED_QUALIFIED,
    empty_counts,
)
from rllib_fair.settings import Rule, Setting, bool_setting, choice, integer

#: POCAR / ELBERT original setting (ml-fairness-gym FAccT 2020 experiment).
DEFAULT_INCIDENT_RATES: tuple[float, ...] = (8.0, 6.0, 4.0, 3.0, 1.5)
DEFAULT_ATTENTION_UNITS = 6
DEFAULT_DYNAMIC_RATE = 0.1

#: ELBERT harder setting (App. D.1, Eq. 25-26; ``harder_env.py``).
HARD_INCIDENT_RATES: tuple[float, ...] = (30.0, 25.0, 22.5, 17.5, 12.5)
HARD_ATTENTION_UNITS = 30
HARD_DECREASE_RATES: tuple[float, ...] = (0.004, 0.01, 0.016, 0.02, 0.04)
HARD_INCREASE_RATES: tuple[float, ...] = (0.08, 0.2, 0.4, 0.8, 2.0)

N_SITES = len(DEFAULT_INCIDENT_RATES)

#: Valid values of ``action_type``.
ACTION_TYPES: tuple[str, ...] = ("scores", "allocation")

#: Largest number of allocations ``action_type="allocation"`` enumerates.
MAX_ALLOCATIONS = 1_000_000

#: Remaining shares (in units) equal when rounded to this many decimals count as tied
#: in the score conversion (the lower site index wins).
TIE_DECIMALS = 9

# Counts rows that carry the incidents / the discovered incidents of a step.
_OCCURRED_ROWS = np.array([DECIDED, QUALIFIED, NEEDED])
_SEEN_ROWS = np.array([SELECTED, SELECTED_QUALIFIED, ALLOCATED])


@lru_cache(maxsize=8)
def allocation_table(attention_units: int, n_sites: int) -> np.ndarray:
    """Every way to split ``attention_units`` units over ``n_sites`` sites, one per row.

    Rows are in ascending lexicographic order, from ``(0, ..., 0, units)`` to
    ``(units, 0, ..., 0)``; there are ``comb(units + n_sites - 1, n_sites - 1)`` rows. The
    returned array is read-only and shared between callers.
    """
    bars = attention_units + n_sites - 1
    # Stars and bars: the n - 1 bar positions, in lexicographic order, give the parts.
    cuts = np.array(list(combinations(range(bars), n_sites - 1)), dtype=np.int64)
    cuts = cuts.reshape(-1, n_sites - 1)
    edges = np.concatenate(
        [
            np.full((cuts.shape[0], 1), -1, dtype=np.int64),
            cuts,
            np.full((cuts.shape[0], 1), bars, dtype=np.int64),
        ],
        axis=1,
    )
    table = np.diff(edges, axis=1) - 1
    table = table.astype(np.int16 if attention_units < 2**15 else np.int64)
    table.flags.writeable = False
    return table


_PER_SITE = Setting("", "list", item=amount("", "", zero=True), length=N_SITES)


def _growth_problem(v) -> str | None:
    rates, inc = v["incident_rates"], v["increase_rates"]
    incs = list(inc) if isinstance(inc, (list, tuple)) else [inc] * len(rates)
    peak = max(r + v["max_steps"] * i for r, i in zip(rates, incs))
    if peak <= MAX_MAGNITUDE:
        return None
    return (
        f"increase_rates: {inc!r} is invalid with max_steps={v['max_steps']}: an incident rate "
        f"can grow to {peak:g}; valid: incident_rates + max_steps * increase_rates <= "
        f"{MAX_MAGNITUDE:g}"
    )


def _allocation_problem(v) -> str | None:
    if v["action_type"] != "allocation":
        return None
    units, n = v["attention_units"], len(v["incident_rates"])
    count = math.comb(units + n - 1, n - 1)
    if count <= MAX_ALLOCATIONS:
        return None
    return (
        f"attention_units: {units!r} is invalid with action_type 'allocation' ({count:,} "
        f"allocations over {n} sites); valid: at most {MAX_ALLOCATIONS:,} allocations (or "
        "action_type 'scores')"
    )


class AttentionEnv(FairEnvMixin, gym.Env):
    """Allocating attention units to sites to discover incidents (POCAR/ELBERT original).

    ## Description

    An agent allocates ``attention_units`` units of attention over ``n`` sites (5 by
    default) at every step (ml-fairness-gym's attention allocation; D'Amour et al. 2020).
    Each site ``g`` has an incident rate ``mu_g``: ``y_g ~ Poisson(mu_g)`` incidents occur,
    of which ``min(a_g, y_g)`` are discovered when the site got ``a_g`` units (each unit
    discovers at most one incident; ml-fairness-gym with miss probability 0). After the
    draw the rate responds to the allocation:

    * ``a_g > 0``: ``mu_g <- max(0, mu_g - decrease_rates[g] * a_g)``;
    * ``a_g = 0``: ``mu_g <- mu_g + increase_rates[g]``.

    With the defaults (POCAR, ELBERT App. D.1 Eq. 23) there are 5 sites with initial rates
    (8, 6, 4, 3, 1.5), 6 units and ``d = 0.1`` for both directions. ``AttentionHardEnv``
    (``fair/AttentionHard-v0``) is ELBERT's harder version with other defaults only.

    ## Action Space

    ``action_type="scores"`` (default, POCAR's PPO wrapper): ``Box(-score_bound,
    score_bound, (n,), float32)`` with ``score_bound = 3``. The scores (clipped to the
    bounds, as Stable-Baselines3 does before ``env.step``) go through a softmax to shares
    ``p``; then, as in the reference, one unit at a time goes to the site with the largest
    remaining share, which then loses ``1 / attention_units``, until all units are given.
    The result always sums to ``attention_units``. It is computed in closed form: every
    site gets ``floor(units * p_g)`` units and the units left over go to the sites with the
    largest fractional parts of ``units * p_g``. **Ties** (remaining shares equal to
    ``TIE_DECIMALS = 9`` decimals, in units) go to the **lower site index**, as
    ``np.argmax`` does in the reference; e.g. all-equal scores with 6 units give
    ``(2, 1, 1, 1, 1)``. (The reference loop subtracts ``1 / units`` in floating point,
    so on shares that tie exactly its pick can depend on rounding: shares
    ``(5, 3, 2, 1, 1) / 12`` give ``(3, 1, 1, 1, 0)`` there and ``(3, 2, 1, 0, 0)`` here;
    away from such ties both agree.) :meth:`scores_to_allocation` exposes the conversion.

    ``action_type="allocation"``: ``Discrete(K)`` over all ``K = comb(units + n - 1,
    n - 1)`` integer allocations summing to ``attention_units`` (210 for the defaults,
    46,376 for the harder version), in ascending lexicographic order: action ``k`` is row
    ``k`` of :attr:`allocations`, and :meth:`allocation_to_action` gives the index of an
    allocation. Every action is valid, so random exploration covers all allocations.

    ## Observation Space

    The last ``history_len`` (8) steps, oldest first, each a row of ``4n`` values (``3n``
    with ``obs_ratio=False``), flattened to ``Box(0, high, (history_len * 4n,), float32)``
    (160 values by default), as in POCAR's wrapper:

    | part | size | raw value | high |
    |---|---|---|---|
    | discovered incidents per site | n | ``min(a_g, y_g)`` | ``attention_units`` |
    | incidents per site | n | ``min(y_g, count_cap)`` | ``count_cap`` |
    | allocation per site | n | ``a_g`` | ``attention_units`` |
    | discovery ratio per site | n | ``sum_t seen / (sum_t occurred + 1)`` | 1 |

    The ratio is POCAR's per-site term over the episode so far (ELBERT's
    ``include_delta``; switch off with ``obs_ratio``). Poisson counts are unbounded, so the
    incident counts are **clipped at** ``count_cap`` (50 here, 200 in the harder version)
    in the observation only; dynamics, reward and ``info`` use the true counts. With
    ``normalize_obs=True`` (default) every value is divided by its ``high``, so the space
    is ``Box(0, 1)``; with ``False`` the raw (clipped) values are kept and ``high`` is the
    column above. After ``reset`` the history is all zeros (no step yet).

    ## Rewards

    ``discovered_weight * sum_g min(a_g, y_g) - missed_weight * sum_g (y_g - min(a_g,
    y_g))``: ``1`` and ``0.25`` here (POCAR ``zeta_0``, ``zeta_1``; ELBERT ``zeta``).

    ## Episode End

    * Termination: never (ml-fairness-gym's attention environment has no end state).
    * Truncation: after ``max_steps`` steps (1000, POCAR; ELBERT trains and evaluates on
      attention with 1024-step episodes, ``max_steps=1024``).

    ## Arguments

    | argument | default | meaning |
    |---|---|---|
    | ``incident_rates`` | (8, 6, 4, 3, 1.5) | initial rate per site; ``n`` = its length |
    | ``attention_units`` | 6 | units allocated every step |
    | ``decrease_rates`` | 0.1 | rate decrease per unit, scalar or per site |
    | ``increase_rates`` | 0.1 | rate increase without attention, scalar or per site |
    | ``discovered_weight`` | 1.0 | reward per discovered incident |
    | ``missed_weight`` | 0.25 | penalty per missed incident |
    | ``max_steps`` | 1000 | truncation horizon |
    | ``history_len`` | 8 | steps in the observation |
    | ``count_cap`` | 50 | clip of incident counts in the observation |
    | ``obs_ratio`` | True | include the discovery-ratio part |
    | ``normalize_obs`` | True | scale the observation to ``[0, 1]`` |
    | ``action_type`` | "scores" | ``"scores"`` (Box) or ``"allocation"`` (Discrete) |
    | ``score_bound`` | 3.0 | bound of the score Box |

    ## Fairness signals

    Each site is a group (``GROUP_NAMES = ("site_0", ..., "site_4")``; with another number
    of sites the instance's ``GROUP_NAMES`` is ``site_0 .. site_{n-1}``). ``info`` of
    ``step`` (``reset`` gives the same keys with zero per-step rows):

    * ``"fairness"``: float64 ``[NUM_FIELDS, n]`` counts
      (:mod:`rllib_fair.fairness.counts`) of this step: ``ALLOCATED`` = discovered
      incidents, ``NEEDED`` = incidents (supply and demand of ``benefit_rate``, ELBERT's
      ``r_U`` and ``r_B``, Eq. 24). Each incident is also an individual who deserves
      discovery: ``DECIDED = QUALIFIED = `` incidents, ``SELECTED = SELECTED_QUALIFIED = ``
      discovered, so ``equal_opportunity`` is the discovery probability (ELBERT App. A,
      "equality of discovery probability") and ``demographic_parity`` gives the same
      ratio. Population rows, after the step: ``POPULATION = 1`` per site and
      ``QUALIFIED_MASS`` = the site's incident rate (the population state is the rate;
      it is not a mass in ``[0, 1]``).
    * ``"group"``, ``"label"``, ``"decision"``: ``-1`` and ``"label_observed"``: ``0``
      (no single individual is decided on).
    * ``"allocation"``: int64 units per site used this step (zeros after ``reset``).
    * ``"incident_rates"``: float64 rates after the step.

    ## Version History

    * v0: initial version.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    GROUP_NAMES: ClassVar[tuple[str, ...]] = tuple(f"site_{g}" for g in range(N_SITES))
    SUPPORTED_NOTIONS: ClassVar[tuple[str, ...]] = (
        "benefit_rate",
        "equal_opportunity",
        "demographic_parity",
    )
    DEFAULT_NOTION: ClassVar[str] = "benefit_rate"
    DESCRIPTION: ClassVar[str] = (
        "attention allocation: 6 units over 5 sites, Poisson incidents, attention lowers "
        "a site's incident rate; POCAR/ELBERT original setting"
    )

    DECLARED_SETTINGS: ClassVar[tuple] = (
        Setting(
            "incident_rates",
            "list",
            f"initial Poisson incident rate of each site (one per group: {N_SITES} sites)",
            item=amount("", "", zero=True),
            length=N_SITES,
        ),
        integer("attention_units", "units allocated each step", 1),
        Setting(
            "decrease_rates",
            "union",
            "rate decrease per attention unit (one for all sites, or one per site)",
            options=(amount("", "", zero=True), _PER_SITE),
        ),
        Setting(
            "increase_rates",
            "union",
            "rate increase of a site left without attention (one, or one per site)",
            options=(amount("", "", zero=True), _PER_SITE),
        ),
        amount("discovered_weight", "reward per discovered incident", zero=True),
        amount("missed_weight", "penalty per missed incident", zero=True),
        max_steps(),
        integer("history_len", "past steps in the observation", 1),
        integer("count_cap", "cap of the observed incident counts", 1),
        bool_setting("obs_ratio", "the discovered/occurred ratio is observed"),
        bool_setting("normalize_obs", "observations scaled to [0, 1]"),
        choice(
            "action_type",
            ACTION_TYPES,
            "scores: one score per site; allocation: one discrete allocation",
        ),
        amount("score_bound", "bound of the scores (action_type scores)"),
    )
    DECLARED_RULES: ClassVar[tuple] = (
        Rule(
            "rates_bounded",
            ("increase_rates", "incident_rates", "max_steps"),
            f"incident_rates + max_steps * increase_rates <= {MAX_MAGNITUDE:g} (rates stay finite)",
            lambda v: _growth_problem(v),
            {"increase_rates": 1e14, "max_steps": 1000},
        ),
        Rule(
            "allocations_countable",
            ("attention_units", "action_type"),
            f"with action_type allocation, at most {MAX_ALLOCATIONS:,} allocations",
            lambda v: _allocation_problem(v),
            {"attention_units": 200, "action_type": "allocation"},
        ),
    )

    def __init__(
        self,
        incident_rates: Any = DEFAULT_INCIDENT_RATES,
        attention_units: int = DEFAULT_ATTENTION_UNITS,
        decrease_rates: Any = DEFAULT_DYNAMIC_RATE,
        increase_rates: Any = DEFAULT_DYNAMIC_RATE,
        discovered_weight: float = 1.0,
        missed_weight: float = 0.25,
        max_steps: int = 1000,
        history_len: int = 8,
        count_cap: int = 50,
        obs_ratio: bool = True,
        normalize_obs: bool = True,
        action_type: str = "scores",
        score_bound: float = 3.0,
    ) -> None:
        rates = as_float_array("incident_rates", incident_rates, (None,))
        n = rates.shape[0]
        if n < 2:
            raise ValueError(
                f"incident_rates={_fmt(incident_rates)}: expected at least 2 sites (one rate each)"
            )
        if np.any(rates < 0.0):
            raise ValueError(f"incident_rates={_fmt(incident_rates)}: every rate must be >= 0")
        check_magnitude("incident_rates", incident_rates, rates)
        self.attention_units = as_count("attention_units", attention_units)
        self.decrease_rates = _per_site("decrease_rates", decrease_rates, n)
        self.increase_rates = _per_site("increase_rates", increase_rates, n)
        self.discovered_weight = as_positive(
            "discovered_weight", discovered_weight, allow_zero=True
        )
        self.missed_weight = as_positive("missed_weight", missed_weight, allow_zero=True)
        self.max_steps = as_count("max_steps", max_steps)
        # A rate grows by at most increase_rates[g] per step; it is a Poisson mean and
        # the missed incidents enter the reward, so it must stay bounded.
        peak = float(np.max(rates + self.max_steps * self.increase_rates))
        if not peak <= MAX_MAGNITUDE:
            raise ValueError(
                f"increase_rates={_fmt(increase_rates)}, max_steps={self.max_steps}: an incident "
                f"rate can grow to {peak:g} within an episode; expected incident_rates + "
                f"max_steps * increase_rates <= {MAX_MAGNITUDE:g} (lower either)"
            )
        self.history_len = as_count("history_len", history_len)
        self.count_cap = as_count("count_cap", count_cap)
        self.obs_ratio = as_flag("obs_ratio", obs_ratio)
        self.normalize_obs = as_flag("normalize_obs", normalize_obs)
        if not isinstance(action_type, str) or action_type not in ACTION_TYPES:
            raise ValueError(f"action_type={action_type!r}: expected one of {list(ACTION_TYPES)}")
        self.action_type = action_type
        self.score_bound = as_positive("score_bound", score_bound)

        self.n_sites = n
        if n != len(self.GROUP_NAMES):
            self.GROUP_NAMES = tuple(f"site_{g}" for g in range(n))  # type: ignore[misc]
        self.initial_incident_rates = rates.copy()
        self.initial_incident_rates.flags.writeable = False
        self._init_rates = rates.tolist()
        self._dec = self.decrease_rates.tolist()
        self._inc = self.increase_rates.tolist()

        # Action space.
        units = self.attention_units
        self._table: np.ndarray | None = None
        self._table_index: dict[tuple[int, ...], int] | None = None
        self._discrete = action_type == "allocation"
        if not self._discrete:
            bound = self.score_bound
            self.action_space = spaces.Box(-bound, bound, shape=(n,), dtype=np.float32)
        else:
            n_alloc = math.comb(units + n - 1, n - 1)
            if n_alloc > MAX_ALLOCATIONS:
                raise ValueError(
                    f"action_type='allocation' with attention_units={units} and {n} sites "
                    f"has {n_alloc:,} allocations: expected at most {MAX_ALLOCATIONS:,} "
                    f"(use action_type='scores')"
                )
            self._table = allocation_table(units, n)
            self.action_space = spaces.Discrete(n_alloc)

        # Observation space: history rows of [seen, occurred, allocation(, ratio)].
        parts = 4 if self.obs_ratio else 3
        self._row_size = parts * n
        raw_high = [float(units)] * n + [float(self.count_cap)] * n + [float(units)] * n
        if self.obs_ratio:
            raw_high += [1.0] * n
        if self.normalize_obs:
            high = np.ones(self._row_size * self.history_len, dtype=np.float32)
            self._unit_scale = 1.0 / units
            self._count_scale = 1.0 / self.count_cap
        else:
            high = np.tile(np.asarray(raw_high, dtype=np.float32), self.history_len)
            self._unit_scale = 1.0
            self._count_scale = 1.0
        self.observation_space = spaces.Box(
            np.zeros_like(high), high, shape=high.shape, dtype=np.float32
        )
        # Ring buffer written twice (rows i and i + H) so the ordered window is one slice.
        self._hist = np.zeros((2 * self.history_len, self._row_size), dtype=np.float32)
        self._pos = 0

        # Episode state (set in reset()).
        self._rates: list[float] = list(self._init_rates)
        self._rates_arr = np.array(self._init_rates, dtype=np.float64)
        self._cum_seen = [0] * n
        self._cum_occurred = [0] * n
        self._t = -1  # -1: not reset yet

    # ------------------------------------------------------------------ public state

    @property
    def incident_rates(self) -> np.ndarray:
        """Current incident rate per site (a float64 copy)."""
        return np.array(self._rates, dtype=np.float64)

    @property
    def elapsed_steps(self) -> int:
        """Steps taken since the last reset."""
        return max(self._t, 0)

    @property
    def allocations(self) -> np.ndarray:
        """Read-only ``[K, n]`` table of the allocations of ``action_type="allocation"``."""
        if self._table is None:
            units, n = self.attention_units, self.n_sites
            if math.comb(units + n - 1, n - 1) > MAX_ALLOCATIONS:
                raise ValueError(
                    f"attention_units={units} with {n} sites: more than "
                    f"{MAX_ALLOCATIONS:,} allocations, too many to enumerate"
                )
            self._table = allocation_table(units, n)
        return self._table

    def scores_to_allocation(self, scores: Any) -> np.ndarray:
        """Converts a score vector to the integer allocation ``step`` would use (int64)."""
        return np.array(self._scores_to_alloc(scores), dtype=np.int64)

    def allocation_to_action(self, allocation: Any) -> int:
        """Index of ``allocation`` among :attr:`allocations` (``action_type="allocation"``).

        Raises:
            ValueError: if ``allocation`` is not ``n`` non-negative integers summing to
                ``attention_units``.
        """
        if self._table_index is None:
            self._table_index = {tuple(row): k for k, row in enumerate(self.allocations.tolist())}
        try:
            key = tuple(int(v) for v in np.asarray(allocation).reshape(-1))
            if not np.array_equal(np.asarray(allocation, dtype=np.float64).reshape(-1), key):
                key = ()
        except (TypeError, ValueError):
            key = ()
        if key not in self._table_index:
            raise ValueError(
                f"allocation={_fmt(allocation)}: expected {self.n_sites} non-negative integers "
                f"summing to attention_units={self.attention_units}"
            )
        return self._table_index[key]

    # ------------------------------------------------------------------ gymnasium API

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Restores the initial rates and clears the observation history."""
        super().reset(seed=seed)
        n = self.n_sites
        self._rates = list(self._init_rates)
        self._rates_arr = np.array(self._init_rates, dtype=np.float64)
        self._cum_seen = [0] * n
        self._cum_occurred = [0] * n
        self._hist[:] = 0.0
        self._pos = 0
        self._t = 0
        counts = empty_counts(n)
        counts[POPULATION] = 1.0
        counts[QUALIFIED_MASS] = self._rates_arr
        info = {
            "fairness": counts,
            "group": -1,
            "label": -1,
            "decision": -1,
            "label_observed": 0,
            "allocation": np.zeros(n, dtype=np.int64),
            "incident_rates": self._rates_arr.copy(),
        }
        return self._hist[: self.history_len].flatten(), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Allocates the units, draws incidents, updates the rates and the history."""
        if self._t < 0:
            raise RuntimeError(f"{type(self).__name__}.step() called before reset()")
        self._check_episode_running()
        if self._discrete:
            alloc = self._index_to_alloc(action)
        else:
            alloc = self._scores_to_alloc(action)

        # One scalar draw per site: the same draws as one array call on the rates, which
        # spends most of its time checking its argument.
        draw = self.np_random.poisson
        occurred = [draw(r) for r in self._rates]
        seen = [a if a < y else y for a, y in zip(alloc, occurred)]
        rates = self._rates
        dec = self._dec
        inc = self._inc
        for g, a in enumerate(alloc):
            if a:
                r = rates[g] - dec[g] * a
                rates[g] = r if r > 0.0 else 0.0
            else:
                rates[g] += inc[g]
        rates_arr = self._rates_arr = np.array(rates, dtype=np.float64)
        self._t += 1

        n_seen = sum(seen)
        n_missed = sum(occurred) - n_seen
        reward = self.discovered_weight * n_seen - self.missed_weight * n_missed

        # Observation row, written at the ring position and its mirror.
        cum_seen = self._cum_seen
        cum_occ = self._cum_occurred
        us = self._unit_scale
        cs = self._count_scale
        cap = self.count_cap
        row = [s * us for s in seen]
        row += [(y if y < cap else cap) * cs for y in occurred]
        row += [a * us for a in alloc]
        for g in range(self.n_sites):
            cum_seen[g] += seen[g]
            cum_occ[g] += occurred[g]
        if self.obs_ratio:
            row += [s / (y + 1) for s, y in zip(cum_seen, cum_occ)]
        hist = self._hist
        h = self.history_len
        pos = self._pos
        hist[pos] = row
        hist[pos + h] = hist[pos]
        pos = self._pos = pos + 1 if pos + 1 < h else 0
        obs = hist[pos : pos + h].flatten()

        counts = empty_counts(self.n_sites)
        counts[_OCCURRED_ROWS] = occurred
        counts[_SEEN_ROWS] = seen
        counts[POPULATION] = 1.0
        counts[QUALIFIED_MASS] = rates_arr
        info = {
            "fairness": counts,
            "group": -1,
            "label": -1,
            "decision": -1,
            "label_observed": 0,
            "allocation": np.array(alloc, dtype=np.int64),
            "incident_rates": rates_arr.copy(),
        }
        truncated = self._episode_over = self._t >= self.max_steps
        return obs, reward, False, truncated, info

    # ------------------------------------------------------------------ internals

    def _scores_to_alloc(self, scores: Any) -> list[int]:
        """Softmax of the clipped scores, then the reference's greedy unit-by-unit split."""
        n = self.n_sites
        try:
            arr = np.asarray(scores, dtype=np.float64)
        except (TypeError, ValueError):
            arr = None
        if arr is None or arr.shape != (n,):
            raise ValueError(
                f"action={_fmt(scores)}: expected {n} finite scores (shape ({n},)) for "
                f"action_type='scores'"
            )
        raw = arr.tolist()
        if not math.isfinite(sum(raw)):
            raise ValueError(f"action={_fmt(scores)}: every score must be finite")
        bound = self.score_bound
        vals = [bound if v > bound else (-bound if v < -bound else v) for v in raw]
        top = max(vals)
        weights = [math.exp(v - top) for v in vals]
        total = sum(weights)
        units = self.attention_units
        # units * share; the greedy loop gives floor() to each site, then one more unit to
        # the sites with the largest fractional parts (exact arithmetic equivalence).
        quota = [w / total * units for w in weights]
        alloc = [int(q) for q in quota]
        left = units - sum(alloc)
        if left > 0:
            order = sorted(range(n), key=lambda g: round(alloc[g] - quota[g], TIE_DECIMALS))
            for g in order[:left]:
                alloc[g] += 1
        return alloc

    def _index_to_alloc(self, action: Any) -> list[int]:
        """Row ``action`` of the allocation table."""
        table = self._table
        assert table is not None
        k = as_discrete_action(
            action,
            table.shape[0],
            f"an integer in [0, {table.shape[0]}) for action_type='allocation'",
        )
        return table[k].tolist()


class AttentionHardEnv(AttentionEnv):
    """ELBERT's harder attention allocation (Xu et al. 2024, App. D.1, Eq. 25-26).

    Same dynamics, spaces and signals as :class:`AttentionEnv`; only the defaults differ:
    30 units, initial rates (30, 25, 22.5, 17.5, 12.5), per-site decrease rates per unit
    (0.004, 0.01, 0.016, 0.02, 0.04) and increase rates (0.08, 0.2, 0.4, 0.8, 2), reward
    ``-0.25 * missed`` (``discovered_weight = 0``, ELBERT's ``zeta_0 = 0``) and
    ``count_cap = 200``. High-rate sites decrease slowest and increase slowest, so
    neglecting them costs little reward but builds up bias. ELBERT's reference code also
    has a rate-dependent decay ``exp(-alpha * rate)`` of the dynamic rates and a random
    re-spawn of zero rates (``theta``), both switched off (``alpha = theta = 0``) in its
    experiments and not implemented here. See :class:`AttentionEnv` for the full
    description and the argument table.
    """

    DESCRIPTION: ClassVar[str] = (
        "ELBERT harder attention allocation: 30 units over 5 sites, per-site rate "
        "dynamics, reward -0.25 * missed incidents"
    )

    def __init__(
        self,
        incident_rates: Any = HARD_INCIDENT_RATES,
        attention_units: int = HARD_ATTENTION_UNITS,
        decrease_rates: Any = HARD_DECREASE_RATES,
        increase_rates: Any = HARD_INCREASE_RATES,
        discovered_weight: float = 0.0,
        missed_weight: float = 0.25,
        max_steps: int = 1000,
        history_len: int = 8,
        count_cap: int = 200,
        obs_ratio: bool = True,
        normalize_obs: bool = True,
        action_type: str = "scores",
        score_bound: float = 3.0,
    ) -> None:
        super().__init__(
            incident_rates=incident_rates,
            attention_units=attention_units,
            decrease_rates=decrease_rates,
            increase_rates=increase_rates,
            discovered_weight=discovered_weight,
            missed_weight=missed_weight,
            max_steps=max_steps,
            history_len=history_len,
            count_cap=count_cap,
            obs_ratio=obs_ratio,
            normalize_obs=normalize_obs,
            action_type=action_type,
            score_bound=score_bound,
        )


def _per_site(name: str, value: Any, n: int) -> np.ndarray:
    """``value`` as ``n`` finite rates ``>= 0`` (a scalar applies to every site)."""
    try:
        scalar = np.ndim(value) == 0
    except ValueError:  # ragged nesting: let the shape check report it
        scalar = False
    if scalar:
        rate = as_positive(name, value, allow_zero=True)
        arr = np.full(n, rate, dtype=np.float64)
    else:
        arr = as_float_array(name, value, (n,))
        if np.any(arr < 0.0):
            raise ValueError(f"{name}={_fmt(value)}: every rate must be >= 0")
        check_magnitude(name, value, arr)
    arr.flags.writeable = False
    return arr
