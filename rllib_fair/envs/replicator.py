"""``fair/Replicator-v0`` and ``fair/ReplicatorAdult-v0``: a population under replicator dynamics.

Yin, Raab, Liu, Liu (NeurIPS 2023), "Long-Term Fairness with Unknown Dynamics", Sec. 4: a
binary classification task on two groups whose qualification rates evolve by replicator
dynamics (evolutionary game theory, Raab & Liu 2021) in response to the deployed
per-group thresholds. The paper's Appendix A.1 (the replicator model) and A.2 (the Adult
fit) and its ``fairgym`` package are not available; the model here is our reconstruction
(docs/methods/yin2023.md, "The population: replicator dynamics"), and the docstring of
:class:`ReplicatorEnv` lists how it differs from the supplementary code of the paper
(``replicator_gym`` / ``DRL`` ``EnvWrapper``).
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rllib_fair.envs.base import (
    FairEnvMixin,
    _fmt,
    as_count,
    as_distributions,
    as_flag,
    as_float_array,
    as_positive,
    as_probabilities,
    check_magnitude,
)
from rllib_fair.envs.declared import amount, max_steps
from rllib_fair.envs.replicator_metrics import ReplicatorMetrics
from rllib_fair.fairness.blocks import MetricBlock, NotionMetrics
from rllib_fair.fairness.replicator import (
    DISPARITIES,
    LOSS_WEIGHTS,
    LOSSES,
    classification_loss,
    dp_disparity,
    eo_disparity,
    eop_disparity,
    group_losses,
    qr_disparity,
    qr_loss,
)
from rllib_fair.settings import Rule, Setting, bool_setting, choice, integer, number, probabilities

ADULT_TABLE_PATH = Path(__file__).resolve().parent / "data" / "adult_replicator.json"

#: Agent utilities ``U[y][y_hat]`` (rows y = 0, 1; columns y_hat = 0, 1): ``u0 + b y_hat - c y``
#: with ``u0 = 1``, ``b = 1``, ``c = 0.3`` (our reconstruction: qualification grows iff
#: ``TPR - FPR > c / b``; accept-all and reject-all shrink it).
DEFAULT_UTILITIES: tuple[tuple[float, float], ...] = ((1.0, 2.0), (0.7, 1.7))
#: Named utility matrices accepted by ``utilities``.
UTILITY_PRESETS: dict[str, tuple[tuple[float, float], ...]] = {
    "default": DEFAULT_UTILITIES,
    "accept_rewards_qualified": ((1.0, 1.0), (1.0, 2.0)),
}
FEATURE_MODELS: tuple[str, ...] = ("gaussian", "adult")
OBSERVATION_MODES: tuple[str, ...] = ("qualification", "distribution")
REWARD_MODES: tuple[str, ...] = ("reward", "lagrangian", "relaxed")
#: Objectives of the myopic baselines (paper Eq. 7a-d).
OBJECTIVES: tuple[str, ...] = ("myopic", "myopic_fair", "maxmin", "maxmin_fair")
#: Feature bins of the ``distribution`` observation (the reference's 32).
OBS_BINS = 32
#: Scale of the ``P(X = j | G = k)`` block of the ``distribution`` observation (reference).
OBS_MASS_SCALE = 10.0
#: Means of X | Y = 0 and X | Y = 1 of the synthetic model, ``X ~ N(Y, 1)`` with Y = -1 / +1.
GAUSSIAN_MEANS: tuple[float, float] = (-1.0, 1.0)
DEFAULT_THRESHOLD_RANGE: tuple[float, float] = (-4.0, 4.0)
MAX_BINS = 1_000_000
#: Largest magnitude of a threshold-range end (feature units of the N(+-1, 1) model).
MAX_THRESHOLD = 1e3

_SQRT2 = math.sqrt(2.0)
_erfc = np.frompyfunc(math.erfc, 1, 1)


@functools.lru_cache(maxsize=1)
def load_adult_table() -> dict[str, Any]:
    """The committed Adult table (``envs/data/adult_replicator.json``; see its provenance)."""
    with ADULT_TABLE_PATH.open() as fh:
        return json.load(fh)


def gaussian_bin_table(lo: float, hi: float, bins: int, mean: float) -> np.ndarray:
    """Mass of ``N(mean, 1)`` in ``bins`` equal-width bins of ``[lo, hi]``, tails folded in."""
    edges = np.linspace(lo, hi, bins + 1)[1:-1]
    # P(X < e) = erfc(-(e - mean) / sqrt 2) / 2, accurate in both tails.
    cdf = np.concatenate([[0.0], 0.5 * _erfc(-(edges - mean) / _SQRT2).astype(float), [1.0]])
    return np.diff(cdf)


def replicator_update(q: Any, tpr: Any, fpr: Any, utilities: Any, eta: float = 1.0) -> Any:
    """One replicator step of the qualification rates (our reconstruction of App. A.1).

    Fitness of the two strategies within a group (expected utility under the classifier):
    ``W_1 = U[1][1] TPR + U[1][0] (1 - TPR)``, ``W_0 = U[0][1] FPR + U[0][0] (1 - FPR)``;
    discrete replicator equation ``q_rep = q W_1 / (q W_1 + (1 - q) W_0)``; then
    ``q' = q + eta (q_rep - q)``. Broadcasts over any shapes of ``q``, ``tpr``, ``fpr``.
    """
    u = np.asarray(utilities, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    tpr = np.asarray(tpr, dtype=np.float64)
    fpr = np.asarray(fpr, dtype=np.float64)
    w1 = u[1, 1] * tpr + u[1, 0] * (1.0 - tpr)
    w0 = u[0, 1] * fpr + u[0, 0] * (1.0 - fpr)
    fit1 = q * w1
    q_rep = fit1 / (fit1 + (1.0 - q) * w0)
    return np.clip(q + eta * (q_rep - q), 0.0, 1.0)[()]


def _choice(name: str, value: Any, valid: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in valid:
        raise ValueError(f"{name}={value!r}: expected one of {list(valid)}")
    return value


def _threshold_problem(v) -> str | None:
    rng = v["threshold_range"]
    if rng is None:
        return None
    if not rng[0] < rng[1]:
        return f"threshold_range: {list(rng)!r} is invalid; valid: (lo, hi) with lo < hi"
    if v["feature_model"] == "adult" and (rng[0] != 0 or rng[1] != 1):
        return (
            f"threshold_range: {list(rng)!r} is invalid with feature_model 'adult' (it "
            "thresholds a score in [0, 1]); valid: null or [0, 1]"
        )
    return None


class ReplicatorEnv(FairEnvMixin, gym.Env):
    """Two groups whose qualification rates follow replicator dynamics under group thresholds.

    ## Description

    A population of two groups ``k`` with fixed shares ``pi_k`` (0.5 / 0.5) and
    qualification rates ``q_k = P(Y = 1 | G = k)``, the dynamic state (Yin et al. 2023,
    Sec. 4). Each individual has a scalar feature ``X`` whose class-conditional
    distributions ``P(X | Y = y, G = k)`` are fixed: ``X | Y ~ N(+-1, 1)`` in both groups
    (``feature_model="gaussian"``, the paper's synthetic task) or the 32-bin Adult score
    table (``feature_model="adult"``, :class:`ReplicatorAdultEnv`). Every step the agent
    deploys one threshold per group; each group's true and false positive rates follow,
    and the qualification rates move by the discrete replicator equation
    (:func:`replicator_update`; reconstructed, the paper's App. A.1 is not available):
    agents imitate the more successful of "qualified" and "unqualified", whose fitness is
    the expected utility ``U[y][y_hat]`` under the classifier. With the default utilities
    ``[[1, 2], [0.7, 1.7]]`` qualification grows in a group iff ``TPR - FPR > 0.3``, so
    accepting (or rejecting) everyone drives it to 0 while a discriminating threshold
    drives it to 1. The environment is deterministic given the actions (the randomness is
    the initial state), unless ``population_size`` adds binomial sampling noise.

    ## Action Space

    ``Box(0, 1, (2,), float32)``: a threshold ``a_k`` per group (clipped to ``[0, 1]``).
    Gaussian model: ``tau_k = lo + a_k (hi - lo)`` on ``threshold_range = (-4, 4)``, exact
    rates ``TPR = 1 - Phi(tau - 1)``, ``FPR = 1 - Phi(tau + 1)`` (``bins=None``) or the
    binned rule below (``bins=B``: equal-width bins on the threshold range, tails folded
    into the end bins). Adult model: ``tau_k = a_k`` on the score in ``[0, 1]``, 32 bins.
    Binned rule: bin ``j`` is accepted in the fraction ``clip(j + 1 - a B, 0, 1)`` (mass
    uniform within a bin), so the rates are continuous and piecewise linear in ``a``.
    ``a = 0`` accepts (almost) everyone, ``a = 1`` rejects (almost) everyone. With the
    default utilities, qualification grows only for ``|tau| < 1.507``, i.e. ``a`` in
    ``(0.312, 0.688)`` on ``[-4, 4]``; a narrower ``threshold_range`` (e.g. ``(-3, 3)``)
    widens that band for coarse action grids such as L-UCBFair's regions.

    ## Observation Space

    * ``observation_mode="qualification"`` (default): ``[q_0, q_1]``, ``Box(0, 1, (2,))``.
    * ``"distribution"`` (the reference's 130-d layout for R-TD3): per group, group-major,
      ``[pi_k, 10 P(X = j | G = k) for j < 32, P(Y = 1 | X = j, G = k) for j < 32]``; the
      ``10 P(X)`` block is bounded by 10, the rest by 1. The Gaussian model uses a 32-bin
      table of its features on the threshold range for this view (the dynamics keep their
      own mode). :meth:`q_from_observation` recovers ``q`` from either layout.
    * ``include_time=True`` appends ``j / H`` after ``j`` steps (0 at reset), so
      ``round(obs[-1] * H)`` is the 0-based index of the upcoming decision.

    ## Rewards

    Per step, at the pre-update state: acceptance ``AR_k = q_k TPR_k + (1 - q_k) FPR_k``,
    ``tp_k = q_k TPR_k``, ``tn_k = (1 - q_k)(1 - FPR_k)``; the loss ``L`` (``loss``:
    ``"tp"`` ``1 - sum pi_k tp_k`` (default), ``"tp_tn"`` (weight 0.7 on tn),
    ``"zero_one"`` (``1 -`` accuracy), ``"qr"`` ``1 - sum pi_k q'_k`` (post-update), or
    custom weights ``(w_tp, w_tn)`` in ``[0, 1]``; Eq. 8) and the disparity ``D``
    (``disparity``: ``"dp"`` squared AR gap (default), ``"eop"`` TPR gap, ``"eo"`` half
    TPR + half TNR gap, ``"qr"`` post-update ``q'`` gap). ``reward_mode``:

    * ``"reward"`` (default): ``r = 1 - L`` (L-UCBFair reads ``g = 1 - D`` from info);
    * ``"lagrangian"``: ``1 - ((1 - lam) L + lam D)``, ``lam = lagrange_lambda``;
    * ``"relaxed"`` (R-TD3, Eq. 6): ``1 - ((1 - lam_t) L + lam_t psi(D))`` with
      ``lam_t = min(1, relaxation_lambda_final * t / H)`` on the ``t``-th step
      (``t = 1..H``) and ``psi(D) = 1 - (1 - D)^kappa``, ``kappa = relaxation_sharpness``
      (20 as the reference; 1 gives Eq. 6 exactly).

    ## Episode End

    * Termination: after ``max_steps = H`` steps (100 synthetic, 150 Adult): the problem
      is finite-horizon and the relaxed reward depends on ``t``.
    * Truncation: instead of termination at the horizon with ``terminate_at_horizon=False``.

    ``reset`` draws ``q ~ U[0.01, 0.99]^2`` from ``np_random``; ``options={"q": [q0, q1],
    "group_shares": [pi0, pi1]}`` sets them (aliases ``pr_q`` / ``q_g`` and ``pr_G`` of the
    reference).

    ## Arguments

    | argument | default | meaning |
    |---|---|---|
    | ``feature_model`` | "gaussian" | ``"gaussian"`` (N(+-1, 1)) or ``"adult"`` (32-bin table) |
    | ``bins`` | None | Gaussian: None = exact rates, ``B`` = binned; Adult: None or 32 |
    | ``threshold_range`` | (-4, 4) | Gaussian feature range of ``a in [0, 1]``; Adult (0, 1) |
    | ``utilities`` | "default" | ``U[y][y_hat]`` (2x2, > 0) or a preset of ``UTILITY_PRESETS`` |
    | ``eta_rep`` | 1.0 | replicator step size in ``(0, 1]`` |
    | ``population_size`` | None | None = deterministic; ``N``: ``q' ~ Binomial(N, q') / N`` |
    | ``group_shares`` | (0.5, 0.5) | default ``pi`` of every episode |
    | ``loss`` | "tp" | ``"tp"``, ``"tp_tn"``, ``"zero_one"``, ``"qr"`` or ``(w_tp, w_tn)`` |
    | ``disparity`` | "dp" | ``"dp"``, ``"eop"``, ``"eo"``, ``"qr"`` |
    | ``reward_mode`` | "reward" | ``"reward"``, ``"lagrangian"``, ``"relaxed"`` |
    | ``lagrange_lambda`` | 0.5 | ``lam`` of ``"lagrangian"``, in ``[0, 1]`` |
    | ``relaxation_lambda_final`` | 1.0 | ``lam_H`` of ``"relaxed"`` (>= 0) |
    | ``relaxation_sharpness`` | 20.0 | ``kappa`` of ``"relaxed"`` (> 0) |
    | ``max_steps`` | 100 | horizon ``H`` |
    | ``terminate_at_horizon`` | True | ``False``: truncate at ``H`` instead |
    | ``observation_mode`` | "qualification" | ``"qualification"`` (2) or ``"distribution"`` (130) |
    | ``include_time`` | False | append ``j / H`` |

    ## Fairness signals

    ``GROUP_NAMES = ("group_0", "group_1")`` (``("Male", "Female")`` for Adult). ``info``
    of ``step``:

    * ``"fairness"``: float64 ``[NUM_FIELDS, 2]`` expected masses of the step:
      ``DECIDED = POPULATION = pi_k``, ``QUALIFIED = pi_k q_k``, ``SELECTED = pi_k AR_k``,
      ``SELECTED_QUALIFIED = pi_k q_k TPR_k``, ``QUALIFIED_MASS = pi_k q'_k``, ``ALLOCATED
      = NEEDED = 0``; so ``demographic_parity`` gives ``AR_k``, ``equal_opportunity``
      ``TPR_k``, ``equalized_odds`` ``(TPR_k, FPR_k)`` and ``qualification_parity`` ``q'_k``.
      (The package's ledger gap aggregates rates over steps; the paper's per-step squared
      disparity is ``info["disparity"]``.)
    * ``"group"``, ``"label"``, ``"decision"``: -1; ``"label_observed"``: 0 (population level).
    * ``"q"`` (pre-update), ``"q_next"``, ``"accept_rate"``, ``"tpr"``, ``"fpr"``, ``"tp"``,
      ``"tn"``: float64 arrays of shape (2,); ``"loss"``, ``"disparity"`` (the configured
      one), ``"r" = 1 - L``, ``"g" = 1 - D``, ``"lambda_t"`` (0 for ``"reward"``, ``lam``
      for ``"lagrangian"``, ``lam_t`` for ``"relaxed"``): floats; ``"disparities"``: dict
      of all four; ``"t"``: the step's 1-based index.

    ``reset`` gives the base keys with zero decision rows, ``"q"`` and ``"t" = 0``.

    ## Differences from the reference

    The supplementary code's environments (``fairgym``) are not public, so: the replicator
    update, its utilities and ``eta_rep`` are reconstructed (docs/methods/yin2023.md) and the
    class-conditional feature distributions are fixed (mixing them by the current ``q``
    re-weights the data; the paper may have re-fitted the Adult regression every step);
    the within-bin threshold rule is soft (piecewise linear); the Adult group attribute
    (sex) and feature set are choices (``scripts/derive_adult_replicator_table.py``); the
    ``distribution`` observation declares correct bounds (the reference's ``Box(0, 1)``
    was wrong for the ``10 P(X)`` block); the time feature is optional; gymnasium's
    ``terminated`` / ``truncated`` replace ``done``; randomness only from
    ``reset(seed=...)``.

    ## Version History

    * v0: initial version.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    GROUP_NAMES: ClassVar[tuple[str, ...]] = ("group_0", "group_1")
    DEFAULT_NOTION: ClassVar[str] = "demographic_parity"
    #: ``reward_mode`` values (R-TD3's config checks for ``"relaxed"``).
    SUPPORTED_REWARD_MODES: ClassVar[tuple[str, ...]] = REWARD_MODES
    DESCRIPTION: ClassVar[str] = (
        "replicator dynamics of two groups' qualification rates under per-group thresholds, "
        "X | Y ~ N(+-1, 1) (Yin et al. 2023)"
    )

    DECLARED_SETTINGS: ClassVar[tuple] = (
        choice("feature_model", FEATURE_MODELS, "X | Y, G: gaussian or the Adult table"),
        integer(
            "bins",
            "bins of the gaussian feature table",
            1,
            MAX_BINS,
            none=True,
            none_means="exact gaussian",
        ),
        Setting(
            "threshold_range",
            "list",
            "(lo, hi) of the thresholds the actions map to",
            item=number("", "", -MAX_THRESHOLD, MAX_THRESHOLD),
            length=2,
            none=True,
            none_means="(-4, 4), or (0, 1) for adult",
        ),
        Setting(
            "utilities",
            "union",
            "U[y][y_hat], the fitness of each outcome (a preset name or a 2 x 2 table)",
            options=(
                choice("", tuple(UTILITY_PRESETS), ""),
                Setting(
                    "",
                    "list",
                    item=Setting("", "list", item=amount("", ""), length=2),
                    length=2,
                ),
            ),
        ),
        number("eta_rep", "step size of the replicator update", 0, 1, low_open=True),
        integer(
            "population_size",
            "individuals per group of a sampled population",
            1,
            none=True,
            none_means="the deterministic dynamics",
        ),
        probabilities("group_shares", "fixed share of each group", length=2),
        Setting(
            "loss",
            "union",
            "the per-step loss L (a preset name or weights (w_tp, w_tn))",
            options=(
                choice("", LOSSES, ""),
                Setting("", "list", item=number("", "", 0, 1), length=2),
            ),
        ),
        choice("disparity", DISPARITIES, "the per-step disparity D"),
        choice("reward_mode", REWARD_MODES, "reward: 1 - L; lagrangian; relaxed (R-TD3)"),
        number("lagrange_lambda", "lambda of the lagrangian reward", 0, 1),
        amount("relaxation_lambda_final", "lambda of the relaxed reward at the horizon", zero=True),
        amount("relaxation_sharpness", "kappa of the relaxed reward"),
        max_steps(),
        bool_setting("terminate_at_horizon", "the last step reports terminated (true)"),
        choice(
            "observation_mode",
            OBSERVATION_MODES,
            "qualification rates, or the binned feature distributions too",
        ),
        bool_setting("include_time", "the normalised step index is observed"),
    )
    DECLARED_RULES: ClassVar[tuple] = (
        Rule(
            "adult_fixed_bins",
            ("bins", "feature_model"),
            f"the adult model's table has {OBS_BINS} bins (bins null or {OBS_BINS})",
            lambda v: (
                None
                if v["feature_model"] != "adult" or v["bins"] in (None, OBS_BINS)
                else (
                    f"bins: {v['bins']!r} is invalid with feature_model 'adult' (a fixed "
                    f"{OBS_BINS}-bin table); valid: null or {OBS_BINS}"
                )
            ),
            {"feature_model": "adult", "bins": 10},
        ),
        Rule(
            "threshold_range_ordered",
            ("threshold_range", "feature_model"),
            "threshold_range is (lo, hi) with lo < hi; (0, 1) for adult",
            lambda v: _threshold_problem(v),
            {"threshold_range": [1.0, 0.0]},
        ),
    )
    REPORTED_KEYS: ClassVar[tuple[str, ...]] = ("env_runners/replicator/*",)
    #: The notions and the population block behind ``env_runners/replicator/*``.
    METRIC_BLOCKS: ClassVar[tuple[MetricBlock, ...]] = (ReplicatorMetrics(), NotionMetrics())

    def __init__(
        self,
        feature_model: str = "gaussian",
        bins: int | None = None,
        threshold_range: Any = None,
        utilities: Any = "default",
        eta_rep: float = 1.0,
        population_size: int | None = None,
        group_shares: Any = (0.5, 0.5),
        loss: Any = "tp",
        disparity: str = "dp",
        reward_mode: str = "reward",
        lagrange_lambda: float = 0.5,
        relaxation_lambda_final: float = 1.0,
        relaxation_sharpness: float = 20.0,
        max_steps: int = 100,
        terminate_at_horizon: bool = True,
        observation_mode: str = "qualification",
        include_time: bool = False,
    ) -> None:
        self.feature_model = _choice("feature_model", feature_model, FEATURE_MODELS)
        adult = feature_model == "adult"
        if bins is not None:
            bins = as_count("bins", bins)
            if bins > MAX_BINS:
                raise ValueError(f"bins={bins}: expected None or an integer in [1, {MAX_BINS}]")
            if adult and bins != OBS_BINS:
                raise ValueError(
                    f"bins={bins}: the adult feature model has a fixed {OBS_BINS}-bin table; "
                    f"expected None or {OBS_BINS}"
                )
        self.bins = bins
        if threshold_range is None:
            threshold_range = (0.0, 1.0) if adult else DEFAULT_THRESHOLD_RANGE
        rng_arr = as_float_array("threshold_range", threshold_range, (2,))
        check_magnitude("threshold_range", threshold_range, rng_arr, MAX_THRESHOLD)
        if not rng_arr[0] < rng_arr[1]:
            raise ValueError(
                f"threshold_range={_fmt(threshold_range)}: expected (lo, hi) with lo < hi"
            )
        if adult and (rng_arr[0] != 0.0 or rng_arr[1] != 1.0):
            raise ValueError(
                f"threshold_range={_fmt(threshold_range)}: the adult model thresholds the "
                "score in [0, 1]; expected None or (0, 1)"
            )
        self.threshold_range = (float(rng_arr[0]), float(rng_arr[1]))

        if isinstance(utilities, str):
            if utilities not in UTILITY_PRESETS:
                raise ValueError(
                    f"utilities={utilities!r}: expected a 2x2 matrix U[y][y_hat] or one of "
                    f"{list(UTILITY_PRESETS)}"
                )
            utilities = UTILITY_PRESETS[utilities]
        u = as_float_array("utilities", utilities, (2, 2))
        check_magnitude("utilities", utilities, u)
        if np.any(u <= 0.0):
            raise ValueError(
                f"utilities={_fmt(utilities)}: every entry must be > 0 (fitness must be positive)"
            )
        self.utilities = u
        self.utilities.flags.writeable = False
        self.eta_rep = as_positive("eta_rep", eta_rep, maximum=1.0)
        if population_size is not None:
            population_size = as_count("population_size", population_size)
        self.population_size = population_size
        self.group_shares = as_distributions("group_shares", group_shares, (2,))

        if isinstance(loss, str):
            self.loss = _choice("loss", loss, LOSSES)
            self.loss_weights = LOSS_WEIGHTS.get(loss, (0.0, 0.0))
        else:
            w = as_probabilities("loss", loss, (2,))
            self.loss = "custom"
            self.loss_weights = (float(w[0]), float(w[1]))
        self.disparity = _choice("disparity", disparity, DISPARITIES)
        self.reward_mode = _choice("reward_mode", reward_mode, REWARD_MODES)
        lam = as_positive("lagrange_lambda", lagrange_lambda, allow_zero=True, maximum=1.0)
        self.lagrange_lambda = lam
        self.relaxation_lambda_final = as_positive(
            "relaxation_lambda_final", relaxation_lambda_final, allow_zero=True
        )
        self.relaxation_sharpness = as_positive("relaxation_sharpness", relaxation_sharpness)
        self.max_steps = as_count("max_steps", max_steps)
        self.terminate_at_horizon = as_flag("terminate_at_horizon", terminate_at_horizon)
        self.observation_mode = _choice("observation_mode", observation_mode, OBSERVATION_MODES)
        self.include_time = as_flag("include_time", include_time)

        # Feature model tables: f[k, y, j] = P(X in bin j | Y = y, G = k).
        lo, hi = self.threshold_range
        if adult:
            table = load_adult_table()
            obs_f = np.asarray(table["class_conditionals"], dtype=np.float64)
            if tuple(table["group_names"]) != self.GROUP_NAMES:
                self.GROUP_NAMES = tuple(table["group_names"])  # type: ignore[misc]
        else:
            obs_f = np.stack([gaussian_bin_table(lo, hi, OBS_BINS, m) for m in GAUSSIAN_MEANS])
            obs_f = np.stack([obs_f, obs_f])
        self._obs_f = obs_f
        self._exact = not adult and bins is None
        if adult:
            f = obs_f
        elif bins is not None:
            f0 = np.stack([gaussian_bin_table(lo, hi, bins, m) for m in GAUSSIAN_MEANS])
            f = np.stack([f0, f0])
        else:
            f = None
        self.feature_table = f  # [2, 2, B] or None (exact Gaussian)
        if f is not None:
            self._n_bins = f.shape[-1]
            # suffix[k, y, j] = sum_{i >= j} f[k, y, i]; suffix[..., B] = 0.
            suffix = np.zeros(f.shape[:-1] + (f.shape[-1] + 1,))
            suffix[..., :-1] = np.cumsum(f[..., ::-1], axis=-1)[..., ::-1]
            self._suffix = suffix
            self._f_list = f.tolist()
            self._suffix_list = suffix.tolist()
        self._scale = hi - lo
        self._lo = lo
        self._u = u.tolist()
        w_tp, w_tn = self.loss_weights
        self._w_tp = w_tp
        self._w_tn = w_tn

        # Spaces.
        self.action_space = spaces.Box(0.0, 1.0, shape=(2,), dtype=np.float32)
        if observation_mode == "qualification":
            high = [1.0, 1.0]
        else:
            high = ([1.0] + [OBS_MASS_SCALE] * OBS_BINS + [1.0] * OBS_BINS) * 2
        if self.include_time:
            high = high + [1.0]
        high_arr = np.asarray(high, dtype=np.float32)
        self.observation_space = spaces.Box(
            np.zeros_like(high_arr), high_arr, shape=high_arr.shape, dtype=np.float32
        )

        self._q = [0.5, 0.5]
        self._shares = self.group_shares.tolist()
        self._t = -1  # -1: not reset yet

    # ------------------------------------------------------------------ public state

    @property
    def q(self) -> np.ndarray:
        """Current qualification rates ``(q_0, q_1)`` (a float64 copy)."""
        return np.array(self._q, dtype=np.float64)

    @property
    def shares(self) -> np.ndarray:
        """Group shares ``pi`` of the current episode (a float64 copy)."""
        return np.array(self._shares, dtype=np.float64)

    @property
    def elapsed_steps(self) -> int:
        """Steps taken since the last reset."""
        return max(self._t, 0)

    # ------------------------------------------------------------------ vectorised helpers

    def rates(self, actions: Any, q: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """True and false positive rates of thresholds ``actions`` in this feature model.

        Args:
            actions: ``[N, 2]`` thresholds (one per group) in ``[0, 1]`` (clipped), or ``[2]``.
            q: unused (the class-conditionals are fixed); accepted for a uniform API.

        Returns:
            ``(tpr, fpr)``, each float64 of the shape of ``actions``; the same numbers as
            :meth:`step`.
        """
        a = np.clip(np.asarray(actions, dtype=np.float64), 0.0, 1.0)
        if self._exact:
            tau = self._lo + a * self._scale
            mu0, mu1 = GAUSSIAN_MEANS
            tpr = 0.5 * _erfc((tau - mu1) / _SQRT2).astype(np.float64)
            fpr = 0.5 * _erfc((tau - mu0) / _SQRT2).astype(np.float64)
            return tpr, fpr
        n_bins = self._n_bins
        u = a * n_bins
        m = np.minimum(np.floor(u), n_bins - 1).astype(np.int64)
        c = m + 1 - u  # accepted fraction of the threshold's bin
        out = []
        for y in (1, 0):
            per_group = []
            for k in (0, 1):
                mk = m[..., k]
                per_group.append(
                    self._suffix[k, y][mk + 1] + c[..., k] * self.feature_table[k, y][mk]
                )
            out.append(np.stack(per_group, axis=-1))
        return out[0], out[1]

    def replicator_step(self, q: Any, tpr: Any, fpr: Any) -> Any:
        """The env's replicator update with injected rates (no noise; broadcasts)."""
        return replicator_update(q, tpr, fpr, self.utilities, self.eta_rep)

    def step_statistics(self, actions: Any, q: Any) -> dict[str, np.ndarray]:
        """Vectorised per-step statistics of ``actions`` ``[N, 2]`` at state ``q``.

        Returns:
            Dict of float64 arrays: ``tpr``, ``fpr``, ``accept_rate``, ``tp``, ``tn``,
            ``q_next`` (each ``[N, 2]``), ``group_loss`` ``[N, 2]`` (``L_k``), ``loss``
            ``[N]`` and ``disparity`` ``[N]`` (the configured ones).
        """
        q = np.asarray(q, dtype=np.float64)
        tpr, fpr = self.rates(actions, q)
        tp = q * tpr
        tn = (1.0 - q) * (1.0 - fpr)
        ar = tp + (1.0 - q) * fpr
        q_next = self.replicator_step(q, tpr, fpr)
        shares = np.asarray(self._shares)
        if self.loss == "qr":
            loss = qr_loss(q_next, shares)
            group_loss = 1.0 - q_next
        else:
            loss = classification_loss(tp, tn, shares, self._w_tp, self._w_tn)  # Eq. 8
            group_loss = group_losses(tp, tn, self._w_tp, self._w_tn)
        d = self.disparity
        if d == "dp":
            disp = dp_disparity(ar)
        elif d == "eop":
            disp = eop_disparity(tpr)
        elif d == "eo":
            disp = eo_disparity(tpr, 1.0 - fpr)
        else:
            disp = qr_disparity(q_next)
        return {
            "tpr": tpr,
            "fpr": fpr,
            "accept_rate": ar,
            "tp": tp,
            "tn": tn,
            "q_next": q_next,
            "group_loss": group_loss,
            "loss": np.asarray(loss, dtype=np.float64),
            "disparity": np.asarray(disp, dtype=np.float64),
        }

    def objective_values(
        self, actions: Any, q: Any, objective: str = "myopic", lam: float = 0.5
    ) -> np.ndarray:
        """Values of a myopic objective (paper Eq. 7a-d) for thresholds ``actions`` ``[N, 2]``.

        ``"myopic"``: ``L`` (7a); ``"myopic_fair"``: ``(1 - lam) L + lam D`` (7b);
        ``"maxmin"``: ``max_k L_k`` (7c); ``"maxmin_fair"``: ``(1 - lam) max_k L_k + lam D``
        (7d); with the env's configured loss and disparity at state ``q`` and the current
        group shares.

        Returns:
            float64 ``[N]`` (lower is better).
        """
        _choice("objective", objective, OBJECTIVES)
        stats = self.step_statistics(np.atleast_2d(np.asarray(actions, dtype=np.float64)), q)
        if objective in ("myopic", "myopic_fair"):
            base = stats["loss"]  # Eq. 7a
        else:
            base = stats["group_loss"].max(axis=-1)  # Eq. 7c
        if objective.endswith("_fair"):
            return (1.0 - lam) * base + lam * stats["disparity"]  # Eq. 7b / 7d
        return base

    def q_from_observation(self, obs: Any) -> np.ndarray:
        """The qualification rates ``(q_0, q_1)`` an observation of this env carries.

        ``distribution`` mode: ``q_k = sum_j P(X = j | G = k) P(Y = 1 | X = j, G = k)``.
        """
        obs = np.asarray(obs, dtype=np.float64)
        if self.observation_mode == "qualification":
            return obs[..., :2].copy()
        block = 1 + 2 * OBS_BINS
        qs = []
        for k in (0, 1):
            start = k * block
            px = obs[..., start + 1 : start + 1 + OBS_BINS] / OBS_MASS_SCALE
            post = obs[..., start + 1 + OBS_BINS : start + block]
            qs.append(np.sum(px * post, axis=-1))
        return np.stack(qs, axis=-1)

    # ------------------------------------------------------------------ gymnasium API

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Draws ``q ~ U[0.01, 0.99]^2`` (or takes ``options["q"]``) and sets the shares."""
        super().reset(seed=seed)
        options = dict(options or {})
        q_value = None
        for key in ("q", "pr_q", "q_g"):
            if key in options:
                q_value = as_probabilities(f"options[{key!r}]", options.pop(key), (2,))
        shares = self.group_shares
        for key in ("group_shares", "pr_G"):
            if key in options:
                shares = as_distributions(f"options[{key!r}]", options.pop(key), (2,))
        if options:
            raise ValueError(
                f"options={sorted(options)}: unknown keys, expected any of "
                "['q', 'pr_q', 'q_g', 'group_shares', 'pr_G']"
            )
        if q_value is None:
            q_value = self.np_random.uniform(0.01, 0.99, size=2)
        self._q = [float(q_value[0]), float(q_value[1])]
        self._shares = [float(shares[0]), float(shares[1])]
        self._t = 0
        pi0, pi1 = self._shares
        counts = np.zeros((8, 2))
        counts[4] = self._shares
        counts[5] = (pi0 * self._q[0], pi1 * self._q[1])
        info = {
            "fairness": counts,
            "group": -1,
            "label": -1,
            "decision": -1,
            "label_observed": 0,
            "q": np.array(self._q),
            "t": 0,
        }
        return self._observation(), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Deploys the thresholds, scores the step and moves ``q`` by the replicator update."""
        if self._t < 0:
            raise RuntimeError(f"{type(self).__name__}.step() called before reset()")
        self._check_episode_running()
        a0, a1 = self._thresholds(action)
        q0, q1 = self._q
        t0, f0 = self._rate(0, a0)
        t1, f1 = self._rate(1, a1)
        # Per-step statistics at the pre-update state (the distribution at decision time).
        tp0 = q0 * t0
        tp1 = q1 * t1
        tn0 = (1.0 - q0) * (1.0 - f0)
        tn1 = (1.0 - q1) * (1.0 - f1)
        ar0 = tp0 + (1.0 - q0) * f0
        ar1 = tp1 + (1.0 - q1) * f1
        # Replicator update (paper App. A.1, reconstructed): fitness of the
        # qualified / unqualified strategy is the expected agent utility U[y][y_hat].
        (u00, u01), (u10, u11) = self._u
        eta = self.eta_rep
        w1 = u11 * t0 + u10 * (1.0 - t0)
        w0 = u01 * f0 + u00 * (1.0 - f0)
        n0 = q0 + eta * (q0 * w1 / (q0 * w1 + (1.0 - q0) * w0) - q0)
        w1 = u11 * t1 + u10 * (1.0 - t1)
        w0 = u01 * f1 + u00 * (1.0 - f1)
        n1 = q1 + eta * (q1 * w1 / (q1 * w1 + (1.0 - q1) * w0) - q1)
        n0 = 0.0 if n0 < 0.0 else (1.0 if n0 > 1.0 else n0)
        n1 = 0.0 if n1 < 0.0 else (1.0 if n1 > 1.0 else n1)
        if self.population_size is not None:
            size = self.population_size
            n0, n1 = (self.np_random.binomial(size, [n0, n1]) / size).tolist()
        pi0, pi1 = self._shares
        # Loss (Eq. 8) and the four disparities (paper Sec. 2, reference forms).
        if self.loss == "qr":
            loss = 1.0 - (pi0 * n0 + pi1 * n1)
        else:
            w_tp, w_tn = self._w_tp, self._w_tn
            loss = 1.0 - (pi0 * (w_tp * tp0 + w_tn * tn0) + pi1 * (w_tp * tp1 + w_tn * tn1))
        d_dp = (ar0 - ar1) ** 2
        d_eop = (t0 - t1) ** 2
        d_eo = 0.5 * d_eop + 0.5 * (f0 - f1) ** 2  # TNR gap equals the FPR gap
        d_qr = (n0 - n1) ** 2
        disparities = {"dp": d_dp, "eop": d_eop, "eo": d_eo, "qr": d_qr}
        disp = disparities[self.disparity]
        g = 1.0 - disp
        g = 0.0 if g < 0.0 else g
        r = 1.0 - loss
        t = self._t = self._t + 1
        mode = self.reward_mode
        if mode == "reward":
            lam = 0.0
            reward = r
        elif mode == "lagrangian":
            lam = self.lagrange_lambda
            reward = 1.0 - ((1.0 - lam) * loss + lam * disp)
        else:
            # Eq. 6 with the reference's lambda_t = t / H (t = 1..H) and psi(D) sharpening.
            lam = self.relaxation_lambda_final * t / self.max_steps
            lam = 1.0 if lam > 1.0 else lam
            psi = 1.0 - (1.0 - disp) ** self.relaxation_sharpness
            reward = 1.0 - ((1.0 - lam) * loss + lam * psi)
        # One allocation: rows 0-7 the counts record, rows 8-14 views for the info keys.
        block = np.array(
            [
                [pi0, pi1],
                [pi0 * q0, pi1 * q1],
                [pi0 * ar0, pi1 * ar1],
                [pi0 * tp0, pi1 * tp1],
                [pi0, pi1],
                [pi0 * n0, pi1 * n1],
                [0.0, 0.0],
                [0.0, 0.0],
                [q0, q1],
                [n0, n1],
                [ar0, ar1],
                [t0, t1],
                [f0, f1],
                [tp0, tp1],
                [tn0, tn1],
            ]
        )
        info = {
            "fairness": block[:8],
            "group": -1,
            "label": -1,
            "decision": -1,
            "label_observed": 0,
            "q": block[8],
            "q_next": block[9],
            "accept_rate": block[10],
            "tpr": block[11],
            "fpr": block[12],
            "tp": block[13],
            "tn": block[14],
            "loss": loss,
            "disparity": disp,
            "disparities": disparities,
            "r": r,
            "g": g,
            "lambda_t": float(lam),
            "t": t,
        }
        self._q = [n0, n1]
        end = t >= self.max_steps
        self._episode_over = end
        if self.terminate_at_horizon:
            return self._observation(), float(reward), end, False, info
        return self._observation(), float(reward), False, end, info

    # ------------------------------------------------------------------ internals

    def _thresholds(self, action: Any) -> tuple[float, float]:
        """Two thresholds clipped to ``[0, 1]``; raises on a wrong shape or non-finite value."""
        if type(action) is np.ndarray and action.shape == (2,):
            a0, a1 = action.tolist()
        else:
            try:
                arr = np.asarray(action, dtype=np.float64)
            except (TypeError, ValueError):
                arr = None
            if arr is None or arr.shape != (2,):
                raise ValueError(
                    f"action={_fmt(action)}: expected 2 thresholds in [0, 1] (shape (2,))"
                )
            a0, a1 = arr.tolist()
        if not (math.isfinite(a0) and math.isfinite(a1)):
            raise ValueError(f"action={_fmt(action)}: expected 2 finite thresholds in [0, 1]")
        a0 = 0.0 if a0 < 0.0 else (1.0 if a0 > 1.0 else a0)
        a1 = 0.0 if a1 < 0.0 else (1.0 if a1 > 1.0 else a1)
        return a0, a1

    def _rate(self, k: int, a: float) -> tuple[float, float]:
        """``(TPR_k, FPR_k)`` of threshold ``a`` (exact Gaussian, or the soft binned rule)."""
        if self._exact:
            tau = self._lo + a * self._scale
            # TPR = 1 - Phi(tau - 1), FPR = 1 - Phi(tau + 1); 1 - Phi(x) = erfc(x / sqrt 2) / 2.
            return 0.5 * math.erfc((tau - 1.0) / _SQRT2), 0.5 * math.erfc((tau + 1.0) / _SQRT2)
        n_bins = self._n_bins
        u = a * n_bins
        m = int(u)
        if m >= n_bins:
            m = n_bins - 1
        c = m + 1 - u  # accepted fraction of bin m: clip(j + 1 - a B, 0, 1)
        s = self._suffix_list[k]
        f = self._f_list[k]
        return s[1][m + 1] + c * f[1][m], s[0][m + 1] + c * f[0][m]

    def _observation(self) -> np.ndarray:
        q0, q1 = self._q
        if self.observation_mode == "qualification":
            vals = [q0, q1]
        else:
            q = np.array((q0, q1))[:, None]
            f = self._obs_f
            joint1 = q * f[:, 1]
            px = joint1 + (1.0 - q) * f[:, 0]
            post = np.divide(joint1, px, out=np.zeros_like(px), where=px > 0.0)
            pi = np.array(self._shares)[:, None]
            vals = np.concatenate([pi, OBS_MASS_SCALE * px, post], axis=1).reshape(-1)
            vals = np.clip(vals, 0.0, OBS_MASS_SCALE).tolist()
        if self.include_time:
            vals = vals + [self._t / self.max_steps]
        return np.array(vals, dtype=np.float32)


class ReplicatorAdultEnv(ReplicatorEnv):
    """The replicator population with class-conditional scores fitted to UCI Adult.

    Same dynamics, spaces and signals as :class:`ReplicatorEnv` (see its docstring for the
    description and the argument table); only the defaults differ: ``feature_model =
    "adult"`` (the 32-bin logistic-regression score table ``envs/data/adult_replicator.json``,
    group 0 = Male, group 1 = Female, empirical ``q = (0.3138, 0.1137)``; group shares
    still 0.5 / 0.5 as in the reference) and ``max_steps = 150`` (paper Figs. 1, 4).
    """

    GROUP_NAMES: ClassVar[tuple[str, ...]] = ("Male", "Female")
    DESCRIPTION: ClassVar[str] = (
        "replicator dynamics of two groups' qualification rates under per-group thresholds, "
        "32-bin score fitted to UCI Adult (Yin et al. 2023)"
    )

    def __init__(self, feature_model: str = "adult", max_steps: int = 150, **kwargs: Any) -> None:
        super().__init__(feature_model=feature_model, max_steps=max_steps, **kwargs)
