"""``fair/Infectious-v0`` and ``fair/InfectiousHard-v0``: vaccination on the karate club.

The SIR vaccination setting of ml-fairness-gym's ``InfectiousDiseaseEnv`` (Atwood et al.
2019) as POCAR (Yu et al. 2022, ``ericyangyu/pocar`` ``infectious_experiment``) and
ELBERT-PO (Xu et al. 2024, App. D.1, ``umd-huang-lab/ELBERT``) trained on it: Zachary's
karate club graph, infection probability 0.5 per infected neighbour, recovery
probability 0.005, one vaccination per step, 20-step episodes. The harder variant of
ELBERT-PO adds waning immunity (recovered -> susceptible with probability 0.2).

The graph and its two Girvan-Newman communities are shipped as
``rllib_fair/envs/data/karate_communities.json`` (its ``provenance`` field says how they
were derived), so networkx is not needed at run time.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rllib_fair.envs.base import (
    FairEnvMixin,
    _fmt,
    as_count,
    as_discrete_action,
    as_flag,
    as_positive,
)
from rllib_fair.envs.declared import max_steps
from rllib_fair.fairness.counts import (
    ALLOCATED,
    NEEDED,
    POPULATION,
    QUALIFIED_MASS,
    empty_counts,
)
from rllib_fair.settings import bool_setting, integer, number

KARATE_TABLE_PATH = Path(__file__).resolve().parent / "data" / "karate_communities.json"

#: Health states, in the order of the one-hot observation of each node.
SUSCEPTIBLE = 0
INFECTED = 1
RECOVERED = 2
HEALTH_STATE_NAMES: tuple[str, ...] = ("susceptible", "infected", "recovered")
N_STATES = len(HEALTH_STATE_NAMES)

#: Number of nodes of Zachary's karate club graph.
N_NODES = 34

#: POCAR / ELBERT ``config.py``: ``INFECTION_PROBABILITY``, ``INFECTED_EXIT_PROBABILITY``,
#: ``EP_TIMESTEPS``; ELBERT ``harder_env.py``: ``DISABLE_PROBILITY``.
DEFAULT_TAU = 0.5
DEFAULT_RECOVERY_PROB = 0.005
DEFAULT_MAX_STEPS = 20
HARD_RELAPSE_PROB = 0.2


@functools.lru_cache(maxsize=1)
def load_karate_table() -> dict[str, Any]:
    """Returns the karate club table (``edges``, ``communities``, ``provenance``...).

    The returned dict is shared; do not modify it.
    """
    with KARATE_TABLE_PATH.open() as fh:
        table = json.load(fh)
    if table["n_nodes"] != N_NODES:
        raise ValueError(f"{KARATE_TABLE_PATH}: expected {N_NODES} nodes, got {table['n_nodes']}")
    return table


@functools.lru_cache(maxsize=1)
def _karate_arrays() -> tuple[np.ndarray, np.ndarray, tuple[tuple[int, ...], ...]]:
    """Read-only ``(adjacency int64 [34, 34], node_groups int64 [34], communities)``."""
    table = load_karate_table()
    adjacency = np.zeros((N_NODES, N_NODES), dtype=np.int64)
    edges = np.asarray(table["edges"], dtype=np.int64)
    adjacency[edges[:, 0], edges[:, 1]] = 1
    adjacency[edges[:, 1], edges[:, 0]] = 1
    communities = tuple(tuple(int(v) for v in c) for c in table["communities"])
    node_groups = np.full(N_NODES, -1, dtype=np.int64)
    for g, members in enumerate(communities):
        node_groups[list(members)] = g
    if np.any(node_groups < 0) or sum(len(c) for c in communities) != N_NODES:
        raise ValueError(f"{KARATE_TABLE_PATH}: communities must partition the {N_NODES} nodes")
    adjacency.setflags(write=False)
    node_groups.setflags(write=False)
    return adjacency, node_groups, communities


def _as_prob(name: str, value: Any) -> float:
    """Returns ``value`` as a float in ``[0, 1]``."""
    out = as_positive(name, value, allow_zero=True)
    if out > 1.0:
        raise ValueError(f"{name}={_fmt(value)}: expected a number in [0, 1]")
    return out


class InfectiousEnv(FairEnvMixin, gym.Env):
    """Vaccinating against an SIR epidemic on Zachary's karate club graph.

    ## Description

    ml-fairness-gym's infectious disease environment in the setting of POCAR and
    ELBERT-PO. Each of the 34 members of Zachary's karate club is susceptible (S),
    infected (I) or recovered (R); the disease spreads along the club's 78 friendships.
    At reset everybody is susceptible except one infected node (``initial_infected``: a
    node drawn uniformly from ``self.np_random`` by default, as the ELBERT-PO paper
    describes; POCAR's and ELBERT's code always infect node 0). Each step the agent may
    vaccinate one node. One step, in the order of ml-fairness-gym's ``_step_impl``:

    1. Vaccination: a vaccinated susceptible node becomes recovered; vaccinating an
       infected or recovered node leaves its state unchanged (POCAR's treatment matrix
       ``[[0, 0, 1], [0, 1, 0], [0, 0, 1]]``) but still counts as a vaccination given to
       its community (POCAR and ELBERT count every non-no-op action).
    2. Disease progress, all nodes at once from the state after the vaccination (each
       node draws one uniform ``u`` per step): a susceptible node with ``k`` infected
       neighbours becomes infected iff ``u < 1 - (1 - tau)^k`` (each infected neighbour
       infects independently with probability ``tau``); an infected node recovers iff
       ``u < recovery_prob``; a recovered node becomes susceptible again iff
       ``u < relapse_prob`` (0 here; 0.2 in ``fair/InfectiousHard-v0``). The infected
       neighbours are counted before any of this step's transitions, so a node infected
       in this step infects nobody until the next one; a node that recovers in this step
       cannot relapse in it, a node vaccinated in this step can (as in ELBERT's
       transition matrix), and a node that relapses in this step cannot be infected in it.

    The two groups are the two communities of the first Girvan-Newman split of the graph
    (15 and 19 nodes, as in POCAR); ``community_0`` is the one that contains node 0
    (the club's instructor, "Mr. Hi"). See ``communities`` and ``node_groups``.

    ## Action Space

    ``Discrete(35)``: ``0..33`` = vaccinate that node, ``34`` = no vaccination.

    ## Observation Space

    ``Box(0, 1, (102,), float32)``: the one-hot health state of every node, node-major:
    entry ``3 * i + s`` is 1 iff node ``i`` is in state ``s`` (0 = susceptible,
    1 = infected, 2 = recovered).

    ## Rewards

    The fraction of the 34 nodes that are not infected after the step (POCAR's
    ``calc_percent_healthy``, the reward used in training, ``zeta_1 = 0``).

    ## Episode End

    * Termination: never (an epidemic that died out simply continues), unless
      ``horizon_terminal``: then the step that reaches ``max_steps`` terminates.
    * Truncation: after ``max_steps`` steps (20, POCAR's and ELBERT's ``EP_TIMESTEPS``).

    Truncation lets RLlib bootstrap the value of the state after the last step;
    ``horizon_terminal=True`` makes the 20-step episode the whole task instead, as the
    ELBERT-PO authors' Stable-Baselines3 code treats it (their episode end carries no
    time-limit flag, so nothing past step 20 is valued).

    ## Arguments

    | argument | default | meaning |
    |---|---|---|
    | ``tau`` | 0.5 | infection probability per infected neighbour and step |
    | ``recovery_prob`` | 0.005 | probability per step that an infected node recovers |
    | ``relapse_prob`` | 0.0 (Hard: 0.2) | probability per step that a recovered node turns S |
    | ``max_steps`` | 20 | truncation horizon |
    | ``initial_infected`` | None | node infected at reset, ``None`` = uniformly random |
    | ``burn_in`` | 0 | untreated disease steps run inside ``reset()`` (POCAR/ELBERT: 1) |
    | ``horizon_terminal`` | False | the episode's end at ``max_steps`` is a termination |

    ``InfectiousEnv(initial_infected=0, burn_in=1)`` is the exact initial state of the
    reference code (node 0 infected, then one step without vaccination before the first
    observation). Burn-in steps are not part of the episode: they count toward neither
    ``max_steps`` nor the fairness counts.

    ``reset(options={"health_states": states})`` starts from the given 34 health states
    (integers in ``{0, 1, 2}``) instead of the initial infection; burn-in steps follow.

    ## Fairness signals

    ``info`` of ``step`` (``reset`` gives the same keys, zero allocation/need counts and
    ``group = decision = -1``):

    * ``"fairness"``: float64 ``[NUM_FIELDS, 2]`` counts
      (:mod:`rllib_fair.fairness.counts`). ``allocated[g]``: vaccinations given to
      community ``g`` in this step (0 or 1 in total); ``needed[g]``: nodes of ``g``
      newly infected in this step (susceptible before, infected after), so
      ``sum_t allocated / sum_t needed`` is ELBERT-PO's long-term benefit rate (Eq. 22,
      notion ``benefit_rate``). ``population[g]``: community size;
      ``qualified_mass[g]``: members of ``g`` not infected after the step. The
      decision rows (``decided`` ... ``selected_qualified``) are 0: nobody is accepted
      or rejected.
    * ``"group"``: community of the vaccinated node, -1 for no vaccination;
      ``"decision"``: the vaccinated node, -1 for no vaccination; ``"label"``: -1;
      ``"label_observed"``: 0 (all python ``int``).
    * ``"newly_infected"``: tuple of python ``int``, new infections per community in
      this step (equals the ``needed`` row); ``"num_infected"``: infected nodes after
      the step.

    ## Version History

    * v0: initial version.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    GROUP_NAMES: ClassVar[tuple[str, ...]] = ("community_0", "community_1")
    SUPPORTED_NOTIONS: ClassVar[tuple[str, ...]] = ("benefit_rate",)
    DEFAULT_NOTION: ClassVar[str] = "benefit_rate"
    DESCRIPTION: ClassVar[str] = (
        "SIR epidemic on Zachary's karate club (34 nodes, 2 Girvan-Newman communities), "
        "one vaccination per step; POCAR/ELBERT setting"
    )

    _UNIFORM_BLOCK: ClassVar[int] = 256
    _UNIFORM_WIDTH: ClassVar[int] = N_NODES

    DECLARED_SETTINGS: ClassVar[tuple] = (
        number("tau", "probability that an infected neighbour infects", 0, 1),
        number("recovery_prob", "per-step recovery probability of an infected node", 0, 1),
        number("relapse_prob", "per-step probability that a recovered node is susceptible", 0, 1),
        max_steps(),
        integer(
            "initial_infected",
            "node infected at reset",
            0,
            N_NODES - 1,
            none=True,
            none_means="a node drawn at random",
        ),
        integer("burn_in", "steps of the epidemic before the first decision", 0),
        bool_setting("horizon_terminal", "the episode's end at max_steps is a termination"),
    )

    def __init__(
        self,
        tau: float = DEFAULT_TAU,
        recovery_prob: float = DEFAULT_RECOVERY_PROB,
        relapse_prob: float = 0.0,
        max_steps: int = DEFAULT_MAX_STEPS,
        initial_infected: int | None = None,
        burn_in: int = 0,
        horizon_terminal: bool = False,
    ) -> None:
        self.tau = _as_prob("tau", tau)
        self.recovery_prob = _as_prob("recovery_prob", recovery_prob)
        self.relapse_prob = _as_prob("relapse_prob", relapse_prob)
        self.max_steps = as_count("max_steps", max_steps)
        if initial_infected is not None:
            if (
                isinstance(initial_infected, bool)
                or not isinstance(initial_infected, (int, np.integer))
                or not 0 <= initial_infected < N_NODES
            ):
                raise ValueError(
                    f"initial_infected={_fmt(initial_infected)}: expected None (a random "
                    f"node) or a node index in [0, {N_NODES - 1}]"
                )
            initial_infected = int(initial_infected)
        self.initial_infected = initial_infected
        self.burn_in = as_count("burn_in", burn_in, minimum=0)
        self.horizon_terminal = as_flag("horizon_terminal", horizon_terminal)

        adjacency, node_groups, communities = _karate_arrays()
        self._adj = adjacency
        self._node_group = node_groups.tolist()
        self._in_group0 = node_groups == 0
        self._communities = communities
        self._group_sizes = tuple(len(c) for c in communities)
        max_degree = int(adjacency.sum(axis=1).max())
        # P(infected | k infected neighbours) for k = 0..max_degree.
        self._p_infect = 1.0 - (1.0 - self.tau) ** np.arange(max_degree + 1, dtype=np.float64)

        self.action_space = spaces.Discrete(N_NODES + 1)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(N_NODES * N_STATES,), dtype=np.float32)
        self._noop = N_NODES
        self._eye = np.eye(N_STATES, dtype=np.float32)
        self._obs = np.zeros(N_NODES * N_STATES, dtype=np.float32)
        self._obs_nodes = self._obs.reshape(N_NODES, N_STATES)  # a view of _obs
        self._counts0 = empty_counts(len(self.GROUP_NAMES))
        self._counts0[POPULATION] = self._group_sizes

        # Episode state (set in reset()).
        self._state = np.zeros(N_NODES, dtype=np.int8)
        self._t = 0
        self._ready = False
        self._u_buf = []
        self._u_pos = 0

    # ------------------------------------------------------------------ public state

    @property
    def health_states(self) -> np.ndarray:
        """Current health state per node (0 = S, 1 = I, 2 = R), an int8 copy."""
        return self._state.copy()

    @property
    def num_infected(self) -> int:
        """Number of infected nodes now."""
        return int(np.count_nonzero(self._state == INFECTED))

    @property
    def communities(self) -> tuple[tuple[int, ...], ...]:
        """Sorted node indices of each community (group ``g`` = ``communities[g]``)."""
        return self._communities

    @property
    def node_groups(self) -> np.ndarray:
        """Community (group index) of every node, an int64 copy."""
        return np.asarray(self._node_group, dtype=np.int64)

    @property
    def adjacency(self) -> np.ndarray:
        """The graph's 0/1 adjacency matrix, an int64 ``[34, 34]`` copy."""
        return self._adj.copy()

    @property
    def elapsed_steps(self) -> int:
        """Steps taken since the last reset (burn-in steps excluded)."""
        return self._t

    # ------------------------------------------------------------------ gymnasium API

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Infects one node (or sets ``options["health_states"]``), runs the burn-in."""
        super().reset(seed=seed)
        self._reset_uniforms(seed)
        states = None
        if options:
            unknown = sorted(set(options) - {"health_states"})
            if unknown:
                raise ValueError(f"options: unknown key(s) {unknown}, expected 'health_states'")
            states = self._check_health_states(options["health_states"])
        st = self._state
        if states is not None:
            st[:] = states
        else:
            st[:] = SUSCEPTIBLE
            node = self.initial_infected
            if node is None:
                node = min(int(self._uniform_vec()[0] * N_NODES), N_NODES - 1)
            st[node] = INFECTED
        self._obs_nodes[:] = self._eye[st]
        for _ in range(self.burn_in):
            self._progress()
        self._t = 0
        self._ready = True
        counts = self._counts0.copy()
        num_infected = self._fill_qualified_mass(counts)
        info = {
            "fairness": counts,
            "group": -1,
            "label": -1,
            "decision": -1,
            "label_observed": 0,
            "newly_infected": (0, 0),
            "num_infected": num_infected,
        }
        return self._obs.copy(), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Vaccinates (unless no-op), then infections, recoveries and relapses at once."""
        if not self._ready:
            raise RuntimeError(f"{type(self).__name__}.step() called before reset()")
        self._check_episode_running()
        a = as_discrete_action(
            action,
            N_NODES + 1,
            f"a node index in [0, {N_NODES - 1}] or {N_NODES} (no vaccination)",
        )
        counts = self._counts0.copy()
        if a != N_NODES:
            group = self._node_group[a]
            counts[ALLOCATED, group] = 1.0
            if self._state[a] == SUSCEPTIBLE:
                self._state[a] = RECOVERED
                base = N_STATES * a
                self._obs[base + SUSCEPTIBLE] = 0.0
                self._obs[base + RECOVERED] = 1.0
        else:
            group = a = -1
        new_inf = self._progress()
        n_new = int(np.count_nonzero(new_inf))
        if n_new:
            n_new0 = int(np.count_nonzero(new_inf & self._in_group0))
            newly = (n_new0, n_new - n_new0)
            counts[NEEDED] = newly
        else:
            newly = (0, 0)
        num_infected = self._fill_qualified_mass(counts)
        self._t += 1
        info = {
            "fairness": counts,
            "group": group,
            "label": -1,
            "decision": a,
            "label_observed": 0,
            "newly_infected": newly,
            "num_infected": num_infected,
        }
        reward = (N_NODES - num_infected) / N_NODES
        over = self._episode_over = self._t >= self.max_steps
        terminal = over and self.horizon_terminal
        return self._obs.copy(), reward, terminal, over and not terminal, info

    # ------------------------------------------------------------------ internals

    def _uniform_vec(self) -> np.ndarray:
        """Returns the next ``N_NODES`` uniforms in ``[0, 1)`` (a row of a buffered block)."""
        pos = self._u_pos
        buf = self._u_buf
        if pos >= len(buf):
            rng = self.np_random
            buf = self._u_buf = rng.random((self._UNIFORM_BLOCK, N_NODES))
            self._u_rng = rng
            pos = 0
        self._u_pos = pos + 1
        return buf[pos]

    def _progress(self) -> np.ndarray:
        """One disease step from the current state; returns the newly infected mask."""
        u = self._uniform_vec()
        st = self._state
        infected = st == INFECTED
        new_inf = (st == SUSCEPTIBLE) & (u < self._p_infect[self._adj @ infected])
        recovered = infected & (u < self.recovery_prob)
        changed = new_inf | recovered
        if self.relapse_prob > 0.0:
            relapsed = (st == RECOVERED) & (u < self.relapse_prob)
            st[relapsed] = SUSCEPTIBLE
            changed |= relapsed
        st[new_inf] = INFECTED
        st[recovered] = RECOVERED
        idx = np.flatnonzero(changed)
        if idx.size:
            self._obs_nodes[idx] = self._eye[st[idx]]
        return new_inf

    def _fill_qualified_mass(self, counts: np.ndarray) -> int:
        """Writes the not-infected count per group into ``counts``; returns #infected."""
        infected = self._state == INFECTED
        n_inf = int(np.count_nonzero(infected))
        n_inf0 = int(np.count_nonzero(infected & self._in_group0))
        size0, size1 = self._group_sizes
        counts[QUALIFIED_MASS, 0] = size0 - n_inf0
        counts[QUALIFIED_MASS, 1] = size1 - (n_inf - n_inf0)
        return n_inf

    @staticmethod
    def _check_health_states(value: Any) -> np.ndarray:
        """Validates ``options["health_states"]``: 34 integers in {0, 1, 2}."""
        try:
            arr = np.asarray(value)
            ok = arr.shape == (N_NODES,) and arr.dtype.kind in "biuf"
            ok = ok and bool(np.all((arr == 0) | (arr == 1) | (arr == 2)))
        except (TypeError, ValueError):
            ok = False
        if not ok or (arr.dtype.kind == "b"):
            raise ValueError(
                f"options['health_states']={_fmt(value)}: expected {N_NODES} integers in "
                f"{{0, 1, 2}} (susceptible, infected, recovered)"
            )
        return arr.astype(np.int8)


class InfectiousHardEnv(InfectiousEnv):
    """ELBERT-PO's harder infectious environment: immunity wanes.

    ## Description

    :class:`InfectiousEnv` with ``relapse_prob = 0.2``: a recovered node (including a
    node vaccinated in the same step) becomes susceptible again with probability 0.2
    per step (ELBERT ``harder_env.py``, ``DISABLE_PROBILITY``; Xu et al. 2024, App. D.1,
    "Infectious disease control: harder version", the environment of their Sec. 5).
    Everything else (spaces, rewards, episode end, arguments, fairness signals) is as in
    :class:`InfectiousEnv`; only the default of ``relapse_prob`` differs.

    ## Version History

    * v0: initial version.
    """

    DESCRIPTION: ClassVar[str] = (
        "SIR epidemic on the karate club with waning immunity (R -> S w.p. 0.2), "
        "one vaccination per step; ELBERT-PO's harder setting"
    )

    def __init__(
        self,
        tau: float = DEFAULT_TAU,
        recovery_prob: float = DEFAULT_RECOVERY_PROB,
        relapse_prob: float = HARD_RELAPSE_PROB,
        max_steps: int = DEFAULT_MAX_STEPS,
        initial_infected: int | None = None,
        burn_in: int = 0,
        horizon_terminal: bool = False,
    ) -> None:
        super().__init__(
            tau=tau,
            recovery_prob=recovery_prob,
            relapse_prob=relapse_prob,
            max_steps=max_steps,
            initial_infected=initial_infected,
            burn_in=burn_in,
            horizon_terminal=horizon_terminal,
        )
