"""``fair/SchoolAdmission-v0``: SELLF's school admission environment (ENEM stand-in).

Follows SELLF's ``EnemEnv`` (Valdrighi et al., "Long-term Fairness with Selective
Labels", Sec. 5.2 and App. D "School Admission"; hiaac-finance/sellf
``fairrl/environments/resampling.py`` and ``notebooks/enem.ipynb``). The paper builds
the pool and the pass-probability model ``alpha(x, z)`` from the ENEM 2020 microdata,
which are not available offline, so the default environment runs on a documented
synthetic stand-in calibrated to the published statistics (see
:func:`make_standin_params`; the calibrated numbers are committed as
``rllib_fair/envs/data/school_admission_standin.json``, whose ``provenance`` field says
how they were made). :func:`load_enem` builds the same environment from real ENEM
microdata (or any CSV / DataFrame of categorical features) by fitting the logistic
model with numpy.

The pieces live in sibling modules (every name stays importable from here):

| module | holds |
|---|---|
| :mod:`rllib_fair.envs.school_admission` | :class:`SchoolAdmissionEnv` (the dynamics) |
| :mod:`rllib_fair.envs.school_params` | :class:`SchoolAdmissionParams`, its checks |
| :mod:`rllib_fair.envs.school_standin` | the stand-in generator and its JSON table |
| :mod:`rllib_fair.envs.school_enem` | :func:`load_enem`, the ENEM / CSV loader |
| :mod:`rllib_fair.envs.school_fit` | :func:`fit_logistic`, the numpy logistic fit |
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from rllib_fair.envs.base import _fmt, as_count, as_distributions, as_flag, as_positive
from rllib_fair.envs.declared import amount, max_steps
from rllib_fair.envs.pool import PoolEnv
from rllib_fair.envs.school_enem import ENEM_FEATURE_COLUMNS, load_enem
from rllib_fair.envs.school_fit import _sigmoid, _sigmoid1, fit_logistic
from rllib_fair.envs.school_params import (
    SCHOOL_GROUP_NAMES,
    SchoolAdmissionParams,
    _check_params,
)
from rllib_fair.envs.school_standin import (
    DEFAULT_STANDIN_SEED,
    STANDIN_AGE_COEFFICIENTS,
    STANDIN_AGE_PROBS,
    STANDIN_CALIBRATION_SIZE,
    STANDIN_CARDINALITIES,
    STANDIN_FEATURE_NAMES,
    STANDIN_PATH,
    STANDIN_TILT,
    TARGET_GROUP_PROBS,
    TARGET_POSITIVE_RATE,
    TARGET_QUALIFICATION_GAP,
    _sample_standin,
    load_standin_table,
    make_standin_params,
    params_from_dict,
    standin_params,
    standin_to_dict,
    write_standin_json,
)
from rllib_fair.fairness.blocks import MetricBlock, NotionMetrics, SelectiveLabelMetrics
from rllib_fair.settings import Rule, Setting, bool_setting, integer, number, probabilities

__all__ = [
    "DEFAULT_STANDIN_SEED",
    "ENEM_FEATURE_COLUMNS",
    "SCHOOL_GROUP_NAMES",
    "STANDIN_AGE_COEFFICIENTS",
    "STANDIN_AGE_PROBS",
    "STANDIN_CALIBRATION_SIZE",
    "STANDIN_CARDINALITIES",
    "STANDIN_FEATURE_NAMES",
    "STANDIN_PATH",
    "STANDIN_TILT",
    "TARGET_GROUP_PROBS",
    "TARGET_POSITIVE_RATE",
    "TARGET_QUALIFICATION_GAP",
    "SchoolAdmissionEnv",
    "SchoolAdmissionParams",
    "fit_logistic",
    "load_enem",
    "load_standin_table",
    "make_standin_params",
    "params_from_dict",
    "standin_params",
    "standin_to_dict",
    "write_standin_json",
]

# ----------------------------------------------------------------------------- environment


class SchoolAdmissionEnv(PoolEnv):
    """Admission to a preparatory program on a resampled pool of ENEM-like applicants.

    ## Description

    SELLF's school admission environment (Valdrighi et al., Sec. 5.2, App. D), after
    ``EnemEnv`` of hiaac-finance/sellf. A decision-maker accepts applicants into a
    preparatory program for the ENEM exam; the label ``y`` (1 = passes, i.e. scores
    above a threshold) is only observed for accepted applicants. At reset a pool of
    ``n_applicants`` individuals is drawn: group ~ ``group_probs`` (Black/brown 38%,
    white 62%), then 38 categorical socio-economic features (one-hot, 126 dims) from the
    group's feature distributions (stand-in) or a data row of that group (real data).
    Each step one individual is drawn uniformly from the pool and shown; its label is
    drawn as ``Bernoulli(p)`` when it is shown, with the pass probability

    ``p = min(1, alpha(x, z) + gain * indicator)``,
    ``alpha(x, z) = sigmoid(w . x + w_z * z + b)``

    (a logistic model; ``z`` = 1 for white). After the decision on the shown
    individual:

    * Gain: if it was accepted (``a = 1``) or passed (``y = 1``, observed or not) its
      gain indicator is set (once; it never resets): ``gain`` (0.5) is added to its pass
      probability on every later draw, capped at 1. This is SELLF's "extra indicator
      feature ... 1 if it has already been previously accepted or if it has previously
      had the label Y=1 which increases the probability of the positive label by 0.5"
      (``EnemEnv.sample_label``: ``p = min(model_p + 0.5 * gain, 1)``).
    * Age: its age band moves one level up (young -> middle -> old, capped at the top
      level) whatever the decision, and the age coefficients (negative: 0, -0.4, -0.8 in
      the stand-in) lower its qualification. "Each iteration the age of the applicant
      will increase" is read as each time that applicant is decided on, as
      ``EnemEnv.update_features`` does for the decided individual only (O(1) per step;
      the alternative, ageing the whole pool every step, would put everybody in the top
      band within two steps).

    Individuals stay in the pool, so each group's qualification drifts with the policy
    (up through the gain, down through age).

    The default population is a synthetic stand-in (``school_admission_standin.json``,
    :func:`make_standin_params`) calibrated so that, over the population, the group
    shares are 0.38 / 0.62, the mean pass probability (positive rate) is 0.37 and the
    white minus Black/brown qualification gap is 0.125 (SELLF's initial disparity under
    qualification parity); see the table's ``calibration`` field for the achieved
    values. The population parameters (feature distributions, coefficients) are fixed
    by the stand-in seed; the pool is redrawn from ``self.np_random`` at every reset.
    :meth:`from_enem_csv` / :func:`load_enem` build the same environment from the real
    ENEM microdata.

    Differences from SELLF's code: the age update of ``EnemEnv`` hard-codes two age
    levels and edits the first two age x race columns (those of the Black/brown group)
    whatever the applicant's group, and its notebook's binning ``(code - 1) // 7`` of
    ``TP_FAIXA_ETARIA <= 14`` yields two levels, while the paper describes three; here
    the applicant's own age block moves up one of three levels. SELLF restores one
    fixed pool (the first 4000 rows of its 10,000-row sample) at every reset; here the
    pool is redrawn from ``self.np_random``. SELLF draws the label in ``step``; here it
    is drawn when the individual is shown (same distribution: nothing changes between).

    ## Action Space

    ``Discrete(2)``: 0 = reject, 1 = accept (admit to the program).

    ## Observation Space

    ``Box(0, 1, (n,), float32)`` describing the individual to decide on next:

    | part | indices (stand-in) | size |
    |---|---|---|
    | one-hot features, a block per feature (block 0: age band) | 0-125 | 126 (``D``) |
    | gain indicator | 126 | 1 |
    | one-hot group (Black/brown, white); ``obs_group`` | 127-128 | 2 |

    ``n = 129`` by default (``D + 1 + 2`` with data of ``D`` one-hot dims; 127 without
    the group). SELLF's 126-dim vector differs in layout: it holds the race indicator,
    age x race interactions, the other one-hot features and the gain indicator.

    ## Rewards

    ``a * (y - cost)``: ``1 - cost`` for an accepted applicant who passes, ``-cost`` for
    one who fails, 0 for a rejection. The resource (starting at ``starting_resource``)
    changes by the reward. ``cost`` is 0.5 as in SELLF Sec. 5.2; App. D and the
    reference code (``EnemEnv(cost=0.4)``) use 0.4 (pass ``cost=0.4`` for that).

    ## Episode End

    * Termination: the resource is ``<= 0`` (SELLF's condition).
    * Truncation: after ``max_steps`` steps (2048, SELLF's ``EnemEnv``).

    ## Arguments

    | argument | default | meaning |
    |---|---|---|
    | ``cost`` | 0.5 | cost of an acceptance (reward ``y - cost``) |
    | ``n_applicants`` | 4000 | pool size (SELLF's ``EnemEnv``) |
    | ``starting_resource`` | 1000 | resource at reset |
    | ``max_steps`` | 2048 | truncation horizon |
    | ``gain`` | 0.5 | pass-probability increase once accepted or passed |
    | ``group_probs`` | from ``params`` (0.38, 0.62) | probability of each group in the pool |
    | ``standin_seed`` | None | None: the committed stand-in; int: a new one from that seed (~1 s) |
    | ``params`` | None | :class:`SchoolAdmissionParams` replacing the stand-in (see load_enem) |
    | ``obs_group`` | True | append the one-hot group to the observation |

    ## Fairness signals

    ``info`` of ``step`` (``reset`` gives the same keys, zero decision counts and
    ``group = label = decision = -1``):

    * ``"fairness"``: float64 ``[NUM_FIELDS, 2]`` counts
      (:mod:`rllib_fair.fairness.counts`). Decision rows: the individual decided on in
      this step (shown in the previous observation) with its true label. Population
      rows, after the step: ``population[g]`` = number of pool members in group ``g``;
      ``qualified_mass[g]`` = sum of the group's current pass probabilities (gain and
      age included), maintained incrementally (O(1) per step). Their ratio is the
      group's qualification rate, the estimand of ``qualification_parity`` (the default
      notion, as in SELLF Sec. 5.2).
    * ``"group"``, ``"label"`` (1 = passes), ``"decision"`` (action taken),
      ``"label_observed"`` (1 iff accepted), all python ``int``.

    ## Version History

    * v0: initial version.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    #: Group 0 = SELLF's "Black/brown" (ENEM race codes 2 and 3), group 1 = "white"
    #: (code 1); "_" instead of "/" keeps the names usable as metric keys and paths.
    GROUP_NAMES: ClassVar[tuple[str, ...]] = SCHOOL_GROUP_NAMES
    DEFAULT_NOTION: ClassVar[str] = "qualification_parity"
    DESCRIPTION: ClassVar[str] = (
        "SELLF school admission (ENEM stand-in): pool of 4000 applicants, 38 categorical "
        "features (126 one-hot), logistic pass model, acceptance gain +0.5, ageing; cost 0.5"
    )
    #: One decision per step with selective labels: the notions and the selective block.
    METRIC_BLOCKS: ClassVar[tuple[MetricBlock, ...]] = (NotionMetrics(), SelectiveLabelMetrics())

    _UNIFORM_WIDTH: ClassVar[int] = 2  # pool index, label

    DECLARED_SETTINGS: ClassVar[tuple] = (
        amount("cost", "cost of an accepted applicant who fails", zero=True),
        integer("n_applicants", "applicants in the pool", 1),
        amount("starting_resource", "the school's resource at reset"),
        max_steps(),
        number("gain", "pass-probability gain of an accepted applicant", 0, 1),
        probabilities(
            "group_probs",
            "share of each group in the pool",
            length=2,
            none=True,
            none_means="the data's",
        ),
        integer(
            "standin_seed",
            "seed of the synthetic stand-in population",
            0,
            none=True,
            none_means="the committed stand-in",
        ),
        Setting(
            "params",
            "custom",
            "the population model (load_enem / make_standin_params)",
            predicate=lambda v: isinstance(v, SchoolAdmissionParams),
            valid="a SchoolAdmissionParams",
            none=True,
            none_means="the stand-in of standin_seed",
            python_only=True,
        ),
        bool_setting("obs_group", "the group is observed"),
    )
    DECLARED_RULES: ClassVar[tuple] = (
        Rule(
            "one_population",
            ("standin_seed", "params"),
            "standin_seed or params, not both",
            lambda v: (
                None
                if v["standin_seed"] is None or v["params"] is None
                else (
                    f"standin_seed: {v['standin_seed']!r} is invalid together with params; "
                    "valid: null when params is given"
                )
            ),
            {"standin_seed": 1, "params": "PARAMS"},
        ),
    )

    def __init__(
        self,
        cost: float = 0.5,
        n_applicants: int = 4000,
        starting_resource: float = 1000.0,
        max_steps: int = 2048,
        gain: float = 0.5,
        group_probs: Any = None,
        standin_seed: int | None = None,
        params: SchoolAdmissionParams | None = None,
        obs_group: bool = True,
    ) -> None:
        self.cost = as_positive("cost", cost, allow_zero=True)
        self.n_applicants = as_count("n_applicants", n_applicants)
        self.starting_resource = as_positive("starting_resource", starting_resource)
        self.max_steps = as_count("max_steps", max_steps)
        self.gain = as_positive("gain", gain, allow_zero=True)
        if self.gain > 1.0:
            raise ValueError(f"gain={_fmt(gain)}: expected a number in [0, 1]")
        self.obs_group = as_flag("obs_group", obs_group)
        if standin_seed is not None:
            standin_seed = as_count("standin_seed", standin_seed, minimum=0)
            if params is not None:
                raise ValueError(
                    f"standin_seed={standin_seed!r}: give either standin_seed or params, not both"
                )
        params = standin_params(standin_seed) if params is None else _check_params(params)
        gp = params.group_probs if group_probs is None else group_probs
        gp = as_distributions("group_probs", gp, (2,))
        if params.rows is not None:
            present = np.bincount(np.asarray(params.row_groups, dtype=np.int64), minlength=2)
            for g in range(2):
                if gp[g] > 0 and present[g] == 0:
                    raise ValueError(
                        f"group_probs={_fmt(gp)}: group {g} ({self.GROUP_NAMES[g]}) has no "
                        "data rows, so its probability must be 0"
                    )

        self.params = params
        self.standin_seed = standin_seed
        self.group_probs = (float(gp[0]), float(gp[1]))
        self._group_cum = np.cumsum(gp)
        cards = params.cardinalities
        self.n_features = len(cards)
        self.n_dims = params.n_dims
        self._offsets = params.offsets
        self._coefficients = np.asarray(params.coefficients, dtype=np.float64)
        age = params.age_feature
        if age is None:
            self._age_offset = 0
            self._age_coef = [0.0]
        else:
            self._age_offset = int(self._offsets[age])
            self._age_coef = self._coefficients[
                self._age_offset : self._age_offset + cards[age]
            ].tolist()
        self._top_age = len(self._age_coef) - 1
        # Logit of every feature but age (the age term is added from _age_coef).
        self._non_age = [k for k in range(self.n_features) if k != age]
        if params.rows is not None:
            rows = np.asarray(params.rows, dtype=np.int64)
            row_groups = np.asarray(params.row_groups, dtype=np.int64)
            self._group_rows = [rows[row_groups == g] for g in range(2)]
        else:
            self._group_rows = None

        self.gain_index = self.n_dims
        self.group_index = self.n_dims + 1 if self.obs_group else -1
        size = self.n_dims + 1 + (2 if self.obs_group else 0)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(size,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)

        # Episode state (set in reset()); the pool bookkeeping lives in PoolEnv.
        self._init_pool(2, self.n_applicants)
        self._pool_age: list[int] = []
        self._pool_gain: list[int] = []
        self._pool_base: list[float] = []
        self._pool_alpha: list[float] = []
        self._pool_cats = np.zeros((0, self.n_features), dtype=np.int64)
        self._pool_obs = np.zeros((0, size), dtype=np.float32)
        self._resource = self.starting_resource

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_enem_csv(
        cls,
        path: Any,
        *,
        label_column: str,
        group_column: str,
        age_column: str | None = None,
        feature_columns: Sequence[str] | None = None,
        positive_threshold: float | None = None,
        group_map: Mapping[Any, int] | None = None,
        min_frequency: float = 0.0,
        l2: float = 1.0,
        fit_iterations: int = 100,
        sep: str = ",",
        encoding: str | None = None,
        **env_kwargs: Any,
    ) -> SchoolAdmissionEnv:
        """Builds the environment from ENEM microdata (or any CSV) via :func:`load_enem`.

        Args:
            path: CSV path or a ``pandas.DataFrame``.
            label_column: label (0/1) or score column (with ``positive_threshold``).
            group_column: sensitive attribute, binary (or mapped by ``group_map``).
            age_column: ordinal age column (levels sorted, youngest first) or None.
            feature_columns: categorical feature columns; default: all other columns.
            positive_threshold: label = ``score > positive_threshold`` when given.
            group_map: raw group value -> group index (0 Black/brown, 1 white).
            min_frequency: levels rarer than this share are merged into one level.
            l2: L2 penalty of the logistic fit (sklearn's ``1 / C``).
            fit_iterations: maximum Newton iterations of the fit.
            sep: CSV separator (ENEM microdata: ``";"``).
            encoding: CSV encoding (ENEM microdata: ``"latin-1"`` or ``"cp860"``).
            **env_kwargs: further constructor arguments (``cost``, ``n_applicants``...).
        """
        params = load_enem(
            path,
            label_column=label_column,
            group_column=group_column,
            age_column=age_column,
            feature_columns=feature_columns,
            positive_threshold=positive_threshold,
            group_map=group_map,
            min_frequency=min_frequency,
            l2=l2,
            fit_iterations=fit_iterations,
            sep=sep,
            encoding=encoding,
        )
        return cls(params=params, **env_kwargs)

    # ------------------------------------------------------------------ public state

    @property
    def resource(self) -> float:
        """The decision-maker's current resource."""
        return self._resource

    @property
    def pool_categories(self) -> np.ndarray:
        """int64 ``[n_applicants, F]``: current level of every feature (a copy)."""
        cats = self._pool_cats.copy()
        if self.params.age_feature is not None and cats.shape[0]:
            cats[:, self.params.age_feature] = self._pool_age
        return cats

    @property
    def pool_ages(self) -> np.ndarray:
        """Current age level of every pool member (zeros without an age feature)."""
        return np.array(self._pool_age, dtype=np.int64)

    @property
    def pool_gains(self) -> np.ndarray:
        """Gain indicator (0/1) of every pool member (a copy)."""
        return np.array(self._pool_gain, dtype=np.int64)

    @property
    def pass_probabilities(self) -> np.ndarray:
        """Current pass probability of every pool member, as maintained by the env."""
        return np.array(self._pool_p, dtype=np.float64)

    @property
    def pool_observations(self) -> np.ndarray:
        """float32 ``[n_applicants, n]``: the observation of every pool member (a copy)."""
        return self._pool_obs.copy()

    @property
    def applicant(self) -> tuple[int, int, float]:
        """``(pool index, group, pass probability)`` of the individual shown last."""
        i = self._index
        return i, self._group, (self._pool_p[i] if i >= 0 else math.nan)

    # ------------------------------------------------------------------ dynamics

    def _fill_pool(self, rng: np.random.Generator) -> None:
        """Draws a fresh pool (group, then features or a data row); resets the resource."""
        n, n_features = self.n_applicants, self.n_features
        groups = np.searchsorted(self._group_cum, rng.random(n) * self._group_cum[-1], side="right")
        groups = np.minimum(groups, 1)
        if self._group_rows is None:
            cats = _sample_standin(self.params.category_probs, groups, rng.random((n, n_features)))
        else:
            cats = np.empty((n, n_features), dtype=np.int64)
            u_rows = rng.random(n)
            for g in range(2):
                members = np.flatnonzero(groups == g)
                if members.size:
                    table = self._group_rows[g]
                    picks = np.minimum(
                        (u_rows[members] * table.shape[0]).astype(np.int64), table.shape[0] - 1
                    )
                    cats[members] = table[picks]
        cols = cats + self._offsets[None, :]
        coefs = self._coefficients
        base = (
            coefs[cols[:, self._non_age]].sum(axis=1)
            + self.params.group_coefficient * groups
            + self.params.intercept
        )
        age_feature = self.params.age_feature
        ages = cats[:, age_feature] if age_feature is not None else np.zeros(n, dtype=np.int64)
        p = _sigmoid(base + np.asarray(self._age_coef)[ages])
        obs = np.zeros((n, self.observation_space.shape[0]), dtype=np.float32)
        rows = np.arange(n)
        obs[rows[:, None], cols] = 1.0
        if self.obs_group:
            obs[rows, self.group_index + groups] = 1.0

        self._pool_cats = cats
        self._pool_obs = obs
        self._pool_group = groups.tolist()
        self._pool_age = ages.tolist()
        self._pool_gain = [0] * n
        self._pool_base = base.tolist()
        self._pool_alpha = p.tolist()
        self._pool_p = list(self._pool_alpha)
        self._reset_population(groups, p)
        self._resource = self.starting_resource

    def _decide(self, a: int) -> tuple[float, bool]:
        """Sets the decided individual's gain indicator (accepted or passed) and ages it."""
        i = self._index
        y = self._label
        if a:
            reward = y - self.cost
            self._resource += reward
        else:
            reward = 0.0

        age = self._pool_age[i]
        gained = (a or y) and not self._pool_gain[i]
        aged = age < self._top_age
        if gained or aged:
            row = self._pool_obs[i]
            if gained:
                self._pool_gain[i] = 1
                row[self.gain_index] = 1.0
            if aged:
                row[self._age_offset + age] = 0.0
                age += 1
                row[self._age_offset + age] = 1.0
                self._pool_age[i] = age
                alpha = self._pool_alpha[i] = _sigmoid1(self._pool_base[i] + self._age_coef[age])
            else:
                alpha = self._pool_alpha[i]
            if self._pool_gain[i]:
                p = alpha + self.gain
                if p > 1.0:
                    p = 1.0
            else:
                p = alpha
            # PoolEnv._set_probability, inlined (most steps change the probability).
            g = self._group
            qm = self._qualified_mass[g] = self._qualified_mass[g] + p - self._pool_p[i]
            self._pool_p[i] = p
            self._pop_rows[1, g] = qm
        return reward, self._resource <= 0.0
