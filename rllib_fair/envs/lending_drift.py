"""``fair/LendingDrift-v0``: lending with credit drift (Lear & Zhang, ICLR 2025, App. C).

The environment of "A Causal Lens for Learning Long-Term Fair Policies" (App. C), after
the authors' code (the first commits of hiaac-finance/sellf, ``ca68fcb``: ml-fairness-gym's
``DelayedImpactEnv`` with ``CategoricalCreditDrift`` and the ``PPOEnvWrapper``
observation). The choices made where the paper is silent are stated where they apply.
The reference stores a probability mass per (group, bin) moved in steps of 1/100; here
the population is 100 integer individuals per group (the same distribution: mass of a
bin = the group's individuals in it / 100), so every step can name the individual it
decided on, as the qualification-gain estimators need.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from rllib_fair.envs.base import (
    _fmt,
    as_count,
    as_distributions,
    as_flag,
    as_positive,
    as_probabilities,
)
from rllib_fair.envs.declared import (
    amount,
    at_least_one,
    bins_of,
    max_steps,
    probability_rows,
    probability_table,
    same_bins,
)
from rllib_fair.envs.pool import PoolEnv
from rllib_fair.fairness import qualification as qual
from rllib_fair.fairness.blocks import MetricBlock, NotionMetrics, SelectiveLabelMetrics
from rllib_fair.fairness.qualification_metrics import QualificationGainMetrics
from rllib_fair.settings import Rule, bool_setting, integer, probabilities, show

#: Number of credit-score bins (the reference's ``len(DELAYED_IMPACT_SUCCESS_PROBS)``).
N_BINS = 14

#: Initial bin distribution of the advantaged group (the reference README): mean 7.7.
C_PLUS: tuple[float, ...] = (
    0, 0, .05, .05, .05, .05, .10, .10, .15, .15, .15, .15, 0, 0,
)  # fmt: skip
#: Initial bin distribution of the disadvantaged group in Settings 1 and 2: mean 5.7.
C_MINUS: tuple[float, ...] = (
    .05, .05, .05, .05, .10, .10, .15, .15, .15, .15, 0, 0, 0, 0,
)  # fmt: skip

#: Repayment probability per bin, Setting 1 ("Home Credit"); logistic in the bin index,
#: sigmoid(1.2292 + 0.18840 x) to within 0.001. Shipped verbatim.
P_HC: tuple[float, ...] = (
    .773, .804, .833, .857, .879, .898, .914, .928, .939, .949, .958, .965, .970, .975,
)  # fmt: skip
#: Repayment probability per bin, Setting 2 ("Lending Club"); sigmoid(0.0210 + 0.36009 x)
#: to within 0.001. Shipped verbatim.
P_LC: tuple[float, ...] = (
    .506, .594, .677, .750, .812, .861, .898, .927, .948, .963, .974, .982, .987, .991,
)  # fmt: skip

#: Settings 1-3 (the reference README at ca68fcb): initial bin distribution per
#: group, repayment probabilities, drift probabilities (P(-1), P(0), P(+1)) per group.
SETTINGS: dict[int, dict[str, Any]] = {
    1: {
        "cluster_probs": (C_PLUS, C_MINUS),
        "success_probs": P_HC,
        "drift_probs": ((0.10, 0.80, 0.10), (0.10, 0.80, 0.10)),
    },
    2: {
        "cluster_probs": (C_PLUS, C_MINUS),
        "success_probs": P_LC,
        "drift_probs": ((0.10, 0.80, 0.10), (0.10, 0.80, 0.10)),
    },
    3: {
        "cluster_probs": (C_PLUS, C_PLUS),
        "success_probs": P_HC,
        "drift_probs": ((0.05, 0.85, 0.10), (0.25, 0.70, 0.05)),
    },
}

#: Keys this env adds to the package's common step info (see the class docstring).
QUALIFICATION_INFO_KEYS: tuple[str, ...] = (
    "individual",
    "credit_bin",
    "next_credit_bin",
    "initial_credit_bin",
    "credit_drift",
    "qual_gain",
    "qual_gain_ps",
    "qual_gain_pi0",
    "benefit",
)


def _resolved(v, key: str):
    """``v[key]``, or the preset of ``v["setting"]`` when it is None."""
    if v[key] is not None:
        return v[key]
    return SETTINGS[v["setting"]][key] if v["setting"] in SETTINGS else None


def _missing_tables(v) -> str | None:
    if v["setting"] is not None:
        return None
    missing = [k for k in ("cluster_probs", "success_probs", "drift_probs") if v[k] is None]
    if not missing:
        return None
    return (
        f"setting: None is invalid while {', '.join(missing)} "
        f"{'is' if len(missing) == 1 else 'are'} not given; valid: 1, 2 or 3, or give "
        "cluster_probs, success_probs and drift_probs"
    )


def _bins_problem(v) -> str | None:
    cp, sp = _resolved(v, "cluster_probs"), _resolved(v, "success_probs")
    if cp is None or sp is None:
        return None
    bins = bins_of(cp)
    if bins is None:  # the cluster rule reports it
        return None
    rows = list(sp) if sp and isinstance(sp[0], (list, tuple)) else [sp]
    if all(len(r) == bins for r in rows):
        return None
    return (
        f"success_probs: {show(sp)} is invalid ({[len(r) for r in rows]} entries per row); "
        f"valid: {bins} probabilities per row, one per bin of cluster_probs"
    )


def _whole_problem(v) -> str | None:
    cp = _resolved(v, "cluster_probs")
    n = v["individuals_per_group"]
    if cp is None:
        return None
    if all(abs(p * n - round(p * n)) <= 1e-9 for row in cp for p in row):
        return None
    return (
        f"individuals_per_group: {n!r} is invalid for these cluster_probs; valid: a count "
        "whose product with every bin probability is a whole number of individuals"
    )


def exact_pi0_values(env_config: Mapping[str, Any], visited: bool) -> tuple[np.ndarray, np.ndarray]:
    """The exact V_pi0 table of the env ``env_config`` builds and each group's size.

    What the qualification-gain metrics use for their ``exact`` decomposition variant:
    ``(LendingDriftEnv.pi0_value_table(visited=visited) [2, n_bins], [n, n])`` with
    ``n = individuals_per_group``.
    """
    env = LendingDriftEnv(**dict(env_config))
    n = env.individuals_per_group
    return env.pi0_value_table(visited=visited), np.array([n, n], dtype=np.float64)


class LendingDriftEnv(PoolEnv):
    """Lending to a population whose credit scores drift, granted or not (Lear & Zhang 2025).

    ## Description

    The lending environment of Lear & Zhang (ICLR 2025, Sec. 5 and App. C).
    Two groups, ``s+`` (group 0, advantaged) and ``s-`` (group 1), of
    ``individuals_per_group`` (100) individuals each, every individual in one of 14
    credit-score bins; at reset the bins follow ``cluster_probs`` exactly
    (``round(100 * P(x0 | s))`` individuals per bin). Each step one applicant
    ``(s, x, x_drift, y)`` is shown: group ``s ~ group_probs``, a uniformly random
    individual of that group (its bin ``x``), repayment ``y ~ Bernoulli(p(x))``
    (``success_probs``) and a drift ``x_drift in {-1, 0, +1} ~ drift_probs[s]``,
    independent of ``x`` and ``y``; ``x_drift`` and ``y`` are hidden. After the decision
    the individual's bin becomes (App. C, clipped to [0, 13] after adding drift
    and outcome as the reference does)::

        clip(x + x_drift + 1)   granted and repaid
        clip(x + x_drift - 1)   granted and defaulted
        clip(x + x_drift)       rejected (drift moves rejected applicants too)

    Which individual is shown does not depend on the policy: each is decided on
    ``K ~ Binomial(T, 1/200)`` times in a T-step episode.

    Settings (``setting``): 1 = Home-Credit repayment, C+ / C- initial
    distributions, symmetric drift (.1, .8, .1); 2 = the same with Lending-Club repayment
    (only bins >= 7 pay off); 3 = equal initial distributions (C+), Home-Credit repayment,
    group-dependent drift s+ (.05, .85, .10), s- (.25, .70, .05). Any table given
    explicitly replaces the preset's.

    ## Action Space

    ``Discrete(2)``: 0 = reject (d0), 1 = grant the loan (d1).

    ## Observation Space

    ``Box(0, 1, (n,), float32)`` describing the applicant to decide on next (the reference's
    ``PPOEnvWrapper`` with ``DIST_EST=True``; each part switchable, at least one on):

    | part | indices (all on) | size | flag |
    |---|---|---|---|
    | one-hot credit bin | 0-13 | 14 | ``obs_bin`` |
    | one-hot group | 14-15 | 2 | ``obs_group`` |
    | recent applicants of group 0 per bin / n | 16-29 | 14 | ``obs_history`` |
    | recent applicants of group 1 per bin / n | 30-43 | 14 | ``obs_history`` |

    ``n = 44`` with every part on. The history counts the last ``history_window`` (300)
    decided applicants (one FIFO for both groups, the just-decided one included) by
    (group, bin); ``n`` = applicants in the window + 1; it is empty at reset. (The
    reference declares ``Box(+inf, +inf)``; the bounds here are the real ones.)

    ## Rewards

    The change of the bank's cash: ``+loan_amount * interest_rate`` (0.1) for a repaid
    loan, ``-loan_amount`` (-1) for a default, 0 for a rejection. Granting pays in
    expectation iff ``1.1 p(x) > 1``: bins >= 6 in Settings 1 and 3, >= 7 in Setting 2.

    ## Episode End

    * Termination: the cash falls below ``loan_amount`` (unreachable in 500 steps from
      10,000).
    * Truncation: after ``max_steps`` (500, the reference's training episode; its
      evaluation runs 10,000). With ``time_limit_terminates=True`` the step limit is
      reported as a termination instead, as the reference (SB3, no bootstrap) treats it.

    ## Arguments

    | argument | default | meaning |
    |---|---|---|
    | ``setting`` | 1 | preset 1, 2 or 3; None: all three tables must be given |
    | ``cluster_probs`` | preset | ``[2, 14]`` initial bin distribution per group |
    | ``success_probs`` | preset | ``[14]`` or ``[2, 14]`` repayment probability per bin |
    | ``drift_probs`` | preset | ``[2, 3]`` drift probabilities (-1, 0, +1) per group |
    | ``individuals_per_group`` | 100 | individuals per group (the reference's 1/0.01) |
    | ``group_probs`` | (0.5, 0.5) | probability that the applicant is of each group |
    | ``interest_rate`` | 0.1 | reward of a repaid loan per unit lent |
    | ``loan_amount`` | 1 | loan size (loss of a default) |
    | ``starting_cash`` | 10,000 | cash at reset |
    | ``max_steps`` | 500 | steps per episode |
    | ``history_window`` | 300 | decided applicants in the observation's history |
    | ``obs_bin`` / ``obs_group`` / ``obs_history`` | True | observation parts |
    | ``time_limit_terminates`` | False | report the step limit as a termination |

    ## Fairness signals

    ``info`` of ``step`` (``reset`` gives the same keys with zero decision counts, -1 for
    group, label, decision, individual and the bins, 0 for the drift and 0.0 for the
    gains):

    * ``"fairness"``: float64 ``[NUM_FIELDS, 2]`` counts
      (:mod:`rllib_fair.fairness.counts`). Decision rows: the applicant decided on in this
      step. Population rows (after the step), as in ``fair/Lending-v0``:
      ``population[g] = group_probs[g]``; ``qualified_mass[g] = group_probs[g] * mean_i
      p(x_i)`` over the group's individuals (qualification parity, equal opportunity).
    * ``"group"``, ``"label"`` (1 = would repay), ``"decision"``, ``"label_observed"``
      (1 iff granted), python ``int``.
    * Qualification-gain signals, python scalars: ``"individual"`` (0..N-1;
      group 0 holds ``0..n-1``), ``"credit_bin"`` x_t, ``"next_credit_bin"`` x_{t+1},
      ``"initial_credit_bin"`` (the individual's bin at reset), ``"credit_drift"``;
      ``"qual_gain"`` g(x_t, x_{t+1}) (the cubic gain, 469 = 13^3 - 12^3 normaliser, App.
      C); ``"qual_gain_ps"`` the gain of the path-specific policy pi^PS at this step,
      g(x_t, clip(x_t + x_drift)), i.e. the gain had the applicant been rejected, with the
      same drift draw (common random numbers); ``"qual_gain_pi0"`` the gain of the
      no-lending policy pi0 on the individual's shadow trajectory (a bin started at its
      initial bin and moved by drift only, at the individual's own visits);
      ``"benefit"`` Delta(x_t, s_t), the benefit of a loan.

    ## Version History

    * v0: initial version (Settings 1-3 of the reference README at ca68fcb).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    GROUP_NAMES: ClassVar[tuple[str, ...]] = ("advantaged", "disadvantaged")
    #: Step infos carry the individual, bins and qualification gains
    #: (:data:`QUALIFICATION_INFO_KEYS`), which PPO-C / F-PPO-L and the metrics need.
    QUALIFICATION_INFO: ClassVar[bool] = True
    #: The qualification-gain block (with this env's exact V_pi0 table), the notions and
    #: the selective-label block (one decision per step).
    METRIC_BLOCKS: ClassVar[tuple[MetricBlock, ...]] = (
        QualificationGainMetrics(exact_pi0=exact_pi0_values),
        NotionMetrics(),
        SelectiveLabelMetrics(),
    )
    DEFAULT_NOTION: ClassVar[str] = "equal_opportunity"
    DESCRIPTION: ClassVar[str] = (
        "Lear & Zhang 2025 lending with credit drift: 2 x 100 individuals, 14 credit bins, "
        "drift moves rejected applicants too; reward +0.1 repay / -1 default; Settings 1-3"
    )

    _UNIFORM_WIDTH: ClassVar[int] = 4  # group, individual, repay, drift

    DECLARED_SETTINGS: ClassVar[tuple] = (
        integer(
            "setting",
            "the paper's Setting 1, 2 or 3 (the tables below replace its entries)",
            choices=tuple(SETTINGS),
            none=True,
            none_means="cluster_probs, success_probs and drift_probs all given",
        ),
        probability_rows(
            "cluster_probs",
            "initial credit-bin distribution per group",
            2,
            none=True,
            none_means="the setting's",
        ),
        probability_table(
            "success_probs",
            "repayment probability per bin (one row, or one per group)",
            2,
            none=True,
            none_means="the setting's",
        ),
        probability_rows(
            "drift_probs",
            "per group: probabilities of a drift by -1, 0, +1 bins",
            2,
            none=True,
            none_means="the setting's",
        ),
        integer("individuals_per_group", "individuals of each group", 1),
        probabilities("group_probs", "probability that an applicant is of each group", length=2),
        amount("interest_rate", "gain per unit lent on a repaid loan", zero=True),
        amount("loan_amount", "amount of every loan"),
        amount("starting_cash", "the bank's cash at reset"),
        max_steps(),
        integer("history_window", "recent decisions in the observed history", 1),
        bool_setting("obs_bin", "the credit bin is observed"),
        bool_setting("obs_group", "the group is observed"),
        bool_setting("obs_history", "the per-group bin histogram of recent decisions is observed"),
        bool_setting(
            "time_limit_terminates",
            "the last step reports terminated (true) or truncated (false)",
        ),
    )
    DECLARED_RULES: ClassVar[tuple] = (
        Rule(
            "tables_given",
            ("setting", "cluster_probs", "success_probs", "drift_probs"),
            "without a setting, cluster_probs, success_probs and drift_probs are all given",
            lambda v: _missing_tables(v),
            {"setting": None},
        ),
        Rule(
            "drift_has_three_moves",
            ("drift_probs",),
            "drift_probs rows have 3 entries (P(-1), P(0), P(+1))",
            lambda v: (
                None
                if v["drift_probs"] is None or all(len(r) == 3 for r in v["drift_probs"])
                else (
                    f"drift_probs: {show(v['drift_probs'])} is invalid (rows of "
                    f"{[len(r) for r in v['drift_probs']]}); valid: 3 probabilities per group "
                    "(P(-1), P(0), P(+1))"
                )
            ),
            {"drift_probs": [[0.5, 0.5], [0.5, 0.5]]},
        ),
        same_bins()[0],
        Rule(
            "success_bins_match",
            ("success_probs", "cluster_probs"),
            "success_probs has one entry per bin of cluster_probs (or the setting's)",
            lambda v: _bins_problem(v),
            {"success_probs": [0.5] * 15},
        ),
        Rule(
            "whole_individuals",
            ("individuals_per_group", "cluster_probs"),
            "cluster_probs times individuals_per_group gives whole numbers per bin",
            lambda v: _whole_problem(v),
            {"individuals_per_group": 7},
        ),
        at_least_one("obs_bin", "obs_group", "obs_history"),
    )

    def __init__(
        self,
        setting: int | None = 1,
        cluster_probs: Any = None,
        success_probs: Any = None,
        drift_probs: Any = None,
        individuals_per_group: int = 100,
        group_probs: Any = (0.5, 0.5),
        interest_rate: float = 0.1,
        loan_amount: float = 1.0,
        starting_cash: float = 10_000.0,
        max_steps: int = 500,
        history_window: int = 300,
        obs_bin: bool = True,
        obs_group: bool = True,
        obs_history: bool = True,
        time_limit_terminates: bool = False,
    ) -> None:
        if setting is None:
            preset: dict[str, Any] = {}
            missing = [
                name
                for name, value in (
                    ("cluster_probs", cluster_probs),
                    ("success_probs", success_probs),
                    ("drift_probs", drift_probs),
                )
                if value is None
            ]
            if missing:
                raise ValueError(
                    f"setting=None: expected cluster_probs, success_probs and drift_probs "
                    f"all given (missing {', '.join(missing)}), or setting in (1, 2, 3)"
                )
        elif isinstance(setting, (bool, np.bool_)) or setting not in SETTINGS:
            raise ValueError(f"setting={_fmt(setting)}: expected one of 1, 2, 3 or None")
        else:
            preset = SETTINGS[int(setting)]
        self.setting = None if setting is None else int(setting)
        n_groups = 2
        cp = as_distributions(
            "cluster_probs",
            preset["cluster_probs"] if cluster_probs is None else cluster_probs,
            (n_groups, None),
        )
        n_bins = cp.shape[1]
        if n_bins < 2:
            raise ValueError(f"cluster_probs={_fmt(cluster_probs)}: expected at least 2 bins")
        raw_sp = preset["success_probs"] if success_probs is None else success_probs
        if np.ndim(raw_sp) == 1:
            sp = np.tile(as_probabilities("success_probs", raw_sp, (n_bins,)), (n_groups, 1))
        else:
            sp = as_probabilities("success_probs", raw_sp, (n_groups, n_bins))
        dp = as_distributions(
            "drift_probs", preset["drift_probs"] if drift_probs is None else drift_probs, (2, 3)
        )
        n_ind = as_count("individuals_per_group", individuals_per_group)
        counts = cp * n_ind
        if np.any(np.abs(counts - np.round(counts)) > 1e-9):
            raise ValueError(
                f"cluster_probs={_fmt(cluster_probs if cluster_probs is not None else cp)}: "
                f"times individuals_per_group={n_ind} must give whole numbers of "
                "individuals per bin"
            )
        gp = as_distributions("group_probs", group_probs, (n_groups,))
        self.interest_rate = as_positive("interest_rate", interest_rate, allow_zero=True)
        self.loan_amount = as_positive("loan_amount", loan_amount)
        self.starting_cash = as_positive("starting_cash", starting_cash)
        self.max_steps = as_count("max_steps", max_steps)
        self.history_window = as_count("history_window", history_window)
        self.obs_bin = as_flag("obs_bin", obs_bin)
        self.obs_group = as_flag("obs_group", obs_group)
        self.obs_history = as_flag("obs_history", obs_history)
        self.time_limit_terminates = as_flag("time_limit_terminates", time_limit_terminates)
        if not (self.obs_bin or self.obs_group or self.obs_history):
            raise ValueError(
                "obs_bin, obs_group, obs_history are all False: at least one observation "
                "part must stay on"
            )

        self.n_bins = n_bins
        self.individuals_per_group = n_ind
        self.group_probs = (float(gp[0]), float(gp[1]))
        self.initial_cluster_probs = cp.copy()
        self.success_probs = sp.copy()
        self.drift_probs = dp.copy()
        self._success = sp.tolist()
        self._group_cum = np.cumsum(gp).tolist()
        self._drift_cum = np.cumsum(dp, axis=1).tolist()
        self._gain = qual.gain_table(n_bins).tolist()
        self._benefit = self.benefit_table().tolist()
        # Initial bins, individual by individual: group g holds g*n .. (g+1)*n - 1,
        # sorted by bin (selection is uniform within the group, so the order is moot).
        per_bin = np.round(counts).astype(np.int64)
        self._initial_bins = [
            int(b) for g in range(n_groups) for b in np.repeat(np.arange(n_bins), per_bin[g])
        ]
        self._qm_scale = [self.group_probs[g] / n_ind for g in range(n_groups)]

        # Observation: static part per (group, bin), history part appended.
        static = (n_bins if self.obs_bin else 0) + (n_groups if self.obs_group else 0)
        self._static_size = static
        size = static + (n_groups * n_bins if self.obs_history else 0)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(size,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        table = np.zeros((n_groups, n_bins, static), dtype=np.float32)
        for g in range(n_groups):
            for b in range(n_bins):
                if self.obs_bin:
                    table[g, b, b] = 1.0
                if self.obs_group:
                    table[g, b, static - n_groups + g] = 1.0
        self._obs_table = [[table[g, b] for b in range(n_bins)] for g in range(n_groups)]

        # Episode state (set in reset()); the pool bookkeeping lives in PoolEnv.
        self._init_pool(n_groups, n_groups * n_ind)
        self._pool_group = [g for g in range(n_groups) for _ in range(n_ind)]
        self._bins: list[int] = []
        self._x_pi0: list[int] = []
        self._qsum = [0.0] * n_groups
        self._hist = np.zeros(n_groups * n_bins, dtype=np.float64)
        self._fifo: deque[int] = deque()
        self._cash = self.starting_cash
        self._drift = 0
        self._extra: dict[str, Any] = {}

    # ------------------------------------------------------------------ public state

    @property
    def cash(self) -> float:
        """The bank's current cash."""
        return self._cash

    @property
    def applicant(self) -> tuple[int, int, int]:
        """``(individual, group, bin)`` of the applicant shown in the latest observation."""
        i = self._index
        return i, self._group, (self._bins[i] if i >= 0 else -1)

    def population_bins(self) -> np.ndarray:
        """Current bin of every individual (int64 ``[N]``; group 0 first)."""
        return np.array(self._bins, dtype=np.int64)

    def initial_bins(self) -> np.ndarray:
        """Bin of every individual at reset (int64 ``[N]``)."""
        return np.array(self._initial_bins, dtype=np.int64)

    def bin_counts(self) -> np.ndarray:
        """int64 ``[2, n_bins]``: individuals of each group in each bin."""
        n = self.individuals_per_group
        b = np.asarray(self._bins if self._bins else self._initial_bins, dtype=np.int64)
        return np.stack(
            [np.bincount(b[g * n : (g + 1) * n], minlength=self.n_bins) for g in (0, 1)]
        )

    def transition_kernels(self) -> np.ndarray:
        """``P[s, d, x, x']`` of this env (:func:`rllib_fair.fairness.qualification.kernels`)."""
        return qual.kernels(self.success_probs, self.drift_probs, self.n_bins)

    def benefit_table(self) -> np.ndarray:
        """``Delta[s, x]``, the benefit of a loan.

        See :func:`rllib_fair.fairness.qualification.benefit`.
        """
        return qual.benefit(self.transition_kernels(), qual.gain_table(self.n_bins))

    def visit_probability(self, group: int = 0) -> float:
        """Probability that a step decides on a given individual of ``group``."""
        return self.group_probs[group] / self.individuals_per_group

    def visit_pmf(self, T: int | None = None, group: int = 0) -> np.ndarray:
        """``P(K = k)``, k = 0..T: decisions on one individual of ``group`` in T steps.

        ``K ~ Binomial(T, group_probs[group] / individuals_per_group)`` whatever the policy
        (Binomial(500, 1/200) by default); ``T`` defaults to ``max_steps``.
        """
        T = self.max_steps if T is None else T
        return qual.visit_pmf(T, self.visit_probability(group))

    def pi0_value_table(self, T: int | None = None, visited: bool = True) -> np.ndarray:
        """Exact ``V_{do(pi0, s)}(x)`` (Eq. 3) over one episode, ``[2, n_bins]``.

        Averaged over the individual's number of decisions K in a ``T``-step episode;
        ``visited`` conditions on ``K >= 1`` (the reference's average over
        visited individuals), else unvisited individuals count with gain 0.
        """
        T = self.max_steps if T is None else T
        P = self.transition_kernels()
        gain = qual.gain_table(self.n_bins)
        out = np.empty((2, self.n_bins))
        for g in range(2):
            w = qual.visit_weights(T, self.visit_probability(g), visited)
            pi = np.zeros((1, self.n_bins))
            out[g] = qual.tabular_values(P[g : g + 1], pi, gain, w)[2][0]
        return out

    # ------------------------------------------------------------------ dynamics

    def _fill_pool(self, rng: np.random.Generator) -> None:
        """Puts every individual back in its initial bin; empties the history; resets cash."""
        self._bins = list(self._initial_bins)
        self._x_pi0 = list(self._initial_bins)
        n = self.individuals_per_group
        for g in range(2):
            qs = sum(self._success[g][b] for b in self._initial_bins[g * n : (g + 1) * n])
            self._qsum[g] = qs
            self._pop_rows[0, g] = self.group_probs[g]
            self._pop_rows[1, g] = qs * self._qm_scale[g]
        self._hist[:] = 0.0
        self._fifo.clear()
        self._cash = self.starting_cash
        self._extra = {
            "individual": -1,
            "credit_bin": -1,
            "next_credit_bin": -1,
            "initial_credit_bin": -1,
            "credit_drift": 0,
            "qual_gain": 0.0,
            "qual_gain_ps": 0.0,
            "qual_gain_pi0": 0.0,
            "benefit": 0.0,
        }

    def _decide(self, a: int) -> tuple[float, bool]:
        """Pays or loses the loan, moves the applicant's bin (App. C), records the gains."""
        i = self._index
        g = self._group
        y = self._label
        k = self._drift
        x = self._bins[i]
        top = self.n_bins - 1
        if a:
            if y:
                reward = self.loan_amount * self.interest_rate
                nx = x + k + 1
            else:
                reward = -self.loan_amount
                nx = x + k - 1
            self._cash += reward
        else:
            reward = 0.0
            nx = x + k
        nx = 0 if nx < 0 else (top if nx > top else nx)  # clip after drift and outcome
        xd = x + k  # the bin had the applicant been rejected (pi^PS gain, same draw)
        xd = 0 if xd < 0 else (top if xd > top else xd)
        gain = self._gain
        if nx != x:
            self._bins[i] = nx
            success = self._success[g]
            qs = self._qsum[g] = self._qsum[g] + success[nx] - success[x]
            self._pop_rows[1, g] = qs * self._qm_scale[g]
        # Shadow pi0 trajectory of this individual: drift only, same draw.
        x0 = self._x_pi0[i]
        x0n = x0 + k
        x0n = 0 if x0n < 0 else (top if x0n > top else x0n)
        self._x_pi0[i] = x0n
        # History of decided applicants (one FIFO, both groups).
        code = g * self.n_bins + x
        self._fifo.append(code)
        self._hist[code] += 1.0
        if len(self._fifo) > self.history_window:
            self._hist[self._fifo.popleft()] -= 1.0
        self._extra = {
            "individual": i,
            "credit_bin": x,
            "next_credit_bin": nx,
            "initial_credit_bin": self._initial_bins[i],
            "credit_drift": k,
            "qual_gain": gain[x][nx],
            "qual_gain_ps": gain[x][xd],
            "qual_gain_pi0": gain[x0][x0n],
            "benefit": self._benefit[g][x],
        }
        return reward, self._cash < self.loan_amount

    def _decision_info(self, counts: np.ndarray, group: int, label: int, decision: int) -> dict:
        """The common step info plus this env's qualification-gain signals."""
        info = {
            "fairness": counts,
            "group": group,
            "label": label,
            "decision": decision,
            "label_observed": 1 if decision == 1 else 0,
        }
        info.update(self._extra)
        return info

    def _draw_applicant(self) -> np.ndarray:
        """Draws group, individual, repayment and drift of the next applicant."""
        u_group, u_ind, u_label, u_drift = self._uniform_row()
        gc = self._group_cum
        g = 0 if u_group < gc[0] else 1
        n = self.individuals_per_group
        j = int(u_ind * n)
        if j >= n:  # u * n can round up to n for u just below 1
            j = n - 1
        i = g * n + j
        b = self._bins[i]
        self._index = i
        self._group = g
        self._label = 1 if u_label < self._success[g][b] else 0
        dc = self._drift_cum[g]
        self._drift = -1 if u_drift < dc[0] else (0 if u_drift < dc[1] else 1)
        static = self._obs_table[g][b]
        if not self.obs_history:
            return static.copy()
        obs = np.empty(self.observation_space.shape[0], dtype=np.float32)
        s = self._static_size
        obs[:s] = static
        np.multiply(self._hist, 1.0 / (len(self._fifo) + 1), out=obs[s:], casting="same_kind")
        return obs
