"""Tests of fair/Infectious-v0 and fair/InfectiousHard-v0: API, graph, dynamics, counts."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the ids)
from rllib_fair.envs import env_class, env_info
from rllib_fair.envs.infectious import (
    INFECTED,
    N_NODES,
    RECOVERED,
    SUSCEPTIBLE,
    InfectiousEnv,
    InfectiousHardEnv,
    load_karate_table,
)
from rllib_fair.fairness.counts import (
    ALLOCATED,
    NEEDED,
    NUM_FIELDS,
    POPULATION,
    QUALIFIED_MASS,
)

from .helpers import rollout, run_check_env, same, sd_tol

IDS = ("fair/Infectious-v0", "fair/InfectiousHard-v0")
NOOP = N_NODES
WRAPPED_ALLOWED_WARNINGS = (re.compile(r"is different from the unwrapped version"),)
INFO_KEYS = {
    "fairness",
    "group",
    "label",
    "decision",
    "label_observed",
    "newly_infected",
    "num_infected",
}


def _adjacency() -> np.ndarray:
    return InfectiousEnv().adjacency


def _states_from_obs(obs: np.ndarray) -> np.ndarray:
    one_hot = obs.reshape(N_NODES, 3)
    assert np.array_equal(one_hot.sum(axis=1), np.ones(N_NODES, dtype=np.float32))
    return np.argmax(one_hot, axis=1)


def _with_uniforms(env: InfectiousEnv, u: np.ndarray) -> None:
    """Makes every following disease step of ``env`` use the uniforms ``u``."""
    u = np.asarray(u, dtype=np.float64)
    env._uniform_vec = lambda: u


# ------------------------------------------------------------------ API and registry


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_unwrapped(env_id):
    run_check_env(gym.make(env_id).unwrapped, allowed=())


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_wrapped(env_id):
    run_check_env(gym.make(env_id), allowed=WRAPPED_ALLOWED_WARNINGS)


@pytest.mark.parametrize("env_id", IDS)
def test_metadata_and_spaces(env_id):
    info = env_info(env_id)
    assert info["group_names"] == ("community_0", "community_1")
    assert info["supported_notions"] == ("benefit_rate",)
    assert info["default_notion"] == "benefit_rate"
    assert info["description"] and "\n" not in info["description"]
    env = gym.make(env_id)
    assert env.action_space == gym.spaces.Discrete(35)
    space = env.observation_space
    assert space.shape == (102,) and space.dtype == np.float32
    assert np.all(space.low == 0.0) and np.all(space.high == 1.0)


def test_hard_variant_changes_only_the_relapse_default():
    base, hard = InfectiousEnv(), InfectiousHardEnv()
    assert env_class("fair/InfectiousHard-v0") is InfectiousHardEnv
    assert issubclass(InfectiousHardEnv, InfectiousEnv)
    assert (base.relapse_prob, hard.relapse_prob) == (0.0, 0.2)
    for name in ("tau", "recovery_prob", "max_steps", "initial_infected", "burn_in"):
        assert getattr(base, name) == getattr(hard, name), name
    assert (base.tau, base.recovery_prob, base.max_steps) == (0.5, 0.005, 20)
    assert base.initial_infected is None and base.burn_in == 0
    assert InfectiousHardEnv(relapse_prob=0.0).relapse_prob == 0.0


@pytest.mark.parametrize("env_id", IDS)
def test_observation_is_one_hot_of_health_states(env_id):
    env = gym.make(env_id)
    obs, _ = env.reset(seed=2)
    rng = np.random.default_rng(2)
    for _ in range(300):
        assert obs.dtype == np.float32 and obs in env.observation_space
        assert np.array_equal(_states_from_obs(obs), env.unwrapped.health_states)
        obs, _, terminated, truncated, _ = env.step(int(rng.integers(0, 35)))
        if terminated or truncated:
            obs, _ = env.reset()


# ------------------------------------------------------------------ determinism


@pytest.mark.parametrize("env_id", IDS)
def test_seeded_determinism(env_id):
    actions = np.random.default_rng(7).integers(0, 35, 2000).tolist()  # crosses resets
    run_a = rollout(env_id, 42, actions)
    run_b = rollout(env_id, 42, actions)
    assert len(run_a) == len(run_b)
    for step_a, step_b in zip(run_a, run_b):
        assert all(same(x, y) for x, y in zip(step_a, step_b))
    run_c = rollout(env_id, 43, actions)
    obs_a = np.stack([s[0] for s in run_a[:200]])
    obs_c = np.stack([s[0] for s in run_c[:200]])
    assert not np.array_equal(obs_a, obs_c)


# ------------------------------------------------------------------ graph and communities


def test_karate_table_communities_partition_the_nodes():
    table = load_karate_table()
    communities = [sorted(c) for c in table["communities"]]
    assert [len(c) for c in communities] == [15, 19] == table["community_sizes"]
    assert sorted(communities[0] + communities[1]) == list(range(N_NODES))
    assert 0 in communities[0]
    assert len(table["edges"]) == 78
    for key in ("graph", "communities", "networkx_version", "date"):
        assert table["provenance"][key]
    env = InfectiousEnv()
    assert [list(c) for c in env.communities] == communities
    groups = env.node_groups
    for g, members in enumerate(communities):
        assert np.all(groups[members] == g)
    adj = env.adjacency
    assert np.array_equal(adj, adj.T) and np.all(np.diag(adj) == 0)
    assert adj.sum() == 2 * 78


def test_karate_table_matches_networkx():
    nx = pytest.importorskip("networkx")
    from networkx.algorithms import community

    graph = nx.karate_club_graph()
    table = load_karate_table()
    assert graph.number_of_nodes() == N_NODES
    assert sorted(tuple(sorted(e)) for e in graph.edges()) == [tuple(e) for e in table["edges"]]
    # POCAR's recipe: the first level of Girvan-Newman, in the order networkx returns it.
    split = [sorted(c) for c in next(community.girvan_newman(graph))]
    assert split == table["communities"]
    expected = nx.to_numpy_array(graph, nodelist=range(N_NODES), weight=None)
    assert np.array_equal(InfectiousEnv().adjacency, expected.astype(np.int64))


# ------------------------------------------------------------------ reset


def test_initial_infection_fixed_and_random():
    env = InfectiousEnv(initial_infected=7)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        expected = np.zeros(N_NODES, dtype=np.int8)
        expected[7] = INFECTED
        assert np.array_equal(env.health_states, expected)
        assert np.array_equal(_states_from_obs(obs), expected)
        assert info["num_infected"] == 1 and info["newly_infected"] == (0, 0)
    env = InfectiousEnv()
    env.reset(seed=0)
    seen = np.zeros(N_NODES)
    n = 6800
    for _ in range(n):
        env.reset()
        states = env.health_states
        assert np.count_nonzero(states == INFECTED) == 1 and np.all(states != RECOVERED)
        seen[int(np.flatnonzero(states == INFECTED)[0])] += 1
    p = 1.0 / N_NODES
    assert np.all(np.abs(seen / n - p) <= sd_tol(p, n))


def test_reset_info_and_burn_in():
    # POCAR's initial state: node 0 infected, one untreated step inside reset().
    env = InfectiousEnv(tau=1.0, recovery_prob=0.0, initial_infected=0, burn_in=1)
    obs, info = env.reset(seed=0)
    adj = env.adjacency
    expected = np.where(adj[0] == 1, INFECTED, SUSCEPTIBLE).astype(np.int8)
    expected[0] = INFECTED
    assert np.array_equal(env.health_states, expected)
    assert np.array_equal(_states_from_obs(obs), expected)
    assert env.elapsed_steps == 0
    assert set(info) == INFO_KEYS
    counts = info["fairness"]
    assert counts.shape == (NUM_FIELDS, 2) and counts.dtype == np.float64
    assert np.all(counts[:POPULATION] == 0.0)
    assert np.all(counts[ALLOCATED] == 0.0) and np.all(counts[NEEDED] == 0.0)
    assert np.array_equal(counts[POPULATION], [15.0, 19.0])
    groups = env.node_groups
    infected = expected == INFECTED
    not_inf = [np.count_nonzero(~infected & (groups == g)) for g in range(2)]
    assert np.array_equal(counts[QUALIFIED_MASS], not_inf)
    assert info["num_infected"] == int(infected.sum())
    assert info["group"] == info["decision"] == info["label"] == -1
    assert info["label_observed"] == 0 and info["newly_infected"] == (0, 0)
    # The burn-in steps do not count toward max_steps.
    env = InfectiousEnv(burn_in=3, max_steps=2)
    env.reset(seed=1)
    assert [env.step(NOOP)[3] for _ in range(2)] == [False, True]


def test_reset_health_states_option():
    env = InfectiousEnv()
    states = np.tile([0, 1, 2], 12)[:N_NODES]
    obs, info = env.reset(seed=0, options={"health_states": states.tolist()})
    assert np.array_equal(env.health_states, states)
    assert np.array_equal(_states_from_obs(obs), states)
    assert info["num_infected"] == int(np.count_nonzero(states == INFECTED))
    obs, _ = env.reset(options={})  # empty options: the usual initial infection
    assert np.count_nonzero(env.health_states == INFECTED) == 1


# ------------------------------------------------------------------ dynamics


def _random_states(rng: np.random.Generator) -> np.ndarray:
    return rng.choice(3, size=N_NODES, p=[0.6, 0.2, 0.2]).astype(np.int8)


def test_tau_one_infects_every_susceptible_neighbour_and_tau_zero_none():
    adj = _adjacency()
    rng = np.random.default_rng(0)
    env_all = InfectiousEnv(tau=1.0, recovery_prob=0.0)
    env_none = InfectiousEnv(tau=0.0, recovery_prob=0.0)
    env_all.reset(seed=0)
    env_none.reset(seed=0)
    for _ in range(200):
        states = _random_states(rng)
        exposed = (states == SUSCEPTIBLE) & (adj @ (states == INFECTED) > 0)
        env_all.reset(options={"health_states": states})
        _, _, _, _, info = env_all.step(NOOP)
        expected = states.copy()
        expected[exposed] = INFECTED
        assert np.array_equal(env_all.health_states, expected)
        assert sum(info["newly_infected"]) == int(exposed.sum())
        env_none.reset(options={"health_states": states})
        _, _, _, _, info = env_none.step(NOOP)
        assert np.array_equal(env_none.health_states, states)
        assert info["newly_infected"] == (0, 0)
    # Newly infected nodes infect nobody in the step they are infected: a path 0 - 1 - ...
    env = InfectiousEnv(tau=1.0, recovery_prob=0.0, initial_infected=0)
    env.reset(seed=0)
    env.step(NOOP)
    first = (adj[0] == 1) | (np.arange(N_NODES) == 0)
    assert np.array_equal(env.health_states == INFECTED, first)


@pytest.mark.parametrize("tau", [0.3, 0.5])
def test_infection_frequency_matches_formula(tau):
    adj = _adjacency()
    target = 33  # degree 17
    neighbours = np.flatnonzero(adj[target])
    env = InfectiousEnv(tau=tau, recovery_prob=0.0)
    env.reset(seed=int(tau * 10))
    n = 3000
    for k in (1, 2, 4):
        # Everybody recovered except the target (S) and k infected neighbours of it.
        states = np.full(N_NODES, RECOVERED, dtype=np.int8)
        states[target] = SUSCEPTIBLE
        states[neighbours[:k]] = INFECTED
        hits = 0
        for _ in range(n):
            env.reset(options={"health_states": states})
            env.step(NOOP)
            hits += int(env.health_states[target] == INFECTED)
        p = 1.0 - (1.0 - tau) ** k
        assert abs(hits / n - p) <= sd_tol(p, n), (k, hits / n, p)


def test_exact_transition_rule_with_given_uniforms():
    tau, rec, rel = 0.3, 0.1, 0.25
    adj = _adjacency()
    env = InfectiousEnv(tau=tau, recovery_prob=rec, relapse_prob=rel)
    rng = np.random.default_rng(4)
    for _ in range(300):
        states = _random_states(rng)
        env.reset(seed=0, options={"health_states": states})
        k = adj @ (states == INFECTED)
        threshold = np.select(
            [states == SUSCEPTIBLE, states == INFECTED],
            [1.0 - (1.0 - tau) ** k, np.full(N_NODES, rec)],
            np.full(N_NODES, rel),
        )
        below = rng.random(N_NODES) < 0.5
        u = np.where(below, threshold - 1e-9, threshold + 1e-9).clip(0.0, 1.0 - 1e-12)
        fires = u < threshold  # False when threshold is 0 (no infected neighbour)
        _with_uniforms(env, u)
        env.step(NOOP)
        expected = states.copy()
        expected[(states == SUSCEPTIBLE) & fires] = INFECTED
        expected[(states == INFECTED) & fires] = RECOVERED
        expected[(states == RECOVERED) & fires] = SUSCEPTIBLE
        assert np.array_equal(env.health_states, expected)


def test_recovery_frequency():
    all_infected = np.full(N_NODES, INFECTED, dtype=np.int8)
    for prob, n_trials in ((0.3, 400), (0.005, 3000)):
        env = InfectiousEnv(recovery_prob=prob)
        env.reset(seed=5)
        recovered = 0
        for _ in range(n_trials):
            env.reset(options={"health_states": all_infected})
            env.step(NOOP)
            states = env.health_states
            assert np.all(states != SUSCEPTIBLE)  # I -> R only, never I -> S
            recovered += int(np.count_nonzero(states == RECOVERED))
        n = n_trials * N_NODES
        assert abs(recovered / n - prob) <= sd_tol(prob, n), (prob, recovered / n)


def test_relapse_only_in_the_hard_variant():
    all_recovered = np.full(N_NODES, RECOVERED, dtype=np.int8)
    base = InfectiousEnv()
    base.reset(seed=0, options={"health_states": all_recovered})
    for _ in range(19):
        base.step(NOOP)
    assert np.array_equal(base.health_states, all_recovered)
    hard = InfectiousHardEnv()
    hard.reset(seed=0)
    n_trials, relapsed = 1500, 0
    for _ in range(n_trials):
        hard.reset(options={"health_states": all_recovered})
        hard.step(NOOP)
        states = hard.health_states
        assert np.all(states != INFECTED)
        relapsed += int(np.count_nonzero(states == SUSCEPTIBLE))
    n = n_trials * N_NODES
    assert abs(relapsed / n - 0.2) <= sd_tol(0.2, n)


def test_relapse_timing_within_a_step():
    # All uniforms 0.01: below recovery (0.5) and relapse (0.2) probabilities.
    env = InfectiousHardEnv(recovery_prob=0.5, tau=0.0)
    states = np.full(N_NODES, SUSCEPTIBLE, dtype=np.int8)
    states[1] = INFECTED
    env.reset(seed=0, options={"health_states": states})
    _with_uniforms(env, np.full(N_NODES, 0.01))
    env.step(5)
    after = env.health_states
    assert after[1] == RECOVERED  # recovered in this step: cannot relapse in it
    assert after[5] == SUSCEPTIBLE  # vaccinated (S -> R) then relapsed in the same step
    # A node that relapses is not infected in the same step.
    env = InfectiousHardEnv(tau=1.0, recovery_prob=0.0)
    states = np.full(N_NODES, RECOVERED, dtype=np.int8)
    states[0] = INFECTED
    env.reset(seed=0, options={"health_states": states})
    _with_uniforms(env, np.full(N_NODES, 0.01))
    _, _, _, _, info = env.step(NOOP)
    neighbours = np.flatnonzero(env.adjacency[0])
    assert np.all(env.health_states[neighbours] == SUSCEPTIBLE)
    assert info["newly_infected"] == (0, 0)
    env.step(NOOP)  # now they are susceptible next to an infected node, tau = 1
    assert np.all(env.health_states[neighbours] == INFECTED)


# ------------------------------------------------------------------ actions


def test_vaccination_and_noop():
    env = InfectiousEnv(tau=0.0, recovery_prob=0.0)  # no spontaneous changes
    states = np.full(N_NODES, SUSCEPTIBLE, dtype=np.int8)
    states[[0, 2]] = INFECTED
    states[[3, 8]] = RECOVERED
    groups = env.node_groups
    env.reset(seed=0, options={"health_states": states})
    for node, new_state in ((5, RECOVERED), (9, RECOVERED), (0, INFECTED), (2, INFECTED)):
        before = env.health_states
        obs, _, _, _, info = env.step(node)
        expected = before.copy()
        expected[node] = new_state
        assert np.array_equal(env.health_states, expected)
        assert np.array_equal(_states_from_obs(obs), expected)
        g = int(groups[node])
        assert info["decision"] == node and info["group"] == g
        allocated = np.zeros(2)
        allocated[g] = 1.0
        assert np.array_equal(info["fairness"][ALLOCATED], allocated)
    # Vaccinating a recovered node changes nothing but is still a vaccination.
    before = env.health_states
    _, _, _, _, info = env.step(8)
    assert np.array_equal(env.health_states, before)
    assert info["group"] == int(groups[8]) and info["fairness"][ALLOCATED].sum() == 1.0
    # No-op.
    _, _, _, _, info = env.step(NOOP)
    assert np.array_equal(env.health_states, before)
    assert info["decision"] == -1 and info["group"] == -1
    assert np.all(info["fairness"][ALLOCATED] == 0.0)


def test_vaccinated_node_is_immune_in_the_same_step():
    env = InfectiousEnv(tau=1.0, recovery_prob=0.0, initial_infected=0)
    env.reset(seed=0)
    _, _, _, _, info = env.step(1)  # node 1 is a neighbour of node 0
    assert env.health_states[1] == RECOVERED
    neighbours = set(np.flatnonzero(env.adjacency[0]).tolist()) - {1}
    assert set(np.flatnonzero(env.health_states == INFECTED).tolist()) == neighbours | {0}
    assert sum(info["newly_infected"]) == len(neighbours)


@pytest.mark.parametrize("env_id", IDS)
def test_invalid_action_and_step_before_reset(env_id):
    env = env_class(env_id)()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(NOOP)
    env.reset(seed=0)
    for bad in (35, -1, "x", None):
        with pytest.raises(ValueError, match="action"):
            env.step(bad)
    env.step(np.int64(3))  # numpy integers are fine


# ------------------------------------------------------------------ reward, counts, episode end


@pytest.mark.parametrize("env_id", IDS)
def test_reward_and_counts_match_states(env_id):
    env = gym.make(env_id)
    raw = env.unwrapped
    groups = raw.node_groups
    obs, _ = env.reset(seed=9)
    rng = np.random.default_rng(9)
    totals = np.zeros((2, 2))
    for _ in range(2000):
        a = int(rng.integers(0, 35))
        before = raw.health_states
        obs, reward, terminated, truncated, info = env.step(a)
        after = raw.health_states
        assert set(info) == INFO_KEYS
        for key in ("group", "label", "decision", "label_observed", "num_infected"):
            assert type(info[key]) is int, key
        assert info["label"] == -1 and info["label_observed"] == 0
        infected = after == INFECTED
        n_inf = int(infected.sum())
        assert info["num_infected"] == n_inf
        assert type(reward) is float and reward == (N_NODES - n_inf) / N_NODES
        assert terminated is False and type(truncated) is bool
        counts = info["fairness"]
        assert counts.shape == (NUM_FIELDS, 2) and counts.dtype == np.float64
        assert np.all(counts[:POPULATION] == 0.0)
        assert np.array_equal(counts[POPULATION], [15.0, 19.0])
        not_inf = [np.count_nonzero(~infected & (groups == g)) for g in range(2)]
        assert np.array_equal(counts[QUALIFIED_MASS], not_inf)
        allocated = np.zeros(2)
        if a < N_NODES:
            allocated[groups[a]] = 1.0
            assert info["decision"] == a and info["group"] == groups[a]
        else:
            assert info["decision"] == info["group"] == -1
        assert np.array_equal(counts[ALLOCATED], allocated)
        new = (before == SUSCEPTIBLE) & infected
        newly = tuple(int(np.count_nonzero(new & (groups == g))) for g in range(2))
        assert info["newly_infected"] == newly
        assert type(newly[0]) is int and type(newly[1]) is int
        assert np.array_equal(counts[NEEDED], newly)
        totals += counts[[ALLOCATED, NEEDED]]
        if truncated:
            obs, _ = env.reset()
    assert np.all(totals > 0)  # both groups got vaccinations and infections


@pytest.mark.parametrize("env_id", IDS)
def test_truncation_at_max_steps(env_id):
    env = gym.make(env_id)
    env.reset(seed=0)
    flags = [env.step(NOOP)[2:4] for _ in range(20)]
    assert flags == [(False, False)] * 19 + [(False, True)]
    assert env.unwrapped.elapsed_steps == 20
    env = gym.make(env_id, max_steps=3)
    env.reset(seed=0)
    assert [env.step(0)[3] for _ in range(3)] == [False, False, True]
    env.reset()
    assert env.unwrapped.elapsed_steps == 0


@pytest.mark.parametrize("env_id", IDS)
def test_horizon_terminal_ends_the_episode_as_a_termination(env_id):
    # the same trajectory; only the flag of the last step moves from truncated to terminated
    plain, terminal = (
        gym.make(env_id, max_steps=5),
        gym.make(env_id, max_steps=5, horizon_terminal=True),
    )
    plain.reset(seed=3), terminal.reset(seed=3)
    for t in range(5):
        a, b = plain.step(t), terminal.step(t)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1] == b[1]
        assert a[2:4] == (False, t == 4) and b[2:4] == (t == 4, False)
    with pytest.raises(ValueError, match="horizon_terminal"):
        gym.make(env_id, horizon_terminal="yes")


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"tau": -0.1}, "tau"),
        ({"tau": 1.5}, "tau"),
        ({"tau": float("nan")}, "tau"),
        ({"tau": "high"}, "tau"),
        ({"recovery_prob": 2.0}, "recovery_prob"),
        ({"recovery_prob": -1e-3}, "recovery_prob"),
        ({"relapse_prob": 1.2}, "relapse_prob"),
        ({"max_steps": 0}, "max_steps"),
        ({"max_steps": 2.5}, "max_steps"),
        ({"initial_infected": 34}, "initial_infected"),
        ({"initial_infected": -1}, "initial_infected"),
        ({"initial_infected": 1.0}, "initial_infected"),
        ({"initial_infected": True}, "initial_infected"),
        ({"burn_in": -1}, "burn_in"),
        ({"burn_in": 1.5}, "burn_in"),
    ],
)
@pytest.mark.parametrize("cls", [InfectiousEnv, InfectiousHardEnv])
def test_constructor_validation(cls, kwargs, name):
    with pytest.raises(ValueError) as excinfo:
        cls(**kwargs)
    message = str(excinfo.value)
    assert name in message and "\n" not in message


@pytest.mark.parametrize(
    "options",
    [
        {"health_states": [0] * 33},
        {"health_states": [3] * N_NODES},
        {"health_states": [0.5] * N_NODES},
        {"health_states": [True] * N_NODES},
        {"health_state": [0] * N_NODES},
    ],
)
def test_reset_options_validation(options):
    env = InfectiousEnv()
    with pytest.raises(ValueError) as excinfo:
        env.reset(seed=0, options=options)
    message = str(excinfo.value)
    assert "health_state" in message and "\n" not in message
