"""``fair/LendingFICO-v0``: SELLF's FICO lending environment (a resampled applicant pool).

Follows SELLF's ``ResamplingEnv`` / ``LendingEnv`` (Valdrighi et al., "Long-term Fairness
with Selective Labels", Sec. 5.1 and App. D; hiaac-finance/sellf). The 10-bin score
table is derived from the TransRisk data by ``scripts/derive_fico_table.py`` and shipped
as ``rllib_fair/envs/data/fico_bins.json`` (its ``provenance`` field says how).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from rllib_fair.envs.base import (
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
    bins_of,
    max_steps,
    probability_rows,
    same_bins,
)
from rllib_fair.envs.pool import PoolEnv
from rllib_fair.fairness.blocks import MetricBlock, NotionMetrics, SelectiveLabelMetrics
from rllib_fair.settings import Rule, Setting, bool_setting, integer, number, probabilities, show

FICO_TABLE_PATH = Path(__file__).resolve().parent / "data" / "fico_bins.json"


@functools.lru_cache(maxsize=1)
def load_fico_table() -> dict[str, Any]:
    """Returns the derived FICO table (``group_names``, ``cluster_probs``, ``success_probs``...).

    The returned dict is shared; do not modify it.
    """
    with FICO_TABLE_PATH.open() as fh:
        return json.load(fh)


def _bins_problem(cluster_probs, success_probs) -> str | None:
    """The error of tables whose bin counts differ (None: the FICO table's)."""
    table_bins = len(load_fico_table()["success_probs"][0])
    bins = bins_of(cluster_probs) if cluster_probs is not None else table_bins
    sp_bins = (
        table_bins if success_probs is None else (bins_of(success_probs) if success_probs else None)
    )
    if bins is None or sp_bins is None or bins == sp_bins:
        return None
    return (
        f"success_probs: {show(success_probs)} is invalid ({sp_bins} bins per group); valid: "
        f"{bins} probabilities per group (the bins of "
        f"{'cluster_probs' if cluster_probs is not None else 'the FICO table'})"
    )


class LendingFICOEnv(PoolEnv):
    """Lending on a resampled pool of applicants with FICO-derived credit scores.

    ## Description

    SELLF's lending environment (Valdrighi et al., Sec. 5.1, App. D), after Liu et al.
    (2018). At reset a pool of ``n_applicants`` individuals is created: group ~
    ``group_probs`` (Black / white, 50/50), score bin ~ ``cluster_probs[group]`` (10 bins
    derived from the TransRisk data, see ``fico_bins.json``). Each step one individual is
    drawn uniformly from the pool and shown; its label ``y`` (1 = would repay) is drawn
    as ``Bernoulli(success_probs[group][bin])`` when it is shown. If the loan is granted
    the individual's score moves one bin up on repayment and one bin down on default
    (clipped to [0, 9]); a rejection keeps it. The individual stays in the pool, so the
    per-group score distribution drifts with the policy. Group 0 (``Black``) starts
    with much lower scores (about half of it in bins 0-1).

    ## Action Space

    ``Discrete(2)``: 0 = reject, 1 = accept (grant the loan).

    ## Observation Space

    ``Box(0, 1, (n,), float32)`` describing the individual to decide on next, the
    concatenation of (each part switchable, at least one on):

    | part | size | flag |
    |---|---|---|
    | one-hot score bin | 10 | ``obs_bin`` |
    | one-hot group | 2 | ``obs_group`` |

    With both parts on, ``n = 12``.

    ## Rewards

    ``a * (y - cost)``: ``1 - cost`` for a repaid loan, ``-cost`` for a default, 0 for a
    rejection. The resource (starting at ``starting_resource``) changes by the reward.

    ## Episode End

    * Termination: the resource is ``<= 0`` (SELLF's condition).
    * Truncation: after ``max_steps`` steps.

    ## Arguments

    | argument | default | meaning |
    |---|---|---|
    | ``group_probs`` | (0.5, 0.5) | probability of each group in the pool |
    | ``cluster_probs`` | FICO table, shape (2, 10) | initial score-bin distribution per group |
    | ``success_probs`` | FICO table, shape (2, 10) | repay probability per group and bin |
    | ``cost`` | 0.8 | cost of a granted loan (reward ``y - cost``) |
    | ``n_applicants`` | 4000 | pool size |
    | ``starting_resource`` | 1000 | resource at reset |
    | ``max_steps`` | 10,000 | truncation horizon |
    | ``obs_bin`` / ``obs_group`` | True | observation parts |

    ## Fairness signals

    ``info`` of ``step`` (``reset`` gives the same keys, zero decision counts and
    ``group = label = decision = -1``):

    * ``"fairness"``: float64 ``[NUM_FIELDS, 2]`` counts
      (:mod:`rllib_fair.fairness.counts`). Decision rows: the individual decided on in
      this step (shown in the previous observation). Population rows, after the step:
      ``population[g]`` = number of pool members in group ``g``;
      ``qualified_mass[g]`` = sum over the group's pool members of
      ``success_probs[g][bin]`` (the expected number who would repay), maintained
      incrementally (O(1) per step).
    * ``"group"``, ``"label"`` (1 = would repay), ``"decision"`` (action taken),
      ``"label_observed"`` (1 iff accepted: the lender only sees repayment of granted
      loans), all python ``int``.

    ## Version History

    * v0: initial version.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    GROUP_NAMES: ClassVar[tuple[str, ...]] = ("Black", "white")
    DEFAULT_NOTION: ClassVar[str] = "equal_opportunity"
    DESCRIPTION: ClassVar[str] = (
        "SELLF FICO lending: pool of 4000 applicants, 10 TransRisk score bins (Black/white), "
        "accepted loans move the score one bin by repayment; cost 0.8"
    )
    #: One decision per step with selective labels: the notions and the selective block.
    METRIC_BLOCKS: ClassVar[tuple[MetricBlock, ...]] = (NotionMetrics(), SelectiveLabelMetrics())

    _UNIFORM_WIDTH: ClassVar[int] = 2  # pool index, repay

    DECLARED_SETTINGS: ClassVar[tuple] = (
        probabilities("group_probs", "share of each group in the pool", length=2),
        probability_rows(
            "cluster_probs",
            "score-bin distribution per group",
            2,
            none=True,
            none_means="the FICO table's",
        ),
        Setting(
            "success_probs",
            "list",
            "repayment probability per group and score bin",
            item=Setting("", "list", item=number("", "", 0, 1), min_length=2),
            length=2,
            none=True,
            none_means="the FICO table's",
        ),
        amount("cost", "cost of a defaulted loan (a repaid one gains 1 - cost)", zero=True),
        integer("n_applicants", "applicants in the pool", 1),
        amount("starting_resource", "the lender's resource at reset"),
        max_steps(),
        bool_setting("obs_bin", "the score bin is observed"),
        bool_setting("obs_group", "the group is observed"),
    )
    DECLARED_RULES: ClassVar[tuple] = (
        same_bins()[0],
        Rule(
            "success_bins_match",
            ("success_probs", "cluster_probs"),
            "success_probs has one probability per score bin (of cluster_probs or the table)",
            lambda v: _bins_problem(v["cluster_probs"], v["success_probs"]),
            {"success_probs": [[0.5, 0.5], [0.5, 0.5]]},
        ),
        at_least_one("obs_bin", "obs_group"),
    )

    def __init__(
        self,
        group_probs: Any = (0.5, 0.5),
        cluster_probs: Any = None,
        success_probs: Any = None,
        cost: float = 0.8,
        n_applicants: int = 4000,
        starting_resource: float = 1000.0,
        max_steps: int = 10_000,
        obs_bin: bool = True,
        obs_group: bool = True,
    ) -> None:
        n_groups = len(self.GROUP_NAMES)
        table = load_fico_table() if cluster_probs is None or success_probs is None else None
        if cluster_probs is None:
            cluster_probs = table["cluster_probs"]
        if success_probs is None:
            success_probs = table["success_probs"]
        gp = as_distributions("group_probs", group_probs, (n_groups,))
        cp = as_distributions("cluster_probs", cluster_probs, (n_groups, None))
        n_bins = cp.shape[1]
        if n_bins < 2:
            raise ValueError(
                f"cluster_probs has {n_bins} bin(s) per group: expected at least 2 bins"
            )
        sp = as_probabilities("success_probs", success_probs, (n_groups, n_bins))
        self.cost = as_positive("cost", cost, allow_zero=True)
        self.n_applicants = as_count("n_applicants", n_applicants)
        self.starting_resource = as_positive("starting_resource", starting_resource)
        self.max_steps = as_count("max_steps", max_steps)
        self.obs_bin = as_flag("obs_bin", obs_bin)
        self.obs_group = as_flag("obs_group", obs_group)
        check_any_flag([("obs_bin", self.obs_bin), ("obs_group", self.obs_group)])

        self.n_bins = n_bins
        self.group_probs = tuple(gp.tolist())
        self.initial_cluster_probs = cp.copy()
        self.success_probs = sp.copy()
        self._success = sp.tolist()
        self._group_cum = np.cumsum(gp)
        self._cluster_cum = np.cumsum(cp, axis=1)

        # One observation per (group, bin), built once; step returns a copy.
        size = (n_bins if self.obs_bin else 0) + (n_groups if self.obs_group else 0)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(size,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        table_obs = np.zeros((n_groups, n_bins, size), dtype=np.float32)
        for g in range(n_groups):
            for b in range(n_bins):
                if self.obs_bin:
                    table_obs[g, b, b] = 1.0
                if self.obs_group:
                    table_obs[g, b, size - n_groups + g] = 1.0
        self._obs_table = [[table_obs[g, b] for b in range(n_bins)] for g in range(n_groups)]

        # Episode state (set in reset()); the pool bookkeeping lives in PoolEnv.
        self._init_pool(n_groups, self.n_applicants)
        self._pool_bin: list[int] = []
        self._resource = self.starting_resource

    # ------------------------------------------------------------------ public state

    @property
    def resource(self) -> float:
        """The lender's current resource."""
        return self._resource

    @property
    def pool_bins(self) -> np.ndarray:
        """Current score bin of every pool member (a copy)."""
        return np.array(self._pool_bin, dtype=np.int64)

    @property
    def applicant(self) -> tuple[int, int, int]:
        """``(pool index, group, bin)`` of the individual shown in the latest observation."""
        i = self._index
        return i, self._group, (self._pool_bin[i] if i >= 0 else -1)

    # ------------------------------------------------------------------ dynamics

    def _fill_pool(self, rng: np.random.Generator) -> None:
        """Creates a fresh pool (group, then score bin per member); resets the resource."""
        n, n_groups = self.n_applicants, self._n_groups
        groups = np.searchsorted(self._group_cum, rng.random(n) * self._group_cum[-1], side="right")
        u_bins = rng.random(n)
        bins = np.empty(n, dtype=np.int64)
        for g in range(n_groups):
            members = groups == g
            cum = self._cluster_cum[g]
            bins[members] = np.searchsorted(cum, u_bins[members] * cum[-1], side="right")
        self._pool_group = groups.tolist()
        self._pool_bin = bins.tolist()
        p = self.success_probs[groups, bins]
        self._pool_p = p.tolist()
        table = self._obs_table
        self._pool_obs = [table[g][b] for g, b in zip(self._pool_group, self._pool_bin)]
        self._reset_population(groups, p)
        self._resource = self.starting_resource

    def _decide(self, a: int) -> tuple[float, bool]:
        """A granted loan moves the score one bin up on repayment, one down on default."""
        if a:
            y = self._label
            reward = y - self.cost
            self._resource += reward
            i = self._index
            b = self._pool_bin[i]
            if y:
                dst = b + 1 if b + 1 < self.n_bins else b
            else:
                dst = b - 1 if b > 0 else b
            if dst != b:
                g = self._group
                self._pool_bin[i] = dst
                self._pool_obs[i] = self._obs_table[g][dst]
                self._set_probability(i, g, self._success[g][dst])
        else:
            reward = 0.0
        return reward, self._resource <= 0.0
