"""Group-relabelling invariance of every two-group environment and of the gap machinery.

Property: build the *swapped* environment, the same environment with group 0's and group
1's parameters exchanged, and run it under a group-symmetric policy (its decision depends
on the individual and on per-group statistics *relative to the individual's own group*,
never on the group's index; for the replicator, whose action is one threshold per group,
the thresholds come out reversed). Then every step's per-group counts
``info["fairness"]`` of the swapped run are the original's with the two columns swapped,
the long-term rates of every supported notion (:class:`~rllib_fair.fairness.Ledger`)
swap, and every gap (bias of each pair, ratio, soft bias, windowed disparity) is
unchanged; signed two-group quantities that name a group by design (SELLF's
``rate[1] - rate[0]``, Lear & Zhang's ``C = E+[.] - E-[.]``, the quarterly
``delta_<m> = m(0) - m(1)``) change sign.

How the swap is expressed, per environment (constructor arguments unless said):

=====================  ===============================================================
Lending, LendingHard   ``group_probs``, ``cluster_probs`` and ``success_probs`` (and
                       LendingHard's ``alter_rates``) with their rows reversed
LendingFICO            ``group_probs``, ``cluster_probs``, ``success_probs`` reversed
SchoolAdmission        ``params``: the per-group feature distributions (stand-in) or
                       the data rows' groups (data) exchanged, ``group_coefficient ->
                       -group_coefficient``, ``intercept -> intercept +
                       group_coefficient`` (so ``alpha(x, z)`` of the relabelled group
                       is unchanged), ``group_probs`` reversed
LendingDrift           ``cluster_probs``, ``success_probs``, ``drift_probs``,
                       ``group_probs`` reversed; individual ``i`` of group ``g`` becomes
                       individual ``i`` of group ``1 - g``
Replicator             ``group_shares`` and ``reset(options={"q": ...})`` reversed
ReplicatorAdult        the same, plus the per-group class-conditional score table. That
                       table is read from the package's Adult data file and is not a
                       constructor argument, so the swapped env is built while
                       ``load_adult_table`` returns the table with its groups (and group
                       names) exchanged
Infectious(Hard)       the groups are the two communities of the fixed karate-club graph
                       (15 and 19 nodes; no automorphism maps one onto the other), read
                       from the package's data file; the swapped env is built while
                       ``_karate_arrays`` returns the same graph with the two community
                       labels exchanged
QuarterlyLending       ``disadvantaged_group=1`` against the default 0: the generator's
                       table with ``A <- 1 - A``, everything else identical
=====================  ===============================================================

Exactness. The replicator is deterministic given its actions, and the quarterly env's
data depend on the seed only, so their swaps are exact as they stand. The other envs
draw the group (or the pool's groups) from a uniform ``u`` with "group 0 iff u < p_0";
run as they stand, a swapped env would see different applicants and agree only in
distribution. Every such env draws all its randomness from ``self.np_random``, so the
test hands both envs the same seeded stream (:class:`CoupledDraws`) and, for the swapped
env only, mirrors the group draw ``u -> 1 - u`` (group 0 iff ``1 - u < p_1`` iff ``u >
p_0``: the relabelled group, up to the measure-zero tie). Every other draw (bin, label,
drift, pool index, destination bin, infection) is used as is. With these common random
numbers the two runs are relabellings of each other and every count is compared with
``assert_array_equal``; the one exception is SchoolAdmission, whose relabelled logit
``s + (b + w_z)`` rounds differently from ``(s + w_z) + b`` by a few ulps: its decision
counts are still exact and its qualified mass (a running sum of ``n_applicants`` pass
probabilities, each off by at most ~1e-15, plus one update per step) is compared within
``SCHOOL_MASS_ATOL = 1e-9``. The replicator's binomial population noise and random
initial state are coupled the same way (the draws for the two groups reversed).
:class:`CoupledDraws` implements only the generator methods these envs use today, so an
env that starts drawing differently fails here loudly rather than silently uncoupled.

A black-box check without coupling (:func:`test_lending_swap_in_distribution`) compares
seed-averaged long-term rates of the plain seeded envs within 4 standard errors.

Each case also checks that the assertion can fail: with a group-dependent
policy, and with the original (unswapped) parameters under the mirrored draws, the
comparison raises.

Not covered here: ``fair/Attention-v0`` / ``fair/AttentionHard-v0`` have five sites, not
two groups; the native vector envs (``LendingVectorEnv``, ``LendingFICOVectorEnv``) are
tested bit for bit against their single-copy envs in ``test_lending_vector.py``, so they
inherit this property.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any
from unittest import mock

import numpy as np
import pytest

from rllib_fair.envs import ENV_IDS, env_info
from rllib_fair.envs import infectious as infectious_mod
from rllib_fair.envs import replicator as replicator_mod
from rllib_fair.envs.infectious import InfectiousEnv, InfectiousHardEnv
from rllib_fair.envs.lending import DEFAULT_CLUSTER_PROBS, DEFAULT_SUCCESS_PROBS, LendingEnv
from rllib_fair.envs.lending_drift import C_MINUS, C_PLUS, P_HC, P_LC, LendingDriftEnv
from rllib_fair.envs.lending_fico import LendingFICOEnv, load_fico_table
from rllib_fair.envs.lending_hard import HARD_ALTER_RATES, HARD_CLUSTER_PROBS, LendingHardEnv
from rllib_fair.envs.replicator import ReplicatorAdultEnv, ReplicatorEnv
from rllib_fair.envs.school_admission import SchoolAdmissionEnv, standin_params
from rllib_fair.fairness import Ledger, disparity_series
from rllib_fair.fairness import qualification as qual
from rllib_fair.fairness.counts import POPULATION
from rllib_fair.fairness.selective import group_utilities, imputation_bias, selective_disparity

#: Qualified-mass tolerance of SchoolAdmission (module docstring).
SCHOOL_MASS_ATOL = 1e-9
#: Tolerance on read-outs of the fairness machinery (ledger rates and gaps, disparity
#: series: numbers of order 1). They go through numpy matrix products (BLAS), whose
#: summation order may depend on a column's position, so the same per-group inputs in
#: swapped columns can round differently in the last bit; the counts themselves are
#: compared exactly.
READOUT_ATOL = 1e-12
#: Largest double below 1: a mirrored draw ``1 - u`` stays in ``[0, 1)`` like ``u``.
_BELOW_ONE = float(np.nextafter(1.0, 0.0))


# ----------------------------------------------------------------------------- coupling


def _flip(u: np.ndarray) -> np.ndarray:
    return np.minimum(1.0 - u, _BELOW_ONE)


def mirror_column(col: int) -> Callable[[int, np.ndarray], np.ndarray]:
    """Mirrors column ``col`` of every block of uniforms (the group draw of each row)."""

    def mirror(call: int, u: np.ndarray) -> np.ndarray:
        u = u.copy()
        u[:, col] = _flip(u[:, col])
        return u

    return mirror


def mirror_first_call(call: int, u: np.ndarray) -> np.ndarray:
    """Mirrors an episode's first call (a pool's group draw); later calls pass through."""
    return _flip(u) if call == 0 else u


class CoupledDraws:
    """Stands in for an env's ``np_random``: one seeded stream, group draws optionally mirrored.

    Only the methods the two-group envs call are provided (``random``; ``uniform`` and
    ``binomial`` for the replicator, with the two groups' entries reversed when
    ``reverse_pairs``); any other use raises ``AttributeError``. ``mirror(call, u)`` gets
    the index of the call since the last :meth:`episode_start` (called before each reset).
    """

    def __init__(
        self,
        seed: int,
        mirror: Callable[[int, np.ndarray], np.ndarray] | None = None,
        reverse_pairs: bool = False,
    ) -> None:
        self._rng = np.random.default_rng(seed)
        self._mirror = mirror
        self._reverse = reverse_pairs
        self.calls = 0

    def episode_start(self) -> None:
        """Restarts the call count (the next call is the coming reset's first)."""
        self.calls = 0

    def random(self, size: Any = None) -> np.ndarray:
        u = self._rng.random(size)
        if self._mirror is not None:
            u = self._mirror(self.calls, u)
        self.calls += 1
        return u

    def uniform(self, low: float, high: float, size: int) -> np.ndarray:
        v = self._rng.uniform(low, high, size)
        return v[::-1].copy() if self._reverse else v

    def binomial(self, n: int, p: Any) -> np.ndarray:
        p = np.asarray(p, dtype=np.float64)
        if not self._reverse:
            return self._rng.binomial(n, p)
        return self._rng.binomial(n, p[::-1])[::-1].copy()


# ----------------------------------------------------------------------------- cases


@dataclasses.dataclass
class Case:
    """One environment setting and how its swap looks.

    Attributes:
        env_id: the registered id the setting belongs to.
        make: ``make(swapped)`` builds the original (False) or swapped (True) env.
        draws: ``draws(seed, swapped)`` the stand-in generator of each env, or None when
            the env's own seeding is exact (``reset(seed=...)`` is used then).
        policy: ``policy(env, obs)``, group-symmetric.
        biased_policy: a group-dependent policy (the comparison must fail under it).
        obs_perm: maps an original observation to what the swapped one must equal.
        obs_view: ``obs_view(env, obs)``, the part of an observation that is compared
            (default: all of it).
        action_perm: maps an original action to the swapped run's action.
        info_rules: per info key beyond the common ones: ``"same"`` (default),
            ``"reversed"`` (a per-group pair), or a callable ``(orig, swapped) -> None``.
        reset_options: ``reset_options(swapped)``, options of every reset (or None).
        episodes: episodes per run (later ones start from unseeded resets: the stream
            goes on).
        mass_atol: tolerance on the population rows of the counts (0: exact).
        state_check: optional ``(env, swapped_env)`` check after the run.
        trace_check: optional ``(trace, swapped_trace, env, swapped_env)`` check.
    """

    name: str
    env_id: str
    make: Callable[[bool], Any]
    policy: Callable[[Any, Any], Any]
    biased_policy: Callable[[Any, Any], Any]
    obs_perm: Callable[[Any], Any]
    draws: Callable[[int, bool], CoupledDraws] | None = None
    obs_view: Callable[[Any, Any], Any] = lambda env, obs: obs
    action_perm: Callable[[Any], Any] = lambda a: a
    info_rules: dict[str, Any] = dataclasses.field(default_factory=dict)
    reset_options: Callable[[bool], dict] | None = None
    episodes: int = 2
    mass_atol: float = 0.0
    state_check: Callable[[Any, Any], None] | None = None
    trace_check: Callable[[list, list, Any, Any], None] | None = None


def _rev(x: Any) -> np.ndarray:
    """Rows of a per-group table reversed (group 0 <-> group 1)."""
    return np.asarray(x, dtype=np.float64)[::-1].copy()


def _index_perm(n: int, *blocks: tuple[int, int, int]) -> np.ndarray:
    """Index array that swaps equal-length blocks ``(start_a, start_b, length)``."""
    perm = np.arange(n)
    for a, b, length in blocks:
        perm[a : a + length], perm[b : b + length] = (
            np.arange(b, b + length),
            np.arange(a, a + length),
        )
    return perm


# --- Lending / LendingHard --------------------------------------------------------------

_LENDING_PERM = _index_perm(11, (7, 8, 1), (9, 10, 1))  # group one-hot, running TPRs


def _lending_policy(env: Any, obs: np.ndarray) -> int:
    """Bin threshold, lowered while the applicant's own group trails in running TPR."""
    b = int(np.argmax(obs[:7]))
    g = int(np.argmax(obs[7:9]))
    own, other = obs[9 + g], obs[10 - g]
    return int(b >= 4 or (b >= 2 and own < other))


def _lending_biased(env: Any, obs: np.ndarray) -> int:
    return int(int(np.argmax(obs[:7])) >= 3 + int(np.argmax(obs[7:9])))


def _lending_state(env: LendingEnv, env_s: LendingEnv) -> None:
    np.testing.assert_array_equal(env_s.cluster_probs, env.cluster_probs[::-1])
    assert env_s.cash == env.cash


#: A group-specific repayment table (the default is shared by both groups).
_SUCCESS_2D = (DEFAULT_SUCCESS_PROBS, (0.15, 0.25, 0.4, 0.55, 0.7, 0.75, 0.8))


def _lending_case(
    name: str, cls: type, group_probs, cluster, success, per_group=None, **common
) -> Case:
    """``per_group``: further per-group arguments (reversed in the swap); ``common``: the rest."""
    per_group = per_group or {}
    kwargs = {"max_steps": 700, **common}

    def make(swapped: bool) -> Any:
        if not swapped:
            return cls(
                group_probs=group_probs,
                cluster_probs=cluster,
                success_probs=success,
                **per_group,
                **kwargs,
            )
        sp = success if np.ndim(success) == 1 else _rev(success)
        return cls(
            group_probs=_rev(group_probs),
            cluster_probs=_rev(cluster),
            success_probs=sp,
            **{key: _rev(value) for key, value in per_group.items()},
            **kwargs,
        )

    return Case(
        name=name,
        env_id="fair/Lending-v0" if cls is LendingEnv else "fair/LendingHard-v0",
        make=make,
        draws=lambda seed, swapped: CoupledDraws(seed, mirror_column(0) if swapped else None),
        policy=_lending_policy,
        biased_policy=_lending_biased,
        obs_perm=lambda obs: obs[_LENDING_PERM],
        state_check=_lending_state,
    )


# --- LendingFICO --------------------------------------------------------------------------


def _fico_case() -> Case:
    table = load_fico_table()

    def make(swapped: bool) -> LendingFICOEnv:
        cp, sp = table["cluster_probs"], table["success_probs"]
        gp = (0.45, 0.55)
        if swapped:
            cp, sp, gp = _rev(cp), _rev(sp), _rev(gp)
        return LendingFICOEnv(
            group_probs=gp,
            cluster_probs=cp,
            success_probs=sp,
            n_applicants=500,
            max_steps=800,
            starting_resource=8.0,  # bins 2-4 lose on average: episodes end by termination
        )

    def state(env: LendingFICOEnv, env_s: LendingFICOEnv) -> None:
        np.testing.assert_array_equal(env_s.pool_groups, 1 - env.pool_groups)
        np.testing.assert_array_equal(env_s.pool_bins, env.pool_bins)
        assert env_s.resource == env.resource

    return Case(
        name="fico",
        env_id="fair/LendingFICO-v0",
        make=make,
        draws=lambda seed, swapped: CoupledDraws(seed, mirror_first_call if swapped else None),
        policy=lambda env, obs: int(2 <= int(np.argmax(obs[:10])) <= 4),
        biased_policy=lambda env, obs: int(
            int(np.argmax(obs[:10])) >= 4 + 2 * int(np.argmax(obs[10:12]))
        ),
        obs_perm=lambda obs: obs[_index_perm(12, (10, 11, 1))],
        state_check=state,
    )


# --- SchoolAdmission ------------------------------------------------------------------------


def _school_params(data: bool):
    """The committed stand-in, or (``data``) a small data-row population made from it."""
    params = standin_params()
    if not data:
        return params
    rng = np.random.default_rng(7)
    n_rows = 300
    rows = np.stack([rng.integers(0, m, n_rows) for m in params.cardinalities], axis=1)
    row_groups = (rng.random(n_rows) < 0.6).astype(np.int64)
    return dataclasses.replace(params, category_probs=None, rows=rows, row_groups=row_groups)


def _swap_school_params(params):
    """The same population with the group labels exchanged (module docstring)."""
    gc = params.group_coefficient
    changes = {
        "group_coefficient": -gc,
        "intercept": params.intercept + gc,
        "group_probs": tuple(params.group_probs[::-1]),
    }
    if params.category_probs is not None:
        changes["category_probs"] = tuple(p[::-1].copy() for p in params.category_probs)
    else:
        changes["row_groups"] = 1 - np.asarray(params.row_groups)
    return dataclasses.replace(params, **changes)


def _school_case(data: bool) -> Case:
    params = _school_params(data)
    swapped_params = _swap_school_params(params)
    n_dims = params.n_dims
    w = np.random.default_rng(3).normal(size=n_dims + 1)  # features and gain indicator

    # The stand-in runs out of resource (cost above the mean pass probability), the data
    # population runs to the step limit: both episode ends are compared.
    cost, resource = (0.4, 60.0) if data else (0.6, 20.0)

    def make(swapped: bool) -> SchoolAdmissionEnv:
        return SchoolAdmissionEnv(
            params=swapped_params if swapped else params,
            n_applicants=400,
            max_steps=600,
            starting_resource=resource,
            cost=cost,
        )

    def state(env: SchoolAdmissionEnv, env_s: SchoolAdmissionEnv) -> None:
        np.testing.assert_array_equal(env_s.pool_groups, 1 - env.pool_groups)
        np.testing.assert_array_equal(env_s.pool_categories, env.pool_categories)
        np.testing.assert_array_equal(env_s.pool_gains, env.pool_gains)
        np.testing.assert_allclose(env_s.pass_probabilities, env.pass_probabilities, atol=1e-14)

    perm = _index_perm(n_dims + 3, (n_dims + 1, n_dims + 2, 1))
    return Case(
        name="school_data" if data else "school_standin",
        env_id="fair/SchoolAdmission-v0",
        make=make,
        draws=lambda seed, swapped: CoupledDraws(seed, mirror_first_call if swapped else None),
        policy=lambda env, obs: int(float(obs[: n_dims + 1] @ w) > 0.0),
        biased_policy=lambda env, obs: int(float(obs[: n_dims + 1] @ w) + 2.0 * obs[-1] > 0.0),
        obs_perm=lambda obs: obs[perm],
        mass_atol=SCHOOL_MASS_ATOL,
        state_check=state,
    )


# --- LendingDrift ---------------------------------------------------------------------------

_DRIFT_N = 100  # individuals per group
_DRIFT_PERM = _index_perm(44, (14, 15, 1), (16, 30, 14))  # group one-hot, history blocks


def _drift_policy(env: Any, obs: np.ndarray) -> int:
    """Bin threshold, lowered while the own group had fewer recent applicants."""
    b = int(np.argmax(obs[:14]))
    g = int(np.argmax(obs[14:16]))
    own = float(obs[16 + 14 * g : 30 + 14 * g].sum())
    other = float(obs[16 + 14 * (1 - g) : 30 + 14 * (1 - g)].sum())
    return int(b >= 7 or (b >= 5 and own < other))


def _drift_biased(env: Any, obs: np.ndarray) -> int:
    return int(int(np.argmax(obs[:14])) >= 5 + 2 * int(np.argmax(obs[14:16])))


def _relabel_individual(i: int, j: int) -> None:
    assert j == (i if i < 0 else (i + _DRIFT_N) % (2 * _DRIFT_N))


def _drift_state(env: LendingDriftEnv, env_s: LendingDriftEnv) -> None:
    n = _DRIFT_N
    bins = env.population_bins()
    np.testing.assert_array_equal(env_s.population_bins(), np.concatenate([bins[n:], bins[:n]]))
    np.testing.assert_array_equal(env_s.bin_counts(), env.bin_counts()[::-1])
    np.testing.assert_array_equal(env_s.benefit_table(), env.benefit_table()[::-1])
    np.testing.assert_array_equal(env_s.transition_kernels(), env.transition_kernels()[::-1])
    np.testing.assert_array_equal(env_s.pi0_value_table(T=60), env.pi0_value_table(T=60)[::-1])
    assert env_s.cash == env.cash


def _drift_decomposition(trace: list, trace_s: list, env: Any, env_s: Any) -> None:
    """Lear & Zhang's C, DPE, IPE, SPE (signed s+ - s- by definition) change sign."""
    table, table_s = env.pi0_value_table(), env_s.pi0_value_table()
    for episode, episode_s in zip(_episodes(trace), _episodes(trace_s), strict=True):
        cols = []
        for steps in (episode, episode_s):
            infos = [s["info"] for s in steps[1:]]
            cols.append(
                {
                    key: np.array([i[k] for i in infos])
                    for key, k in (
                        ("ids", "individual"),
                        ("groups", "group"),
                        ("x", "credit_bin"),
                        ("g", "qual_gain"),
                        ("g_ps", "qual_gain_ps"),
                        ("g_pi0", "qual_gain_pi0"),
                    )
                }
            )
        for v_pi0, v_pi0_s in (("reference", "reference"), ("shadow", "shadow"), (table, table_s)):
            out = qual.episode_decomposition(**cols[0], v_pi0=v_pi0)
            out_s = qual.episode_decomposition(**cols[1], v_pi0=v_pi0_s)
            for key in ("C", "DPE", "IPE", "SPE", "G_gap"):
                assert out_s[key] == -out[key], key
            for key in ("V_pi", "V_ps", "V_pi0", "n_visited", "G"):
                np.testing.assert_array_equal(out_s[key], out[key][::-1], err_msg=key)


def _drift_case(name: str, cluster, success, drift, group_probs) -> Case:
    def make(swapped: bool) -> LendingDriftEnv:
        sp = success if np.ndim(success) == 1 else _rev(success)
        if swapped:
            return LendingDriftEnv(
                setting=None,
                cluster_probs=_rev(cluster),
                success_probs=sp,
                drift_probs=_rev(drift),
                group_probs=_rev(group_probs),
                max_steps=400,
            )
        return LendingDriftEnv(
            setting=None,
            cluster_probs=cluster,
            success_probs=success,
            drift_probs=drift,
            group_probs=group_probs,
            max_steps=400,
        )

    return Case(
        name=name,
        env_id="fair/LendingDrift-v0",
        make=make,
        draws=lambda seed, swapped: CoupledDraws(seed, mirror_column(0) if swapped else None),
        policy=_drift_policy,
        biased_policy=_drift_biased,
        obs_perm=lambda obs: obs[_DRIFT_PERM],
        info_rules={"individual": _relabel_individual},
        state_check=_drift_state,
        trace_check=_drift_decomposition,
    )


# --- Replicator -------------------------------------------------------------------------------

_REPLICATOR_PAIRS = ("q", "q_next", "accept_rate", "tpr", "fpr", "tp", "tn")


def _replicator_policy(env: ReplicatorEnv, obs: np.ndarray) -> np.ndarray:
    """Per-group thresholds from the own group's and the other group's qualification."""
    q = env.q_from_observation(obs)
    a = [0.42 + 0.25 * q[k] - 0.12 * q[1 - k] + 0.05 * np.sin(9.0 * q[k]) for k in (0, 1)]
    return np.clip(np.array(a), 0.0, 1.0)


def _replicator_biased(env: ReplicatorEnv, obs: np.ndarray) -> np.ndarray:
    return np.clip(_replicator_policy(env, obs) + np.array([0.0, 0.08]), 0.0, 1.0)


def _replicator_obs_perm(mode: str, time: bool) -> Callable[[np.ndarray], np.ndarray]:
    n = 2 if mode == "qualification" else 130
    half = n // 2
    perm = _index_perm(n + int(time), (0, half, half))
    return lambda obs: obs[perm]


def _replicator_case(
    name: str,
    cls: type = ReplicatorEnv,
    q0: tuple[float, float] | None = (0.62, 0.31),
    shares: tuple[float, float] = (0.35, 0.65),
    **kwargs: Any,
) -> Case:
    adult = cls is ReplicatorAdultEnv
    mode = kwargs.get("observation_mode", "qualification")
    time = kwargs.get("include_time", False)

    def make(swapped: bool) -> ReplicatorEnv:
        gs = _rev(shares) if swapped else shares
        if not (adult and swapped):
            return cls(group_shares=gs, **kwargs)
        table = dict(replicator_mod.load_adult_table())
        table["class_conditionals"] = _rev(table["class_conditionals"]).tolist()
        table["group_names"] = list(table["group_names"])[::-1]
        with mock.patch.object(replicator_mod, "load_adult_table", lambda: table):
            env = cls(group_shares=gs, **kwargs)
        assert env.GROUP_NAMES == ("Female", "Male")
        return env

    options = None
    if q0 is not None:
        options = lambda swapped: {"q": list(q0[::-1] if swapped else q0)}  # noqa: E731
    noisy = kwargs.get("population_size") is not None or q0 is None
    return Case(
        name=name,
        env_id="fair/ReplicatorAdult-v0" if adult else "fair/Replicator-v0",
        make=make,
        draws=(lambda seed, swapped: CoupledDraws(seed, reverse_pairs=swapped)) if noisy else None,
        policy=_replicator_policy,
        biased_policy=_replicator_biased,
        obs_perm=_replicator_obs_perm(mode, time),
        action_perm=lambda a: a[::-1],
        info_rules={key: "reversed" for key in _REPLICATOR_PAIRS},
        reset_options=options,
        state_check=lambda env, env_s: np.testing.assert_array_equal(env_s.q, env.q[::-1]),
    )


# --- Infectious -------------------------------------------------------------------------------


def _infectious_policy(env: InfectiousEnv, obs: np.ndarray, only_group: int | None = None):
    """Vaccinates the susceptible node with most infected neighbours (lowest index on ties)."""
    states = obs.reshape(-1, 3).argmax(axis=1)
    exposure = env.adjacency @ (states == 1)
    candidates = states == 0
    if only_group is not None:
        candidates &= env.node_groups == only_group
    if not candidates.any():
        return len(states)  # no-op
    return int(np.argmax(np.where(candidates, exposure, -1)))


def _swapped_karate():
    adjacency, node_groups, communities = infectious_mod._karate_arrays()
    return lambda: (adjacency, 1 - node_groups, communities[::-1])


def _infectious_case(cls: type, **kwargs: Any) -> Case:
    def make(swapped: bool) -> InfectiousEnv:
        if not swapped:
            return cls(**kwargs)
        with mock.patch.object(infectious_mod, "_karate_arrays", _swapped_karate()):
            env = cls(**kwargs)
        assert env.communities[0] == infectious_mod._karate_arrays()[2][1]
        return env

    return Case(
        name=cls.__name__,
        env_id="fair/InfectiousHard-v0" if cls is InfectiousHardEnv else "fair/Infectious-v0",
        make=make,
        draws=lambda seed, swapped: CoupledDraws(seed),
        policy=_infectious_policy,
        biased_policy=lambda env, obs: _infectious_policy(env, obs, only_group=0),
        obs_perm=lambda obs: obs,
        info_rules={"newly_infected": "reversed"},
        episodes=3,
        state_check=lambda env, env_s: np.testing.assert_array_equal(
            env_s.health_states, env.health_states
        ),
    )


# --- QuarterlyLending ----------------------------------------------------------------------------


def _quarterly_columns(env: Any) -> tuple[list[int], int]:
    names = list(env.feature_names)
    group_col = names.index("A")
    return [k for k in range(len(names)) if k != group_col], group_col


def _quarterly_policy(env: Any, obs: dict, group_weight: float = 0.0) -> np.ndarray:
    """Grants the quarter's budget to the rows with the best score of the non-group features."""
    cols, group_col = _quarterly_columns(env)
    feats = obs["features"]
    score = feats[:, cols] @ np.linspace(1.0, -0.4, len(cols))
    score = score + group_weight * feats[:, group_col]
    real = np.flatnonzero(obs["mask"] > 0)
    budget = int(obs["budget"][0])
    best = real[np.argsort(-score[real], kind="stable")[:budget]]
    action = np.zeros(env.n_max, dtype=np.int8)
    action[best] = 1
    return action


def _quarterly_obs_view(env: Any, obs: dict) -> dict:
    """Everything but the group column (its coding is the bank's; the groups are in the info)."""
    cols, _ = _quarterly_columns(env)
    return {**obs, "features": obs["features"][:, cols]}


def _quarterly_metrics(m: dict, m_s: dict) -> None:
    """Per-group keys swap, the signed ``delta_<m> = m(0) - m(1)`` change sign, the rest agree."""
    assert m.keys() == m_s.keys()
    for key, value in m.items():
        if key.endswith("_0"):
            assert m_s[key[:-2] + "_1"] == value, key
        elif key.endswith("_1"):
            assert m_s[key[:-2] + "_0"] == value, key
        elif key.startswith("delta_") and not key.endswith("_defined"):
            assert m_s[key] == -value, key
        else:
            assert m_s[key] == value, key


def _quarterly_case() -> Case:
    from rllib_fair.envs.quarterly_lending import QuarterlyLendingEnv

    def make(swapped: bool) -> Any:
        return QuarterlyLendingEnv(
            dim=2000, num_partitions=4, l_y=2.0, l_m_y=1.0, disadvantaged_group=int(swapped)
        )

    return Case(
        name="quarterly",
        env_id="fair/QuarterlyLending-v0",
        make=make,
        policy=_quarterly_policy,
        biased_policy=lambda env, obs: _quarterly_policy(env, obs, group_weight=3.0),
        obs_perm=lambda obs: obs,
        obs_view=_quarterly_obs_view,
        info_rules={
            "groups": lambda g, g_s: np.testing.assert_array_equal(g_s, 1 - g),
            "metrics": _quarterly_metrics,
        },
        episodes=1,
    )


CASES: list[Case] = [
    _lending_case("lending", LendingEnv, (0.5, 0.5), DEFAULT_CLUSTER_PROBS, DEFAULT_SUCCESS_PROBS),
    _lending_case("lending_uneven", LendingEnv, (0.3, 0.7), DEFAULT_CLUSTER_PROBS, _SUCCESS_2D),
    _lending_case(
        "lending_hard",
        LendingHardEnv,
        (0.4, 0.6),
        HARD_CLUSTER_PROBS,
        _SUCCESS_2D,
        per_group={"alter_rates": HARD_ALTER_RATES},
        interest_rate=0.2,  # loans lose on average: the cash runs out, episodes terminate
        starting_cash=25.0,
    ),
    _fico_case(),
    _school_case(data=False),
    _school_case(data=True),
    _drift_case("drift_setting2", (C_PLUS, C_MINUS), P_LC, ((0.1, 0.8, 0.1),) * 2, (0.5, 0.5)),
    _drift_case(
        "drift_setting3_uneven",
        (C_PLUS, C_MINUS),
        (P_HC, P_LC),
        ((0.05, 0.85, 0.10), (0.25, 0.70, 0.05)),
        (0.4, 0.6),
    ),
    _replicator_case("replicator_exact"),
    _replicator_case(
        "replicator_binned_relaxed",
        bins=16,
        reward_mode="relaxed",
        disparity="eo",
        loss="tp_tn",
        include_time=True,
    ),
    _replicator_case(
        "replicator_distribution_noise",
        observation_mode="distribution",
        population_size=500,
        reward_mode="lagrangian",
        disparity="qr",
        q0=None,
        max_steps=40,
    ),
    _replicator_case("replicator_adult", cls=ReplicatorAdultEnv, q0=(0.3138, 0.1137), max_steps=60),
    _infectious_case(InfectiousEnv),
    _infectious_case(InfectiousHardEnv, initial_infected=0, burn_in=1),  # the reference start
    _quarterly_case(),
]


# ----------------------------------------------------------------------------- running


def _run(case: Case, env: Any, swapped: bool, seed: int, policy) -> list[dict]:
    """Every reset and step of ``case.episodes`` episodes, as dicts."""
    options = case.reset_options(swapped) if case.reset_options else None
    draws = None if case.draws is None else case.draws(seed, swapped)
    if draws is not None:
        env.np_random = draws
    trace = []
    for episode in range(case.episodes):
        if draws is not None:
            draws.episode_start()
        if case.draws is None and episode == 0:
            obs, info = env.reset(seed=seed, options=options)
        else:
            obs, info = env.reset(options=options)
        trace.append({"obs": obs, "info": info, "reset": True})
        done = False
        while not done:
            action = policy(env, obs)
            obs, reward, term, trunc, info = env.step(action)
            trace.append(
                {"obs": obs, "info": info, "action": action, "reward": reward, "end": (term, trunc)}
            )
            done = term or trunc
    return trace


def _episodes(trace: list[dict]) -> list[list[dict]]:
    out: list[list[dict]] = []
    for step in trace:
        if step.get("reset"):
            out.append([])
        out[-1].append(step)
    return out


def _same(a: Any, b: Any) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype
        np.testing.assert_array_equal(b, a)
    else:
        assert type(a) is type(b) and a == b, (a, b)


def _check_counts(case: Case, counts: np.ndarray, counts_s: np.ndarray) -> None:
    want = counts[..., ::-1]
    if case.mass_atol:
        np.testing.assert_array_equal(counts_s[..., :POPULATION, :], want[..., :POPULATION, :])
        np.testing.assert_allclose(counts_s, want, rtol=0.0, atol=case.mass_atol)
    else:
        np.testing.assert_array_equal(counts_s, want)


def _check_info(case: Case, info: dict, info_s: dict) -> None:
    assert info.keys() == info_s.keys()
    _check_counts(case, info["fairness"], info_s["fairness"])
    group = info["group"]
    assert info_s["group"] == (1 - group if group >= 0 else group)
    for key in info:
        if key in ("fairness", "group"):
            continue
        rule = case.info_rules.get(key, "same")
        if rule == "same":
            _same(info[key], info_s[key])
        elif rule == "reversed":
            np.testing.assert_array_equal(np.asarray(info_s[key]), np.asarray(info[key])[::-1])
        else:
            rule(info[key], info_s[key])


def _check_ledgers(case: Case, env: Any, counts: np.ndarray, counts_s: np.ndarray) -> None:
    """Long-term rates swap; every gap of every supported notion is unchanged."""
    atol = max(case.mass_atol, READOUT_ATOL)
    for name in type(env).SUPPORTED_NOTIONS:
        for window in (None, 7):
            series = disparity_series(name, counts, window=window)
            series_s = disparity_series(name, counts_s, window=window)
            signed = disparity_series(name, counts, window=window, signed=True)
            signed_s = disparity_series(name, counts_s, window=window, signed=True)
            np.testing.assert_allclose(series_s, series, rtol=0.0, atol=atol)
            np.testing.assert_allclose(signed_s, -signed, rtol=0.0, atol=atol)
        ledger = Ledger.from_counts(name, counts, gamma=0.99)
        ledger_s = Ledger.from_counts(name, counts_s, gamma=0.99)
        np.testing.assert_array_equal(ledger_s.defined, ledger.defined[:, ::-1])
        np.testing.assert_allclose(ledger_s.rates(), ledger.rates()[:, ::-1], rtol=0, atol=atol)
        gaps = (ledger.pair_bias(), ledger.bias(), ledger.ratio(), ledger.soft_bias(beta=20.0))
        gaps_s = (ledger_s.pair_bias(), ledger_s.bias(), ledger_s.ratio(), ledger_s.soft_bias(20.0))
        for gap, gap_s in zip(gaps, gaps_s, strict=True):
            np.testing.assert_allclose(gap_s, gap, rtol=0.0, atol=atol)


def compare(case: Case, seed: int, policy=None, unswapped: bool = False) -> None:
    """Runs the original and the swapped env and asserts the relabelling, step by step."""
    policy = case.policy if policy is None else policy
    env = case.make(False)
    env_s = case.make(not unswapped)
    trace = _run(case, env, False, seed, policy)
    # The unswapped control keeps the swapped run's draws and options (only the
    # parameters stay the original's), so any failure is the parameters' doing.
    trace_s = _run(case, env_s, True, seed, policy)
    assert len(trace_s) == len(trace)
    for step, step_s in zip(trace, trace_s, strict=True):
        assert step.get("reset") == step_s.get("reset")
        if "action" in step:
            _same(case.action_perm(step["action"]), step_s["action"])
            assert step_s["reward"] == step["reward"]
            assert step_s["end"] == step["end"]
        _same(case.obs_view(env, case.obs_perm(step["obs"])), case.obs_view(env_s, step_s["obs"]))
        _check_info(case, step["info"], step_s["info"])
    for episode, episode_s in zip(_episodes(trace), _episodes(trace_s), strict=True):
        counts = np.stack([s["info"]["fairness"] for s in episode])
        counts_s = np.stack([s["info"]["fairness"] for s in episode_s])
        _check_ledgers(case, env, counts, counts_s)
    if case.state_check is not None:
        case.state_check(env, env_s)
    if case.trace_check is not None:
        case.trace_check(trace, trace_s, env, env_s)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_swapped_env_is_a_relabelling(case: Case) -> None:
    """Per-step counts swap columns, gaps are unchanged (exact, or SCHOOL_MASS_ATOL)."""
    compare(case, seed=11)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_swap_check_can_fail(case: Case) -> None:
    """The comparison fails under a group-dependent policy and with unswapped parameters."""
    with pytest.raises(AssertionError):
        compare(case, seed=11, policy=case.biased_policy)
    with pytest.raises(AssertionError):
        compare(case, seed=11, unswapped=True)


def test_every_two_group_env_is_covered() -> None:
    """Each registered env with two groups has a case here (a new env must add one)."""
    two_group = {env_id for env_id in ENV_IDS if env_info(env_id)["n_groups"] == 2}
    assert two_group == {case.env_id for case in CASES}


# ----------------------------------------------------------------------------- black box


def _long_term_rates(env: Any, seed: int, notion: str) -> np.ndarray:
    """One seeded episode of "accept bins >= 4"; the ledger's rates ``[G]`` of ``notion``."""
    obs, _ = env.reset(seed=seed)
    steps, done = [], False
    while not done:
        obs, _, term, trunc, info = env.step(int(np.argmax(obs[:7]) >= 4))
        steps.append(info["fairness"])
        done = term or trunc
    return Ledger.from_counts(notion, np.stack(steps)).rates()[0]


@pytest.mark.parametrize("notion", ["equal_opportunity", "demographic_parity"])
def test_lending_swap_in_distribution(notion: str) -> None:
    """Without coupling: seed-averaged rates of the swapped env are the original's, swapped.

    ``n = 24`` seeds per env (the swapped env on other seeds, so the two samples are
    independent); the per-group means may differ by at most 4 standard errors of their
    difference, ``4 sqrt(s_a^2 / n + s_b^2 / n)``. The same statistic separates the
    unswapped env by more than 8 standard errors.
    """
    case = CASES[1]  # lending_uneven: unequal shares, group-specific repayment
    n = 24
    env, env_s = case.make(False), case.make(True)
    rates = np.array([_long_term_rates(env, seed, notion) for seed in range(n)])
    rates_s = np.array([_long_term_rates(env_s, 1000 + seed, notion) for seed in range(n)])
    rates_u = np.array([_long_term_rates(env, 1000 + seed, notion) for seed in range(n)])
    for g in (0, 1):
        se = np.sqrt(rates[:, g].var(ddof=1) / n + rates_s[:, 1 - g].var(ddof=1) / n)
        assert abs(rates_s[:, 1 - g].mean() - rates[:, g].mean()) <= 4.0 * se
        se_u = np.sqrt(rates[:, g].var(ddof=1) / n + rates_u[:, 1 - g].var(ddof=1) / n)
        assert abs(rates_u[:, 1 - g].mean() - rates[:, g].mean()) > 8.0 * se_u


# ----------------------------------------------------------------------------- gap functions


@pytest.mark.parametrize("n_groups", [2, 3])
def test_ledger_gaps_are_permutation_invariant(n_groups: int) -> None:
    """Random fractional counts: rates permute with the columns, no gap moves."""
    rng = np.random.default_rng(5)
    counts = rng.random((40, 8, n_groups)) * 3.0
    counts[:, 1] = counts[:, 0] * rng.random((40, n_groups))  # qualified <= decided
    counts[:, 2] = counts[:, 0] * rng.random((40, n_groups))
    counts[:, 3] = np.minimum(counts[:, 1], counts[:, 2]) * rng.random((40, n_groups))
    counts[:, 5] = counts[:, 4] * rng.random((40, n_groups))
    perm = np.roll(np.arange(n_groups), 1)
    for name in (
        "accuracy_parity",
        "benefit_rate",
        "demographic_parity",
        "equal_opportunity",
        "equalized_odds",
        "qualification_parity",
    ):
        ledger = Ledger.from_counts(name, counts, gamma=0.95, smoothing=0.5)
        ledger_p = Ledger.from_counts(name, counts[..., perm], gamma=0.95, smoothing=0.5)
        close = {"rtol": 0.0, "atol": READOUT_ATOL}
        np.testing.assert_allclose(ledger_p.rates(), ledger.rates()[:, perm], **close)
        np.testing.assert_allclose(ledger_p.pair_bias(), ledger.pair_bias(), **close)
        np.testing.assert_allclose(ledger_p.ratio(), ledger.ratio(), **close)
        np.testing.assert_allclose(ledger_p.soft_bias(8.0), ledger.soft_bias(8.0), **close)
        np.testing.assert_array_equal(ledger_p.bias_grad(), ledger.bias_grad()[:, perm])
        np.testing.assert_allclose(
            ledger_p.soft_bias_grad(8.0), ledger.soft_bias_grad(8.0)[:, perm], **close
        )
        np.testing.assert_allclose(
            disparity_series(name, counts[..., perm], window=5),
            disparity_series(name, counts, window=5),
            **close,
        )


def test_selective_disparity_is_signed_by_design() -> None:
    """SELLF's ``Delta = mu^1 - mu^0`` and its imputation bias change sign under relabelling."""
    rng = np.random.default_rng(9)
    n = 400
    groups = (rng.random(n) < 0.4).astype(np.int64)
    decisions = (rng.random(n) < 0.5 + 0.2 * groups).astype(np.int64)
    labels = (rng.random(n) < 0.3 + 0.3 * groups).astype(np.int64)
    predicted = rng.random(n)
    for notion in ("qualification_parity", "accuracy_parity", "equal_opportunity"):
        util = group_utilities(notion, groups, decisions, labels)
        util_s = group_utilities(notion, 1 - groups, decisions, labels)
        np.testing.assert_array_equal(util_s.utility, util.utility[::-1])
        for source in ("true", "accepted", "imputed"):
            args = (groups, decisions, labels, predicted)
            value = selective_disparity(notion, *args, source=source)
            value_s = selective_disparity(notion, 1 - groups, *args[1:], source=source)
            assert value_s == -value
            # Accepted-only true positive rates are 1 in both groups by construction.
            assert value != 0.0 or (notion, source) == ("equal_opportunity", "accepted")
        bias = imputation_bias(notion, groups, decisions, labels, predicted)
        assert imputation_bias(notion, 1 - groups, decisions, labels, predicted) == -bias
