"""``fair/QuarterlyLending-v0``: quarterly batch lending with selective feedback.

Lee, Padh, Watson, Kilbertus, Singh, "Fairness under Uncertainty in Sequential Decisions"
(FAccT 2026), Sec. 4. The world side (data, partition, budgets, metrics) is
:class:`rllib_fair.uncertainty.QuarterlyProblem`; the bank (model, strategy) lives in the
policy (:mod:`rllib_fair.algorithms.uncertainty`).

One step is one quarter. An episode has ``num_partitions`` steps:

* step 0 shows the **base quarter** Q1 with its observed labels ``Y`` in the observation's
  ``labels`` field (the bank must fit its base model before it decides Q2, and
  a module sees observations, not infos); the action of this step is ignored and its
  reward is 0;
* steps 1..num_partitions-1 show quarter Q2..Q_last (``labels`` all -1): the action grants
  loans, the reward is the quarter's utility ``U_q``, and ``info["y_obs"]``
  carries the recorded label of the granted rows only (-1 elsewhere).

Observation (``Dict``):

* ``features``: ``[N_max, k]`` float64, the raw table ``(R or P, Q, A)`` standardised by
  the base quarter (:class:`~rllib_fair.uncertainty.DesignTransform` without intercept:
  only R/P is rescaled; ``A`` is the group label 0/1), clipped to
  ``[-feature_bound, feature_bound]`` (100 by default, never reached at Table 2 settings,
  so the policy sees the core's design exactly, once it codes the group column);
  float64 so the episode (hence the bank's training data) is bit-identical to the core's;
* ``mask``: ``[N_max]`` 1 on real rows (``array_split`` sizes differ by one);
* ``budget``: ``[1]`` the quarter's budget ``B_q = round(budget_prop * sum Y)`` (the
  simulator computes it from labels the bank does not see, so it must be observed);
* ``labels``: ``[N_max]`` observed labels of the base quarter at step 0, -1 otherwise.

Action: ``MultiBinary(N_max)`` grants; masked rows are ignored. The policy is responsible
for the budget (``info["over_budget"]`` reports excess grants); ``enforce_budget=True``
keeps only the first ``B_q`` granted rows (by row order).

Info: the package keys (``fairness`` counts of the quarter against ``Y_real``, ``group``,
``label``, ``decision``, ``label_observed``; the scalar ones are -1 because a step decides
a batch, not one individual) plus the batch keys ``granted``, ``y_obs``, ``y_real``,
``groups``, ``budget``, ``next_budget``, ``over_budget``, ``quarter``, ``data_seed``,
``profit`` and
``metrics`` (the core's :func:`~rllib_fair.uncertainty.quarter_metrics` of the quarter,
oracle side). Under ``fairness_label_access="observed"`` the env runners drop ``y_real``
and ``metrics`` and set the ``QUALIFIED`` counts to ``SELECTED_QUALIFIED`` (what the bank can know:
the env's declared :class:`QuarterlyLabelHiding`).

Seeding: ``reset(seed=s)`` generates the data with seed ``s`` and partitions it with
:func:`rllib_fair.uncertainty.make_streams` ``(s)["partition"]``, exactly as
:func:`rllib_fair.uncertainty.run_quarters` with ``seed=s``; an unseeded reset draws the
next data seed from the env's generator.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rllib_fair.envs.base import FairEnvMixin, _fmt, as_count, as_flag
from rllib_fair.fairness.blocks import LabelHiding
from rllib_fair.fairness.counts import (
    NUM_FIELDS,
    QUALIFIED,
    QUALIFIED_MASS,
    SELECTED_QUALIFIED,
    counts_from_decisions,
)
from rllib_fair.settings import Rule, Setting, bool_setting, choice, integer, number
from rllib_fair.uncertainty.bias_on_demand import BiasOnDemandConfig, generate
from rllib_fair.uncertainty.logistic import DesignTransform
from rllib_fair.uncertainty.loop import QuarterlyConfig, QuarterlyProblem, make_streams
from rllib_fair.uncertainty.metrics import PROFIT_NORMALIZATIONS

#: Bias knobs accepted as top-level keyword arguments (Table 2's swept keys and the rest).
BIAS_KEYS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(BiasOnDemandConfig) if f.name != "dim"
)


#: Declarations of the bias knobs (:class:`BiasOnDemandConfig`'s fields but ``dim``).
BIAS_SETTINGS: tuple[Setting, ...] = (
    number("l_y", "historical bias on the score (S -= l_y A)"),
    number("l_m_y", "measurement bias on the observed label"),
    number("thr_supp", "correlation threshold of the suppression feature set"),
    number("l_h_r", "historical bias on resources (R = N_R - l_h_r A)"),
    number("l_h_q", "historical bias on Q"),
    number("l_m", "measurement (proxy) bias on R"),
    number("p_u", "fraction of the A = 1 rows kept", 0, 1, low_open=True),
    bool_setting("l_r", "under-sample by keeping the lowest-R A = 1 rows"),
    bool_setting("l_o", "omitted-variable bias: drop the R (or P) column"),
    number("l_y_b", "interaction term l_y_b R A in the score"),
    number("l_q", "weight of Q in the score"),
    number("sy", "standard deviation of the score noise", 0, low_open=True),
    number("l_r_q", "influence of R on Q"),
    bool_setting("l_m_y_non_linear", "non-linear measurement bias on the label"),
    number("p_a", "P(A = 1)", 0, 1, low_open=True, high_open=True),
)


class QuarterlyLabelHiding(LabelHiding):
    """Label hiding for a quarter's batch of decisions (this env's ``LABEL_HIDING``).

    An info with an array ``y_real`` (every applicant's true label) loses it and its
    oracle ``metrics``; its ``QUALIFIED`` counts become ``SELECTED_QUALIFIED`` (the
    observed positives) and its ``QUALIFIED_MASS`` row is zeroed; every rejected applicant
    counts as a removed label. Other infos follow the one-decision rule of the base class.
    """

    def hide_info(self, info: dict) -> int:
        """Hides one info's unobserved labels; returns how many were removed."""
        if "y_real" not in info:
            return super().hide_info(info)
        counts = info.get("fairness")
        if counts is not None:
            counts[QUALIFIED_MASS] = 0.0
            counts[QUALIFIED] = counts[SELECTED_QUALIFIED]
        y_real = np.asarray(info.pop("y_real"))
        info.pop("metrics", None)
        granted = np.asarray(info.get("granted", np.zeros(0)))
        return int(y_real.size - np.count_nonzero(granted))


class QuarterlyLendingEnv(FairEnvMixin, gym.Env):
    """Quarterly batch lending on BiasOnDemand data (one step = one quarter).

    Args:
        dim: applicants generated per episode (Table 2: 20,000).
        num_partitions: quarters including the base quarter (Table 2: 8).
        budget_prop: budget = this fraction of the quarter's positives (0.8).
        budget_label: ``"y"`` (recorded label, default) or ``"y_real"``.
        gain: margin on a repaid loan (0.4).
        loss: loss on a default (1.0).
        profit_label: ``"y_real"`` (default) or ``"y"``.
        profit_normalization: ``utility_q`` normalisation (``"per_100_applicants"``).
        disadvantaged_group: 0 (the biased group is group 0, default) or 1.
        shuffle: permute the rows once before partitioning (True).
        enforce_budget: keep only the first ``B_q`` grants (False: the policy's job).
        feature_bound: clip of the standardised features (100).
        max_steps: truncate an episode after this many steps (default None: the episode
            terminates after the last quarter, ``num_partitions`` steps).
        bias: a dict of bias knobs (``l_y``, ``l_m_y``, ...); top-level knob keywords
            (``l_y=2``) are merged into it.
        **knobs: bias knobs as keywords (:data:`BIAS_KEYS`).

    Raises:
        ValueError: one line naming a bad argument.
    """

    GROUP_NAMES: ClassVar[tuple[str, ...]] = ("disadvantaged", "advantaged")
    DEFAULT_NOTION: ClassVar[str] = "demographic_parity"
    DESCRIPTION: ClassVar[str] = (
        "Quarterly batch lending with selective labels on BiasOnDemand data "
        "(Lee et al. 2026); one step = one quarter"
    )
    LABEL_HIDING: ClassVar[LabelHiding] = QuarterlyLabelHiding()
    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    DECLARED_SETTINGS: ClassVar[tuple] = (
        integer("dim", "applicants generated per episode", 100, 10**7),
        integer("num_partitions", "quarters, the base quarter included", 2),
        number("budget_prop", "budget: this fraction of the quarter's positives", 0, 1),
        choice("budget_label", ("y", "y_real"), "label the budget counts"),
        number("gain", "margin on a repaid loan", 0),
        number("loss", "loss on a default", 0),
        choice("profit_label", ("y_real", "y"), "label the profit counts"),
        choice("profit_normalization", PROFIT_NORMALIZATIONS, "normalisation of utility_q"),
        integer("disadvantaged_group", "index of the biased group", choices=(0, 1)),
        bool_setting("shuffle", "permute the rows once before partitioning"),
        bool_setting("enforce_budget", "keep only the first B_q grants"),
        number("feature_bound", "clip of the standardised features", 1, 1e6),
        integer(
            "max_steps",
            "truncate an episode after this many steps",
            1,
            none=True,
            none_means="after the last quarter",
        ),
        Setting(
            "bias",
            "dict",
            "bias knobs of the data generator (the knobs below, as a mapping)",
            fields=BIAS_SETTINGS,
            none=True,
            none_means="no bias",
        ),
        *BIAS_SETTINGS,
    )
    DECLARED_RULES: ClassVar[tuple] = (
        Rule(
            "quarters_fit",
            ("num_partitions", "dim"),
            "at least 8 applicants per quarter: num_partitions <= dim // 8",
            lambda v: (
                None
                if v["num_partitions"] <= v["dim"] // 8
                else (
                    f"num_partitions: {v['num_partitions']!r} is invalid with dim={v['dim']!r}; "
                    f"valid: an integer in [2, {v['dim'] // 8}] (at least 8 applicants per quarter)"
                )
            ),
            {"dim": 100, "num_partitions": 20},
        ),
    )

    def __init__(
        self,
        dim: int = 20000,
        num_partitions: int = 8,
        budget_prop: float = 0.8,
        budget_label: str = "y",
        gain: float = 0.4,
        loss: float = 1.0,
        profit_label: str = "y_real",
        profit_normalization: str = "per_100_applicants",
        disadvantaged_group: int = 0,
        shuffle: bool = True,
        enforce_budget: bool = False,
        feature_bound: float = 100.0,
        max_steps: int | None = None,
        bias: dict | None = None,
        **knobs: Any,
    ) -> None:
        bias = self._bias_knobs(bias, knobs)
        dim = as_count("dim", dim, minimum=100)
        num_partitions = as_count("num_partitions", num_partitions, minimum=2)
        if dim > 10**7 or num_partitions > dim // 8:
            raise ValueError(
                f"dim={dim}, num_partitions={num_partitions}: expected dim <= 1e7 and at "
                "least 8 applicants per quarter"
            )
        if (
            isinstance(feature_bound, bool)
            or not isinstance(feature_bound, (int, float))
            or not 1.0 <= feature_bound <= 1e6
        ):
            raise ValueError(f"feature_bound={_fmt(feature_bound)}: expected a number in [1, 1e6]")
        if profit_normalization not in PROFIT_NORMALIZATIONS:
            raise ValueError(
                f"profit_normalization={profit_normalization!r}: expected one of "
                f"{', '.join(PROFIT_NORMALIZATIONS)}"
            )
        try:
            bias_cfg = BiasOnDemandConfig(dim=dim).replace(**bias)
            self.config = QuarterlyConfig(
                bias=bias_cfg,
                disadvantaged_group=disadvantaged_group,
                num_partitions=num_partitions,
                shuffle=as_flag("shuffle", shuffle),
                budget_prop=budget_prop,
                budget_label=budget_label,
                gain=gain,
                loss=loss,
                profit_label=profit_label,
                profit_normalization=profit_normalization,
            )
        except (TypeError, ValueError) as err:
            raise ValueError(" ".join(str(err).split())) from None
        self.enforce_budget = as_flag("enforce_budget", enforce_budget)
        self.max_steps = None if max_steps is None else as_count("max_steps", max_steps)
        self.feature_bound = float(feature_bound)
        probe = generate(bias_cfg.replace(dim=100), 0)
        self.feature_names = probe.feature_names
        self.n_features = len(self.feature_names)
        self.n_max = math.ceil(dim / num_partitions)
        n, k, b = self.n_max, self.n_features, self.feature_bound
        self.observation_space = spaces.Dict(
            {
                "features": spaces.Box(-b, b, (n, k), np.float64),
                "mask": spaces.Box(0.0, 1.0, (n,), np.float32),
                "budget": spaces.Box(0.0, float(n), (1,), np.float32),
                "labels": spaces.Box(-1.0, 1.0, (n,), np.float32),
            }
        )
        self.action_space = spaces.MultiBinary(n)
        self._problem: QuarterlyProblem | None = None
        self._q = -1
        self._x: np.ndarray | None = None

    @staticmethod
    def _bias_knobs(bias: Any, knobs: dict[str, Any]) -> dict[str, Any]:
        """The bias knobs of ``bias`` and the keyword knobs, merged (one-line errors)."""
        unknown = sorted(set(knobs) - set(BIAS_KEYS))
        if unknown:
            raise ValueError(
                f"{unknown[0]}: unknown argument; valid bias knobs: {', '.join(BIAS_KEYS)}"
            )
        if bias is not None and not isinstance(bias, dict):
            raise ValueError(f"bias={_fmt(bias)}: expected a dict of bias knobs")
        bias = {**(bias or {}), **knobs}
        bad = sorted(set(bias) - set(BIAS_KEYS))
        if bad:
            raise ValueError(f"bias: unknown knob {bad[0]!r}; valid: {', '.join(BIAS_KEYS)}")
        return bias

    @classmethod
    def feature_names_for(cls, env_config: dict[str, Any] | None) -> tuple[str, ...]:
        """``feature_names`` of this env built with ``env_config``; builds nothing.

        The names follow the bias knobs alone (:meth:`BiasOnDemandConfig.feature_names`).

        Raises:
            ValueError: one line, for an unknown or bad bias knob.
        """
        config = dict(env_config or {})
        knobs = {k: v for k, v in config.items() if k in BIAS_KEYS}
        bias = cls._bias_knobs(config.get("bias"), knobs)
        try:
            return BiasOnDemandConfig().replace(**bias).feature_names()
        except (TypeError, ValueError) as err:
            raise ValueError(" ".join(str(err).split())) from None

    # -------------------------------------------------------------------- episode
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Generates a new data set, shows the base quarter (labels included).

        Returns:
            ``(obs, info)``; the info has the package keys with empty counts and
            ``quarter = 1``.
        """
        super().reset(seed=seed, options=options)
        data_seed = int(seed) if seed is not None else int(self.np_random.integers(2**31 - 1))
        self.data_seed = data_seed
        problem = QuarterlyProblem.build(
            self.config, data_seed, make_streams(data_seed)["partition"]
        )
        data = problem.data
        base = problem.parts[0]
        # The group column stays the raw 0/1 label in the observation; the bank codes it
        # for its model (``group_encoding`` of the algorithm, centered by default).
        design = DesignTransform.fit(
            data.features[base],
            data.feature_names,
            use_group_feature=True,
            intercept=False,
            group_encoding="indicator",
        )
        self._x = np.clip(design(data.features), -self.feature_bound, self.feature_bound)
        self._problem = problem
        self._q = 0
        info = self._empty_info()
        info["quarter"] = 1
        info["next_budget"] = int(problem.budgets[1])
        info["data_seed"] = data_seed
        return self._obs(0), info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        """Decides the shown quarter (step 0, the base quarter, ignores the action).

        Raises:
            RuntimeError: before ``reset()`` or after the episode ended.
            ValueError: for an action that is not ``N_max`` zeros and ones.
        """
        if self._problem is None:
            raise RuntimeError(f"{type(self).__name__}.step() called before reset()")
        self._check_episode_running()
        granted_all = self._as_action(action)
        problem, q = self._problem, self._q
        if q == 0:
            reward, info = 0.0, self._empty_info()
            info["quarter"] = 1
        else:
            reward, info = self._decide(q, granted_all)
        self._q = q + 1
        terminated = self._q >= problem.num_quarters
        truncated = not terminated and self.max_steps is not None and self._q >= self.max_steps
        info["next_budget"] = -1 if terminated else int(problem.budgets[self._q])
        info["data_seed"] = self.data_seed
        if terminated or truncated:
            self._episode_over = True
        if terminated:
            obs = self._terminal_obs()
        else:
            obs = self._obs(self._q)
        return obs, float(reward), bool(terminated), bool(truncated), info

    # -------------------------------------------------------------------- helpers
    def _as_action(self, action: Any) -> np.ndarray:
        arr = np.asarray(action)
        if (
            arr.shape != (self.n_max,)
            or arr.dtype.kind not in "biuf"
            or not np.all((arr == 0) | (arr == 1))
        ):
            raise ValueError(
                f"action={_fmt(action)}: expected {self.n_max} zeros and ones (MultiBinary)"
            )
        return arr.astype(bool)

    def _decide(self, q: int, granted_all: np.ndarray) -> tuple[float, dict[str, Any]]:
        problem = self._problem
        assert problem is not None
        idx = problem.parts[q]
        n_q = len(idx)
        granted = granted_all[:n_q].copy()
        budget = int(problem.budgets[q])
        n_granted = int(granted.sum())
        if self.enforce_budget and n_granted > budget:
            granted[np.flatnonzero(granted)[budget:]] = False
        data = problem.data
        m = problem.metrics(q, granted)
        counts = counts_from_decisions(
            data.y_real[idx], granted.astype(np.int64), data.group[idx], 2
        )
        y_obs = np.where(granted, data.y[idx], -1).astype(np.int64)
        info = {
            "fairness": np.asarray(counts, dtype=np.float64),
            "group": -1,
            "label": -1,
            "decision": -1,
            "label_observed": -1,
            "granted": granted.astype(np.int8),
            "y_obs": y_obs,
            "y_real": data.y_real[idx].astype(np.int64),
            "groups": data.group[idx].astype(np.int64),
            "budget": budget,
            "over_budget": max(n_granted - budget, 0),
            "quarter": q + 1,
            "profit": float(m["profit"]),
            "metrics": m,
        }
        return float(m["utility_q"]), info

    def _empty_info(self) -> dict[str, Any]:
        empty = np.zeros(0, dtype=np.int64)
        return {
            "fairness": np.zeros((NUM_FIELDS, 2), dtype=np.float64),
            "group": -1,
            "label": -1,
            "decision": -1,
            "label_observed": -1,
            "granted": np.zeros(0, dtype=np.int8),
            "y_obs": empty,
            "y_real": empty.copy(),
            "groups": empty.copy(),
            "budget": -1,
            "over_budget": 0,
            "quarter": 0,
            "profit": 0.0,
            "metrics": {},
        }

    def _obs(self, q: int) -> dict[str, np.ndarray]:
        problem = self._problem
        assert problem is not None and self._x is not None
        idx = problem.parts[q]
        n_q = len(idx)
        feats = np.zeros((self.n_max, self.n_features), dtype=np.float64)
        feats[:n_q] = self._x[idx]
        mask = np.zeros(self.n_max, dtype=np.float32)
        mask[:n_q] = 1.0
        labels = np.full(self.n_max, -1.0, dtype=np.float32)
        if q == 0:
            labels[:n_q] = problem.data.y[idx]
        budget = np.array([problem.budgets[q]], dtype=np.float32)
        return {"features": feats, "mask": mask, "budget": budget, "labels": labels}

    def _terminal_obs(self) -> dict[str, np.ndarray]:
        n, k = self.n_max, self.n_features
        return {
            "features": np.zeros((n, k), dtype=np.float64),
            "mask": np.zeros(n, dtype=np.float32),
            "budget": np.zeros(1, dtype=np.float32),
            "labels": np.full(n, -1.0, dtype=np.float32),
        }
