"""The quarterly lending loop of Lee et al. (FAccT 2026, Sec. 4; numpy only).

``run_quarters(config, seed)`` is the reference implementation of one configuration of the
paper's sweep::

    data  = generate(bias, seed)                     # BiasOnDemand, groups relabelled
    perm  = permutation(n)  (partition stream)        # rows are i.i.d.; shuffle once
    parts = array_split(perm, num_partitions)         # quarter q = parts[q]
    fit the base model on every Q1 label (Y)          # "Q1 ... all the ground truth" (Sec. 4)
    for q = 2 .. num_partitions:                      # one decision round per quarter
        p, Delta = model(X_q), delta-method CI        # model trained up to quarter q-1
        B_q   = round(budget_prop * sum_{i in q} Y_i) # Table 2 "budget_prop"
        E_q   = {p >= rejection_threshold}
        D     = decide(strategy, p, B_q, E_q, ...)    # strategies.py
        metrics(D, Y_real, A)                         # App. B, oracle side
        update the same model on Y of D only          # selective feedback, warm start

The two sides are split so that an environment and an RLlib module can reuse them:
:class:`QuarterlyProblem` is everything the world knows (data, partition, budgets, labels,
metrics); :class:`QuarterlyAgent` is everything the bank knows (design, model, labelled rows,
strategy). The agent only ever receives labels of granted rows (:meth:`QuarterlyAgent.update`
takes the decisions and the observed labels of those rows).

Random streams: the data come from ``RandomState(seed)`` (BiasOnDemand's
legacy stream, so seed 42 is the public generator); ``SeedSequence(seed).spawn(3)`` gives
the partition, SGD and strategy generators, in that order.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from rllib_fair.uncertainty.bias_on_demand import BiasOnDemandConfig, BiasOnDemandData, generate
from rllib_fair.uncertainty.logistic import (
    GROUP_ENCODINGS,
    DesignTransform,
    LogisticModel,
    fisher_information,
)
from rllib_fair.uncertainty.logistic import delta_method_halfwidth as _halfwidth
from rllib_fair.uncertainty.metrics import PROFIT_NORMALIZATIONS, quarter_metrics
from rllib_fair.uncertainty.strategies import (
    EXPLORATION_SIZINGS,
    STRATEGIES,
    Decision,
    decide,
    eligible_mask,
    exact_round,
)

__all__ = [
    "QuarterRecord",
    "QuarterlyAgent",
    "QuarterlyConfig",
    "QuarterlyProblem",
    "make_streams",
    "run_quarters",
]


@dataclass(frozen=True)
class QuarterlyConfig:
    """Every constant of the procedure and every choice the paper leaves open (defaults: Table 2).

    Attributes:
        bias: the generator's knobs (default: the no-bias baseline).
        disadvantaged_group: 0 relabels so the biased group is group 0 (the paper's reading).
        num_partitions: quarters, Q1 the base quarter (Table 2: 8; the text says 10).
        shuffle: permute the rows once before partitioning ([choice]).
        strategy: one of :data:`~rllib_fair.uncertainty.strategies.STRATEGIES`.
        proportion_certain: certain share of the budget (Table 2: 0.6/0.7/0.8).
        delta: exploration fraction of the quarter (Table 2: 0.02/0.05/0.1).
        rejection_threshold: minimum ``p`` to grant (Table 2: 0.1).
        budget_prop: budget = this fraction of the quarter's positives (Table 2: 0.8).
        budget_label: ``"y"`` (the bank's recorded label, default) or ``"y_real"``.
        gain: ``g``, margin on a repaid loan (Table 2 ``gain_percentage``: 0.4).
        loss: ``l``, lost on a default ([choice] 1.0, the principal).
        fill_budget: spend the whole budget (the paper leaves it open).
        exploration_sizing: ``"unified"`` or ``"literal"`` (the paper's two descriptions of the
            exploration size).
        ci_z: normal quantile of the CI (1.96).
        compute_halfwidth: compute the CI for every strategy (diagnostics); it is always
            computed for ``uncertainty_aware``.
        n_epochs: passes per fit (Table 2: 40).
        lr: step size (Table 2: 0.05).
        batch_size: minibatch rows ([choice] 32; ``None`` = full batch).
        use_group_feature: A is a model input (the paper leaves it open; ``False`` drops it).
        q_encoding: ``"int"`` or ``"onehot"``.
        group_encoding: how the group enters the model, ``"centered"`` (``A - 1/2``,
            default: a swap of the group labels leaves every decision unchanged) or
            ``"indicator"`` (raw 0/1: results depend on which group is coded 1); see
            :mod:`rllib_fair.uncertainty.logistic`.
        train_on: ``"quarter"`` (this quarter's granted loans, warm start, default) or
            ``"cumulative"`` (warm start on every labelled row so far).
        optimizer: ``"sgd"`` (Table 2) or ``"newton"`` (MLE on the training rows; not for the
            counterfactual strategy).
        cf_alpha: sharpness ``alpha`` of the soft decision ([choice] 10).
        cf_rows: ``"all"`` (every applicant of the quarter, observed term on granted rows;
            default) or ``"labelled"`` (granted rows only).
        cf_bce_weight: weight of a log-likelihood term in the counterfactual objective (0).
        profit_label: ``"y_real"`` (default) or ``"y"``.
        profit_normalization: how ``utility_q`` is normalised.
    """

    bias: BiasOnDemandConfig = field(default_factory=BiasOnDemandConfig)
    disadvantaged_group: int = 0
    num_partitions: int = 8
    shuffle: bool = True
    strategy: str = "naive"
    proportion_certain: float = 0.7
    delta: float = 0.05
    rejection_threshold: float = 0.1
    budget_prop: float = 0.8
    budget_label: str = "y"
    gain: float = 0.4
    loss: float = 1.0
    fill_budget: bool = True
    exploration_sizing: str = "unified"
    ci_z: float = 1.96
    compute_halfwidth: bool = False
    n_epochs: int = 40
    lr: float = 0.05
    batch_size: int | None = 32
    use_group_feature: bool = True
    q_encoding: str = "int"
    group_encoding: str = "centered"
    train_on: str = "quarter"
    optimizer: str = "sgd"
    cf_alpha: float = 10.0
    cf_rows: str = "all"
    cf_bce_weight: float = 0.0
    profit_label: str = "y_real"
    profit_normalization: str = "per_100_applicants"

    def __post_init__(self) -> None:
        choices = {
            "strategy": STRATEGIES,
            "exploration_sizing": EXPLORATION_SIZINGS,
            "budget_label": ("y", "y_real"),
            "q_encoding": ("int", "onehot"),
            "group_encoding": GROUP_ENCODINGS,
            "train_on": ("quarter", "cumulative"),
            "optimizer": ("sgd", "newton"),
            "cf_rows": ("all", "labelled"),
            "profit_label": ("y_real", "y"),
            "profit_normalization": PROFIT_NORMALIZATIONS,
            "disadvantaged_group": (0, 1),
        }
        for key, valid in choices.items():
            if getattr(self, key) not in valid:
                raise ValueError(f"{key} must be one of {valid}, got {getattr(self, key)!r}")
        if self.num_partitions < 2:
            raise ValueError("num_partitions must be >= 2 (a base quarter and one round)")
        for key in ("proportion_certain", "delta", "rejection_threshold", "budget_prop"):
            if not 0.0 <= getattr(self, key) <= 1.0:
                raise ValueError(f"{key} must lie in [0, 1], got {getattr(self, key)}")
        if self.optimizer == "newton" and self.strategy == "counterfactual":
            raise ValueError("optimizer='newton' fits the likelihood; use 'sgd' for counterfactual")
        if self.gain < 0 or self.loss < 0 or self.ci_z <= 0 or self.cf_alpha <= 0:
            raise ValueError("gain, loss must be >= 0 and ci_z, cf_alpha > 0")

    def replace(self, **changes) -> QuarterlyConfig:
        """Returns a copy with ``changes``; bias knobs (``l_y=...``) go into ``bias``."""
        bias_keys = {f.name for f in dataclasses.fields(BiasOnDemandConfig)}
        bias_changes = {k: changes.pop(k) for k in list(changes) if k in bias_keys}
        cfg = dataclasses.replace(self, **changes)
        if bias_changes:
            cfg = dataclasses.replace(cfg, bias=cfg.bias.replace(**bias_changes))
        return cfg


def make_streams(seed: int) -> dict[str, np.random.Generator]:
    """The partition, SGD and strategy generators of ``seed`` (independent streams)."""
    children = np.random.SeedSequence(seed).spawn(3)
    return {
        name: np.random.default_rng(child)
        for name, child in zip(("partition", "sgd", "strategy"), children)
    }


@dataclass
class QuarterlyProblem:
    """The world side of one run: data, partition into quarters, budgets, metrics.

    Attributes:
        config: the configuration.
        data: the generated table (groups relabelled per ``config.disadvantaged_group``).
        parts: ``num_partitions`` arrays of row indices; ``parts[0]`` is the base quarter.
        budgets: ``[num_partitions]`` ``B_q`` per quarter (``budgets[0]`` unused by the loop).
    """

    config: QuarterlyConfig
    data: BiasOnDemandData
    parts: list[np.ndarray]
    budgets: np.ndarray

    @classmethod
    def build(
        cls, config: QuarterlyConfig, seed: int, partition_rng: np.random.Generator
    ) -> QuarterlyProblem:
        """Generates the data with ``seed`` and partitions it with ``partition_rng``."""
        data = generate(config.bias, seed, disadvantaged_group=config.disadvantaged_group)
        n = len(data)
        perm = partition_rng.permutation(n) if config.shuffle else np.arange(n)
        parts = np.array_split(perm, config.num_partitions)
        label = data.y if config.budget_label == "y" else data.y_real
        budgets = np.array(
            [exact_round(config.budget_prop, int(label[idx].sum())) for idx in parts],
            dtype=np.int64,
        )
        return cls(config, data, parts, budgets)

    @property
    def num_quarters(self) -> int:
        """Number of partitions (base quarter included)."""
        return len(self.parts)

    def metrics(
        self,
        quarter: int,
        granted: np.ndarray,
        p_hat: np.ndarray | None = None,
        halfwidth: np.ndarray | None = None,
    ) -> dict[str, float]:
        """Per-quarter metrics of the decisions ``granted`` (``[N_q]`` bool) in ``quarter``."""
        idx = self.parts[quarter]
        cfg = self.config
        return quarter_metrics(
            granted,
            self.data.y_real[idx],
            self.data.group[idx],
            y_obs=self.data.y[idx],
            gain=cfg.gain,
            loss=cfg.loss,
            profit_label=cfg.profit_label,
            profit_normalization=cfg.profit_normalization,
            p_hat=p_hat,
            halfwidth=halfwidth,
        )


class QuarterlyAgent:
    """The bank: design transform, logistic model, labelled rows and the strategy.

    Args:
        config: the configuration.
        design: the design transform (fit on the base quarter's raw features).
        sgd_rng: generator of the minibatch permutations.
        strategy_rng: generator of the exploration draws.
    """

    def __init__(
        self,
        config: QuarterlyConfig,
        design: DesignTransform,
        sgd_rng: np.random.Generator,
        strategy_rng: np.random.Generator,
    ) -> None:
        self.config = config
        self.design = design
        self.sgd_rng = sgd_rng
        self.strategy_rng = strategy_rng
        self.model = LogisticModel(
            design.n_columns, lr=config.lr, n_epochs=config.n_epochs, batch_size=config.batch_size
        )
        d = design.n_columns
        self.labelled_x = np.zeros((0, d))  # rows whose label the bank has seen
        self.labelled_y = np.zeros(0)
        self.labelled_group = np.zeros(0, dtype=np.int64)
        self.seen_x = np.zeros((0, d))  # every applicant so far (cf_rows="all", cumulative)
        self.seen_y = np.zeros(0)
        self.seen_observed = np.zeros(0)

    # -- training --------------------------------------------------------------------
    def _remember(self, x, y, observed, group) -> None:
        self.labelled_x = np.vstack([self.labelled_x, x[observed]])
        self.labelled_y = np.concatenate([self.labelled_y, y[observed]])
        self.labelled_group = np.concatenate([self.labelled_group, group[observed]])
        if self.config.train_on == "cumulative":
            self.seen_x = np.vstack([self.seen_x, x])
            self.seen_y = np.concatenate([self.seen_y, np.where(observed, y, 0.0)])
            self.seen_observed = np.concatenate([self.seen_observed, observed.astype(float)])

    def _fit_loglik(self, x, y) -> None:
        if self.config.optimizer == "newton":
            self.model.fit_mle(x, y)
        else:
            self.model.fit(x, y, rng=self.sgd_rng)

    def _fit_cf(self, x, y, observed, tau) -> None:
        cfg = self.config
        if cfg.cf_rows == "labelled":
            x, y, observed = x[observed > 0], y[observed > 0], observed[observed > 0]
        self.model.fit_counterfactual(
            x,
            y,
            observed,
            tau,
            gain=cfg.gain,
            loss=cfg.loss,
            alpha=cfg.cf_alpha,
            bce_weight=cfg.cf_bce_weight,
            rng=self.sgd_rng,
        )

    def fit_base(self, raw: np.ndarray, y: np.ndarray, group: np.ndarray) -> None:
        """Trains the base model on every base-quarter label (paper Sec. 4, Q1).

        The counterfactual strategy first fits the likelihood for ``n_epochs`` (a warm-up,
        [choice]) to place ``tau`` = the ``ceil(budget_prop * sum Y)``-th largest ``p``,
        then maximises the counterfactual utility on the Q1 rows (all observed).
        """
        x = self.design(raw)
        y = np.asarray(y, dtype=np.float64)
        observed = np.ones(x.shape[0], dtype=bool)
        self._fit_loglik(x, y)
        if self.config.strategy == "counterfactual":
            k = math.ceil(Fraction(repr(self.config.budget_prop)) * int(y.sum()))
            tau = _kth_largest(self.model.predict_proba(x), k)
            self._fit_cf(x, y, observed.astype(float), tau)
        self._remember(x, y, observed, np.asarray(group, dtype=np.int64))

    # -- deciding --------------------------------------------------------------------
    def score(self, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """``(p, Delta)`` for the raw features of a quarter; ``Delta`` is None unless needed."""
        x = self.design(raw)
        p = self.model.predict_proba(x)
        cfg = self.config
        halfwidth = None
        if cfg.strategy == "uncertainty_aware" or cfg.compute_halfwidth:
            fisher = fisher_information(self.model.theta, self.labelled_x)
            halfwidth = _halfwidth(self.model.theta, x, z=cfg.ci_z, fisher=fisher)
        return p, halfwidth

    def decide(
        self, p_hat: np.ndarray, budget: int, halfwidth: np.ndarray | None = None
    ) -> Decision:
        """The strategy's decision for one quarter (:func:`~.strategies.decide`)."""
        cfg = self.config
        return decide(
            cfg.strategy,
            p_hat,
            budget,
            eligible_mask(p_hat, cfg.rejection_threshold),
            self.strategy_rng,
            halfwidth=halfwidth,
            proportion_certain=cfg.proportion_certain,
            delta=cfg.delta,
            fill_budget=cfg.fill_budget,
            exploration_sizing=cfg.exploration_sizing,
        )

    def update(
        self,
        raw: np.ndarray,
        granted: np.ndarray,
        y_granted: np.ndarray,
        group: np.ndarray,
        budget: int,
    ) -> None:
        """Warm-started update on the feedback of the granted loans (selective feedback).

        Args:
            raw: ``[N_q, k]`` raw features of the quarter's applicants.
            granted: ``[N_q]`` bool decisions.
            y_granted: ``[N_q]`` labels; only the entries of granted rows are read (pass -1
                elsewhere: the bank never sees them).
            group: ``[N_q]`` group of each applicant (for the labelled-rows bookkeeping).
            budget: ``B_q`` (sets the counterfactual threshold ``tau``).
        """
        cfg = self.config
        x = self.design(raw)
        granted = np.asarray(granted, dtype=bool)
        y = np.where(granted, np.asarray(y_granted, dtype=np.float64), 0.0)
        if cfg.strategy == "counterfactual":
            # tau: the B_q-th largest p among the quarter's applicants under the model
            # before the update ("set dynamically each quarter based on the budget", Sec. 4).
            tau = _kth_largest(self.model.predict_proba(x), budget)
            self._remember(x, y, granted, np.asarray(group, dtype=np.int64))
            if cfg.train_on == "cumulative":
                self._fit_cf(self.seen_x, self.seen_y, self.seen_observed, tau)
            else:
                self._fit_cf(x, y, granted.astype(float), tau)
            return
        self._remember(x, y, granted, np.asarray(group, dtype=np.int64))
        if cfg.train_on == "cumulative":
            self._fit_loglik(self.labelled_x, self.labelled_y)
        elif granted.any():
            self._fit_loglik(x[granted], y[granted])


def _kth_largest(p: np.ndarray, k: int) -> float:
    if p.size == 0:
        return 1.0
    k = min(max(int(k), 1), p.size)
    return float(np.partition(p, p.size - k)[p.size - k])


@dataclass
class QuarterRecord:
    """One decision round.

    Attributes:
        quarter: quarter number, 2..num_partitions (Q1 is the base quarter).
        budget: ``B_q``.
        metrics: per-quarter metrics (:func:`~.metrics.quarter_metrics`) plus
            ``cumulative_profit``, ``cumulative_utility`` and the decision's set sizes.
        rows: global row indices of the quarter's applicants.
        granted: ``[N_q]`` bool decisions.
        explored: ``[N_q]`` bool exploration set.
    """

    quarter: int
    budget: int
    metrics: dict[str, float]
    rows: np.ndarray
    granted: np.ndarray
    explored: np.ndarray

    def as_row(self) -> dict[str, float]:
        """Flat ``{name: value}`` for a results table (quarter and budget included)."""
        return {"quarter": self.quarter, "budget": self.budget, **self.metrics}


def run_quarters(
    config: QuarterlyConfig | None = None, seed: int = 0, **overrides
) -> list[QuarterRecord]:
    """Runs one configuration of the quarterly procedure (paper Sec. 4); the sweep's unit.

    Args:
        config: the configuration (default: Table 2's no-bias baseline, naive strategy).
        seed: Table 2's ``random_seed``: data, partition, SGD and exploration streams.
        **overrides: shortcuts for ``config.replace(...)`` (bias knobs included).

    Returns:
        One :class:`QuarterRecord` per decision round (``num_partitions - 1`` of them).
    """
    cfg = QuarterlyConfig() if config is None else config
    if overrides:
        cfg = cfg.replace(**overrides)
    streams = make_streams(seed)
    problem = QuarterlyProblem.build(cfg, seed, streams["partition"])
    data = problem.data
    base = problem.parts[0]
    design = DesignTransform.fit(
        data.features[base],
        data.feature_names,
        use_group_feature=cfg.use_group_feature,
        q_encoding=cfg.q_encoding,
        group_encoding=cfg.group_encoding,
    )
    agent = QuarterlyAgent(cfg, design, streams["sgd"], streams["strategy"])
    agent.fit_base(data.features[base], data.y[base], data.group[base])

    records: list[QuarterRecord] = []
    cumulative, cumulative_u = 0.0, 0.0
    for q in range(1, problem.num_quarters):
        idx = problem.parts[q]
        raw = data.features[idx]
        budget = int(problem.budgets[q])
        p_hat, halfwidth = agent.score(raw)
        dec = agent.decide(p_hat, budget, halfwidth)
        m = problem.metrics(q, dec.granted, p_hat, halfwidth)
        cumulative += m["profit"]
        cumulative_u += m["utility_q"]
        group = data.group[idx]
        m.update(
            cumulative_profit=cumulative,
            cumulative_utility=cumulative_u,
            n_eligible=float(np.sum(p_hat >= cfg.rejection_threshold)),
            n_certain=float(dec.certain.sum()),
            n_uncertain=float(dec.uncertain.sum()),
            n_candidates=float(dec.candidates.sum()),
            n_explored=float(dec.explored.sum()),
            n_explored_0=float(np.sum(dec.explored & (group == 0))),
            n_explored_1=float(np.sum(dec.explored & (group == 1))),
            tau=dec.tau,
            n_labelled_0=float(np.sum(agent.labelled_group == 0)),
            n_labelled_1=float(np.sum(agent.labelled_group == 1)),
        )
        # Selective feedback: the agent receives the recorded label Y of granted rows only.
        y_feedback = np.where(dec.granted, data.y[idx], -1)
        agent.update(raw, dec.granted, y_feedback, group, budget)
        records.append(QuarterRecord(q + 1, budget, m, idx, dec.granted, dec.explored))
    return records
