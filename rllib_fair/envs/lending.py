"""``fair/Lending-v0``: the delayed-impact lending environment of ml-fairness-gym.

Parameters follow ml-fairness-gym's ``DelayedImpactEnv`` / ``DelayedImpactParams``
(``environments/lending.py``, ``environments/lending_params.py``, commit 38eaf45) in the
setting POCAR (Yu et al. 2022) and ELBERT-PO (Xu et al. 2024) trained on: starting cash
10,000, interest rate 1.0, cluster shift 0.01, episodes of 2000 steps, and the running
per-group true-positive rates appended to the observation.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rllib_fair.envs.base import (
    FairEnvMixin,
    as_count,
    as_distributions,
    as_flag,
    as_positive,
    as_probabilities,
    check_any_flag,
)
from rllib_fair.envs.declared import (
    amount,
    at_least_one,
    max_steps,
    probability_rows,
    probability_table,
    same_bins,
)
from rllib_fair.fairness.blocks import MetricBlock, NotionMetrics, SelectiveLabelMetrics
from rllib_fair.fairness.counts import (
    NUM_FIELDS,
    POPULATION,
    QUALIFIED_MASS,
    decision_counts,
    empty_counts,
)
from rllib_fair.settings import bool_setting, number, probabilities

#: ml-fairness-gym ``DELAYED_IMPACT_CLUSTER_PROBS``: initial credit-bin distribution per
#: group (group 1 starts with lower credit).
DEFAULT_CLUSTER_PROBS: tuple[tuple[float, ...], ...] = (
    (0.0, 0.1, 0.1, 0.2, 0.3, 0.3, 0.0),
    (0.1, 0.1, 0.2, 0.3, 0.3, 0.0, 0.0),
)
#: ml-fairness-gym ``DELAYED_IMPACT_SUCCESS_PROBS``: repay probability per credit bin.
DEFAULT_SUCCESS_PROBS: tuple[float, ...] = (0.1, 0.2, 0.45, 0.6, 0.65, 0.7, 0.7)
DEFAULT_GROUP_PROBS: tuple[float, ...] = (0.5, 0.5)


class LendingEnv(FairEnvMixin, gym.Env):
    """Lending with delayed impact on the applicants' credit distribution.

    ## Description

    A bank decides, one applicant at a time, whether to grant a loan (Liu et al. 2018,
    "Delayed Impact of Fair Machine Learning"; ml-fairness-gym's ``DelayedImpactEnv``).
    Each applicant belongs to one of two groups (drawn with ``group_probs``) and has a
    credit bin drawn from that group's current bin distribution ``p_g``; whether the
    applicant would repay is drawn as ``Bernoulli(success_probs[bin])`` when the applicant
    is drawn, independently of the decision. Granting a loan moves probability mass in
    the applicant's group: on repayment ``min(cluster_shift_increment, p_g[bin])`` moves
    from the applicant's bin one bin up, on default one bin down (clipped to the first
    and last bin; nothing moves when clipping keeps the bin). A rejection changes
    nothing. Group 1 (``group_1``) starts with lower credit and is the disadvantaged
    group.

    ## Action Space

    ``Discrete(2)``: 0 = reject, 1 = accept (grant the loan).

    ## Observation Space

    ``Box(0, 1, (n,), float32)`` describing the applicant to decide on next, the
    concatenation of (each part switchable, at least one on):

    | part | size | flag |
    |---|---|---|
    | one-hot credit bin | ``n_bins`` (7) | ``obs_bin`` |
    | one-hot group | 2 | ``obs_group`` |
    | running true-positive rate per group | 2 | ``obs_tpr`` |

    The true-positive rate of group ``g`` (as in POCAR) is, over the episode so far,
    (accepted and would repay) / (would repay) among the group's decided applicants;
    0 while the group has had no applicant who would repay. With all parts on, ``n = 11``.

    ## Rewards

    The change in the bank's cash: ``+loan_amount * interest_rate`` on accept and repay,
    ``-loan_amount`` on accept and default, 0 on reject.

    ## Episode End

    * Termination: the cash falls below ``loan_amount`` (ml-fairness-gym's done
      condition: the bank cannot fund another loan).
    * Truncation: after ``max_steps`` steps.

    ## Arguments

    | argument | default | meaning |
    |---|---|---|
    | ``group_probs`` | (0.5, 0.5) | probability of each group per applicant |
    | ``cluster_probs`` | delayed-impact table (2, 7) | initial bin distribution per group |
    | ``success_probs`` | (.1, .2, .45, .6, .65, .7, .7) | repay prob. per bin, (B,) or (2, B) |
    | ``interest_rate`` | 1.0 | gain per unit lent on repayment |
    | ``loan_amount`` | 1.0 | size of every loan |
    | ``starting_cash`` | 10,000 | bank cash at reset |
    | ``cluster_shift_increment`` | 0.01 | probability mass moved per accepted loan |
    | ``max_steps`` | 2000 | truncation horizon |
    | ``obs_bin`` / ``obs_group`` / ``obs_tpr`` | True | observation parts |

    ## Fairness signals

    ``info`` of ``step`` (``reset`` gives the same keys, zero decision counts and
    ``group = label = decision = -1``):

    * ``"fairness"``: float64 ``[NUM_FIELDS, 2]`` counts
      (:mod:`rllib_fair.fairness.counts`). Decision rows: the applicant decided on in this
      step (shown in the previous observation). Population rows, after the step:
      ``population[g] = group_probs[g]`` and
      ``qualified_mass[g] = group_probs[g] * sum_b p_g[b] * success_probs[g][b]``, the
      expected share of the applicant stream that is group ``g`` and would repay, so
      ``qualified_mass / population`` is the group's expected repay rate.
    * ``"group"``, ``"label"`` (1 = would repay), ``"decision"`` (action taken),
      ``"label_observed"`` (1 iff accepted: the bank only sees repayment of granted
      loans), all python ``int``.

    ## Version History

    * v0: initial version.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    GROUP_NAMES: ClassVar[tuple[str, ...]] = ("group_0", "group_1")
    DEFAULT_NOTION: ClassVar[str] = "equal_opportunity"
    DESCRIPTION: ClassVar[str] = (
        "ml-fairness-gym delayed-impact lending (7 credit bins, 2 groups), "
        "loans shift the group's credit distribution; POCAR/ELBERT setting"
    )
    #: One decision per step with selective labels: the notions and the selective block.
    METRIC_BLOCKS: ClassVar[tuple[MetricBlock, ...]] = (NotionMetrics(), SelectiveLabelMetrics())

    _UNIFORM_WIDTH: ClassVar[int] = 3  # group, bin, repay

    DECLARED_SETTINGS: ClassVar[tuple] = (
        probabilities("group_probs", "share of each group among applicants", length=2),
        probability_rows(
            "cluster_probs", "initial distribution over the credit bins, one row per group", 2
        ),
        probability_table(
            "success_probs", "repayment probability per bin (one row, or one per group)", 2
        ),
        amount("interest_rate", "gain per unit lent on a repaid loan", zero=True),
        amount("loan_amount", "amount of every loan"),
        amount("starting_cash", "the bank's cash at reset"),
        number("cluster_shift_increment", "credit-distribution shift per decided loan", 0, 1),
        max_steps(),
        bool_setting("obs_bin", "the credit bin is observed"),
        bool_setting("obs_group", "the group is observed"),
        bool_setting("obs_tpr", "the groups' running true positive rates are observed"),
    )
    DECLARED_RULES: ClassVar[tuple] = (
        *same_bins(),
        at_least_one("obs_bin", "obs_group", "obs_tpr"),
    )

    def __init__(
        self,
        group_probs: Any = DEFAULT_GROUP_PROBS,
        cluster_probs: Any = DEFAULT_CLUSTER_PROBS,
        success_probs: Any = DEFAULT_SUCCESS_PROBS,
        interest_rate: float = 1.0,
        loan_amount: float = 1.0,
        starting_cash: float = 10_000.0,
        cluster_shift_increment: float = 0.01,
        max_steps: int = 2000,
        obs_bin: bool = True,
        obs_group: bool = True,
        obs_tpr: bool = True,
    ) -> None:
        n_groups = len(self.GROUP_NAMES)
        gp = as_distributions("group_probs", group_probs, (n_groups,))
        cp = as_distributions("cluster_probs", cluster_probs, (n_groups, None))
        n_bins = cp.shape[1]
        if n_bins < 2:
            raise ValueError(
                f"cluster_probs has {n_bins} bin(s) per group: expected at least 2 bins"
            )
        try:
            sp_ndim = np.ndim(success_probs)
        except ValueError:  # ragged nesting: let the shape check below report it
            sp_ndim = 1
        if sp_ndim == 2:
            sp = as_probabilities("success_probs", success_probs, (n_groups, n_bins))
        else:
            sp = as_probabilities("success_probs", success_probs, (n_bins,))
            sp = np.tile(sp, (n_groups, 1))
        self.interest_rate = as_positive("interest_rate", interest_rate, allow_zero=True)
        self.loan_amount = as_positive("loan_amount", loan_amount)
        self.starting_cash = as_positive("starting_cash", starting_cash)
        inc = as_positive("cluster_shift_increment", cluster_shift_increment, allow_zero=True)
        if inc > 1.0:
            raise ValueError(
                f"cluster_shift_increment={cluster_shift_increment!r}: expected a number in [0, 1]"
            )
        self.cluster_shift_increment = inc
        self.max_steps = as_count("max_steps", max_steps)
        self.obs_bin = as_flag("obs_bin", obs_bin)
        self.obs_group = as_flag("obs_group", obs_group)
        self.obs_tpr = as_flag("obs_tpr", obs_tpr)
        check_any_flag(
            [("obs_bin", self.obs_bin), ("obs_group", self.obs_group), ("obs_tpr", self.obs_tpr)]
        )

        self.n_bins = n_bins
        self._n_groups = n_groups
        self.group_probs = tuple(gp.tolist())
        self.initial_cluster_probs = cp.copy()
        self.success_probs = sp.copy()
        self._group_cum = list(accumulate(self.group_probs))
        self._init_cluster = cp.tolist()
        self._success = sp.tolist()
        self._gain = self.loan_amount * self.interest_rate

        # Observation layout.
        size = 0
        self._bin_off = self._group_off = self._tpr_off = -1
        if self.obs_bin:
            self._bin_off, size = size, size + n_bins
        if self.obs_group:
            self._group_off, size = size, size + n_groups
        if self.obs_tpr:
            self._tpr_off, size = size, size + n_groups
        self.observation_space = spaces.Box(0.0, 1.0, shape=(size,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self._obs = np.zeros(size, dtype=np.float32)

        # Episode state (set in reset()).
        self._cluster: list[list[float]] = [list(row) for row in self._init_cluster]
        self._cluster_cum: list[list[float]] = [list(accumulate(r)) for r in self._cluster]
        self._pop_rows = np.zeros((NUM_FIELDS - POPULATION, n_groups), dtype=np.float64)
        self._cash = self.starting_cash
        self._t = 0
        self._qualified = [0] * n_groups
        self._sel_qualified = [0] * n_groups
        self._group = -1
        self._bin = -1
        self._label = -1
        self._u_buf = []
        self._u_pos = 0

    # ------------------------------------------------------------------ public state

    @property
    def cash(self) -> float:
        """The bank's current cash."""
        return self._cash

    @property
    def cluster_probs(self) -> np.ndarray:
        """Current credit-bin distribution per group, a ``[2, n_bins]`` copy."""
        return np.array(self._cluster, dtype=np.float64)

    @property
    def applicant(self) -> tuple[int, int]:
        """``(group, bin)`` of the applicant shown in the latest observation."""
        return self._group, self._bin

    @property
    def elapsed_steps(self) -> int:
        """Steps taken since the last reset."""
        return self._t

    # ------------------------------------------------------------------ gymnasium API

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets cash, distributions and running rates; draws the first applicant."""
        super().reset(seed=seed)
        self._reset_uniforms(seed)
        n_groups = len(self.GROUP_NAMES)
        self._cluster = [list(row) for row in self._init_cluster]
        self._cluster_cum = [list(accumulate(row)) for row in self._cluster]
        self._pop_rows[0] = self.group_probs
        for g in range(n_groups):
            self._pop_rows[1, g] = self._qualified_mass(g)
        self._cash = self.starting_cash
        self._t = 0
        self._qualified = [0] * n_groups
        self._sel_qualified = [0] * n_groups
        self._obs[:] = 0.0
        self._group = self._bin = -1
        self._draw_applicant()
        counts = empty_counts(n_groups)
        counts[POPULATION:] = self._pop_rows
        info = self._decision_info(counts, -1, -1, -1)
        return self._obs.copy(), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Decides on the shown applicant, updates cash and distributions, draws the next."""
        a = self._accept_reject(action)
        g = self._group
        b = self._bin
        y = self._label
        if a:
            reward = self._gain if y else -self.loan_amount
            self._cash += reward
        else:
            reward = 0.0
        dst = self._destination(g, b, y, a)
        if dst != b:
            self._shift(g, b, dst)
        if y:
            qual = self._qualified[g] = self._qualified[g] + 1
            sel_qual = self._sel_qualified[g] = self._sel_qualified[g] + a
            if self._tpr_off >= 0:
                self._obs[self._tpr_off + g] = sel_qual / qual
        self._t += 1

        counts = decision_counts(g, y, a, self._n_groups)
        counts[POPULATION:] = self._pop_rows
        info = self._decision_info(counts, g, y, a)
        terminated = self._cash < self.loan_amount
        truncated = self._t >= self.max_steps
        self._episode_over = terminated or truncated
        self._draw_applicant()
        return self._obs.copy(), reward, terminated, truncated, info

    # ------------------------------------------------------------------ internals

    def _destination(self, g: int, b: int, y: int, a: int) -> int:
        """Bin the decided applicant's probability mass moves to (``b``: no move).

        Delayed impact (Liu et al. 2018): an accepted applicant moves one bin up on
        repayment and one bin down on default, clipped; a rejection changes nothing.
        Variants override this hook (``LendingHardEnv``).
        """
        if not a:
            return b
        if y:
            return b + 1 if b + 1 < self.n_bins else b
        return b - 1 if b > 0 else b

    def _qualified_mass(self, g: int) -> float:
        """``group_probs[g] * sum_b p_g[b] * success[g][b]`` for the current ``p_g``."""
        success = self._success[g]
        return self.group_probs[g] * sum(p * s for p, s in zip(self._cluster[g], success))

    def _shift(self, g: int, src: int, dst: int) -> None:
        """Moves ``min(increment, p_g[src])`` mass from bin ``src`` to ``dst``."""
        probs = self._cluster[g]
        mass = probs[src]
        if mass > self.cluster_shift_increment:
            mass = self.cluster_shift_increment
        probs[src] -= mass
        probs[dst] += mass
        self._cluster_cum[g] = list(accumulate(probs))
        self._pop_rows[QUALIFIED_MASS - POPULATION, g] = self._qualified_mass(g)

    def _draw_applicant(self) -> None:
        """Draws group, bin and repay label of the next applicant; writes the observation."""
        u_group, u_bin, u_label = self._uniform_row()
        gcum = self._group_cum
        g = bisect_right(gcum, u_group * gcum[-1])
        cum = self._cluster_cum[g]
        # u * total < total, so the bin found has positive mass (bins with zero mass are
        # never drawn, even when the cumulative sum falls short of 1 by rounding).
        b = bisect_right(cum, u_bin * cum[-1])
        obs = self._obs
        if self._bin_off >= 0:
            if self._bin >= 0:
                obs[self._bin_off + self._bin] = 0.0
            obs[self._bin_off + b] = 1.0
        if self._group_off >= 0:
            if self._group >= 0:
                obs[self._group_off + self._group] = 0.0
            obs[self._group_off + g] = 1.0
        self._group = g
        self._bin = b
        self._label = 1 if u_label < self._success[g][b] else 0
