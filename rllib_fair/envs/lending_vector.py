"""Native vector versions of ``fair/Lending-v0`` and ``fair/LendingHard-v0`` (N copies, one call).

RLlib samples ``num_envs_per_env_runner`` copies through gymnasium's vector API. With
gymnasium's ``SyncVectorEnv`` every step is N Python calls of :class:`LendingEnv.step`
plus per-copy info merging; :class:`LendingVectorEnv` keeps the N copies' state in
arrays (credit distributions ``[N, G, B]``, cash, running rates, the shown applicants)
and updates them with a fixed number of numpy operations per step, whatever N is.

Same trajectories per copy: copy ``i`` reset with ``seed=s`` draws from
``np_random(s + i)`` (``SyncVectorEnv``'s seeding) in the same blocks of uniforms as
:class:`LendingEnv` (``_UNIFORM_BLOCK`` rows of group, bin and label draws), so every
observation, reward, termination and info equals what ``SyncVectorEnv`` over single
copies returns, bit for bit (``tests/envs/test_lending_vector.py``). Episodes end and
restart like gymnasium's default ``NEXT_STEP`` autoreset (the step after the last one
resets that copy and returns its reset observation and info, reward 0), which RLlib
expects; infos come as gymnasium's vector info dict (arrays plus ``_key`` masks) with
the dtypes ``SyncVectorEnv`` would give them.

:class:`LendingHardVectorEnv` (``fair/LendingHard-v0``) overrides the destination bins.
Registered as the ``vector_entry_point`` of both ids; the package's configs
use it when ``native_vector_env`` is on (the default) by setting RLlib's
``gym_env_vectorize_mode`` to ``vector_entry_point``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding

from rllib_fair.envs.lending import LendingEnv
from rllib_fair.envs.lending_hard import LendingHardEnv
from rllib_fair.fairness.counts import (
    DECIDED,
    NUM_FIELDS,
    POPULATION,
    QUALIFIED,
    QUALIFIED_MASS,
    SELECTED,
    SELECTED_QUALIFIED,
)


def copy_seeds(seed: int | list | None, n: int) -> list:
    """Per-copy seeds as ``SyncVectorEnv`` gives them: ``s + i``, a list, or all None."""
    if seed is None:
        return [None] * n
    if isinstance(seed, (int, np.integer)):
        return [int(seed) + i for i in range(n)]
    seeds = list(seed)
    if len(seeds) != n:
        raise ValueError(f"seed has {len(seeds)} entries for {n} envs")
    return seeds


def binary_actions(actions: Any, n: int) -> np.ndarray:
    """``actions`` as an int64 array of ``n`` zeros (reject) and ones (accept), or a clear error."""
    a = np.asarray(actions)
    if a.shape != (n,) or not np.issubdtype(a.dtype, np.integer):
        if a.shape == (n,) and np.all(np.isin(a, (0, 1))):
            a = a.astype(np.int64)
        else:
            raise ValueError(
                f"actions {actions!r}: expected {n} integers, each 0 (reject) or 1 (accept)"
            )
    if np.count_nonzero(a >> 1):  # an action other than 0 or 1
        raise ValueError(f"actions {actions!r}: each action must be 0 (reject) or 1 (accept)")
    return a.astype(np.int64, copy=False)


class NativeVectorEnv(gym.vector.VectorEnv):
    """The base of every native vector env: N copies of one single env, NEXT_STEP resets.

    :meth:`_init_spaces` checks ``num_envs``, keeps the single env ``spec_env`` (built
    from the same keyword arguments, which validates them) and sets the single and
    batched spaces; :meth:`_check_started` guards ``step()`` before ``reset()``.
    """

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def _init_spaces(self, num_envs: Any, spec: Any) -> int:
        """Sets ``num_envs``, ``spec_env`` and the spaces; returns ``num_envs``."""
        if (
            isinstance(num_envs, bool)
            or not isinstance(num_envs, (int, np.integer))
            or num_envs < 1
        ):
            raise ValueError(f"num_envs={num_envs!r}: expected a positive integer")
        self.num_envs = n = int(num_envs)
        self.spec_env = spec
        self.single_observation_space = spec.observation_space
        self.single_action_space = spec.action_space
        self.observation_space = gym.vector.utils.batch_space(spec.observation_space, n)
        self.action_space = gym.vector.utils.batch_space(spec.action_space, n)
        return n

    def _check_started(self) -> None:
        if not self._started:
            raise RuntimeError(f"{type(self).__name__}.step() called before reset()")


class CopiesVectorEnv(NativeVectorEnv):
    """What the native vector envs share: N copies of a one-decision-per-step env.

    Spaces from the single env ``spec_env``, per-copy generators seeded like
    ``SyncVectorEnv`` (:meth:`_seed_copies`), per-copy blocks of the single env's
    uniforms (:meth:`_uniforms`), the shown observations ``_obs`` and gymnasium's vector
    info dict of the decision infos (:meth:`_infos`). Subclasses call
    :meth:`_init_copies` from ``__init__``.
    """

    def _init_copies(self, num_envs: Any, spec: Any) -> None:
        n = self._init_spaces(num_envs, spec)
        self._obs = np.zeros((n, spec.observation_space.shape[0]), dtype=np.float32)
        self._rngs: list[np.random.Generator | None] = [None] * n
        self._u_buf = np.zeros((n, spec._UNIFORM_BLOCK, spec._UNIFORM_WIDTH))
        self._u_pos = np.full(n, spec._UNIFORM_BLOCK, dtype=np.int64)
        self._needs_reset = np.zeros(n, dtype=bool)
        self._started = False
        self._rows = np.arange(n)
        self._all_true = np.ones(n, dtype=bool)
        self._all_true.flags.writeable = False  # shared by every step's info masks

    def reset(
        self, *, seed: int | list | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets every copy; ``seed`` s seeds copy i with s + i (or a list per copy).

        The subclass's ``_reset_copies(rows)`` starts the episodes and shows the first
        applicants; its ``_pop_rows`` (``[N, 2, G]``) go into the reset infos.
        """
        self._seed_copies(seed)
        self._reset_copies(self._rows)
        self._needs_reset[:] = False
        self._started = True
        counts = np.zeros((self.num_envs, NUM_FIELDS, self.spec_env.n_groups))
        counts[:, POPULATION:] = self._pop_rows
        minus = np.full(self.num_envs, -1, dtype=np.int64)
        return self._obs.copy(), self._infos(counts, minus, minus.copy(), minus.copy())

    def _seed_copies(self, seed: int | list | None) -> None:
        """Copy i gets ``np_random(seed + i)`` (a new generator only when seeded)."""
        for i, s in enumerate(copy_seeds(seed, self.num_envs)):
            if s is not None or self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(s)
                self._u_pos[i] = self._u_buf.shape[1]  # drop buffered draws

    def _uniforms(self, rows: np.ndarray) -> np.ndarray:
        """The next uniform row of each copy in ``rows``, ``[k, width]``.

        As ``FairEnvMixin._uniform_row``: a block of rows is drawn from the copy's
        generator when its buffer is used up.
        """
        pos = self._u_pos
        block = self._u_buf.shape[1]
        for i in rows[pos[rows] >= block]:
            self._u_buf[i] = self._rngs[i].random((block, self._u_buf.shape[2]))
            pos[i] = 0
        u = self._u_buf[rows, pos[rows]]
        pos[rows] += 1
        return u

    def _infos(self, counts, group, label, decision) -> dict[str, Any]:
        """Gymnasium's vector info dict of ``FairEnvMixin._decision_info`` per copy."""
        mask = self._all_true
        return {
            "fairness": counts,
            "_fairness": mask,
            "group": group,
            "_group": mask,
            "label": label,
            "_label": mask,
            "decision": decision,
            "_decision": mask,
            "label_observed": (decision == 1).astype(np.int64),  # 1 iff accepted
            "_label_observed": mask,
        }


class LendingVectorEnv(CopiesVectorEnv):
    """``num_envs`` copies of :class:`LendingEnv` (same keyword arguments) in arrays."""

    #: The single env whose copies this vector env steps (and whose arguments it takes).
    SINGLE_ENV: type = LendingEnv

    def __init__(self, num_envs: int = 1, **kwargs: Any) -> None:
        spec = self.SINGLE_ENV(**kwargs)  # validates every argument
        self._init_copies(num_envs, spec)
        n, g, b = self.num_envs, spec.n_groups, spec.n_bins
        self._g, self._b = g, b
        self._success = np.asarray(spec._success, dtype=np.float64)  # [G, B]
        self._group_probs = np.asarray(spec.group_probs, dtype=np.float64)
        self._group_cum = np.asarray(spec._group_cum, dtype=np.float64)
        self._init_cluster = np.asarray(spec._init_cluster, dtype=np.float64)
        self._cluster = np.zeros((n, g, b))
        self._cluster_cum = np.zeros((n, g, b))
        self._pop_rows = np.zeros((n, NUM_FIELDS - POPULATION, g))
        self._cash = np.zeros(n)
        self._t = np.zeros(n, dtype=np.int64)
        self._qualified = np.zeros((n, g), dtype=np.int64)
        self._sel_qualified = np.zeros((n, g), dtype=np.int64)
        self._group = np.full(n, -1, dtype=np.int64)
        self._bin = np.full(n, -1, dtype=np.int64)
        self._label = np.full(n, -1, dtype=np.int64)
        # Tables for the decisions of many copies at once (_decide), indexed by
        # key = 2 * decision + label: the reward (what LendingEnv.step adds to its cash),
        # the destination bin per source bin (LendingEnv._destination) and the decision
        # rows of the counts per group (decision_counts).
        self._reward_of = np.array([0.0, 0.0, -spec.loan_amount, spec._gain])
        bins = np.arange(b)
        self._dst_of = np.stack([bins, bins, np.maximum(bins - 1, 0), np.minimum(bins + 1, b - 1)])
        self._decision_rows_of = np.zeros((4, g, POPULATION, g))
        for key in range(4):
            acc, y = divmod(key, 2)
            for grp in range(g):
                rows = self._decision_rows_of[key, grp]
                rows[DECIDED, grp] = 1.0
                rows[QUALIFIED, grp] = y
                rows[SELECTED, grp] = acc
                rows[SELECTED_QUALIFIED, grp] = y * acc

    # ------------------------------------------------------------------ gymnasium API

    def step(self, actions: Any) -> tuple:
        """One step of every copy (copies whose episode ended last step reset instead).

        Almost every step no copy resets and every copy decides at once; otherwise the
        copies that ended last step reset (reward 0, reset info) and the others step.
        Both give what :class:`LendingEnv` gives (``tests/envs/test_lending_vector.py``).
        """
        self._check_started()
        a = binary_actions(actions, self.num_envs)
        spec = self.spec_env
        resetting = self._needs_reset
        everyone = not resetting.any()
        rows = self._rows if everyone else self._rows[~resetting]
        # the shown applicants (copies: the draws below write into these arrays)
        g, b, y = self._group[rows], self._bin[rows], self._label[rows]
        acc = a[rows]
        key, reward = self._decide(rows, acc, g, b, y)
        counts = np.zeros((self.num_envs, NUM_FIELDS, self._g))
        counts[rows, :POPULATION] = self._decision_rows_of[key, g]
        terminated = np.zeros(self.num_envs, dtype=bool)
        truncated = np.zeros(self.num_envs, dtype=bool)
        terminated[rows] = self._cash[rows] < spec.loan_amount
        truncated[rows] = self._t[rows] >= spec.max_steps
        self._draw_applicants(rows)
        if everyone:
            rewards, group, label, decision = reward, g, y, acc.copy()
        else:
            rewards = np.zeros(self.num_envs)
            group = np.full(self.num_envs, -1, dtype=np.int64)
            label, decision = group.copy(), group.copy()
            rewards[rows], group[rows], label[rows], decision[rows] = reward, g, y, acc
            self._reset_copies(self._rows[resetting])
        counts[:, POPULATION:] = self._pop_rows
        self._needs_reset = terminated | truncated
        return (
            self._obs.copy(),
            rewards,
            terminated,
            truncated,
            self._infos(counts, group, label, decision),
        )

    def _decide(self, rows, acc, g, b, y) -> tuple[np.ndarray, np.ndarray]:
        """LendingEnv.step's decision on the shown applicants of ``rows``.

        The per-copy values come from the tables made in ``__init__``, indexed by
        ``key = 2 * decision + label``. Returns ``(key, reward)`` per row.
        """
        spec = self.spec_env
        key = 2 * acc + y
        reward = self._reward_of[key]
        self._cash[rows] += reward
        dst = self._destinations(rows, key, g, b)
        moving = dst != b
        if moving.any():
            self._shift(rows[moving], g[moving], b[moving], dst[moving])
        repaid = y == 1
        if repaid.any():
            r, gg = rows[repaid], g[repaid]
            self._qualified[r, gg] += 1
            self._sel_qualified[r, gg] += acc[repaid]
            if spec._tpr_off >= 0:
                tpr = self._sel_qualified[r, gg] / self._qualified[r, gg]
                self._obs[r, spec._tpr_off + gg] = tpr
        self._t[rows] += 1
        return key, reward

    # ------------------------------------------------------------------ internals

    def _destinations(self, rows, key, g, b) -> np.ndarray:
        """Bins the decided applicants' mass moves to (``LendingEnv._destination``).

        Delayed impact: accepted moves one bin up on repay, one down on default
        (clipped), a rejection stays; ``key = 2 * decision + label``.
        """
        return self._dst_of[key, b]

    def _keep_draws(self, rows, u) -> None:
        """Hook for uniforms beyond (group, bin, label) of each drawn row (none here)."""

    def _reset_copies(self, rows: np.ndarray) -> None:
        self._cluster[rows] = self._init_cluster
        self._cluster_cum[rows] = np.cumsum(self._init_cluster, axis=-1)
        self._pop_rows[rows, 0] = self._group_probs
        self._pop_rows[rows, QUALIFIED_MASS - POPULATION] = self._qualified_mass(rows)
        self._cash[rows] = self.spec_env.starting_cash
        self._t[rows] = 0
        self._qualified[rows] = 0
        self._sel_qualified[rows] = 0
        self._obs[rows] = 0.0
        self._group[rows] = -1
        self._bin[rows] = -1
        self._draw_applicants(rows)

    def _qualified_mass(self, rows: np.ndarray) -> np.ndarray:
        """``[len(rows), G]``: ``group_probs[g] * sum_b p_g[b] success[g][b]``."""
        prod = self._cluster[rows] * self._success
        # cumsum adds left to right, as LendingEnv's sum(): its last entry is that sum
        return self._group_probs * np.cumsum(prod, axis=-1)[..., -1]

    def _shift(self, rows, g, src, dst) -> None:
        inc = self.spec_env.cluster_shift_increment
        mass = np.minimum(self._cluster[rows, g, src], inc)
        self._cluster[rows, g, src] -= mass
        self._cluster[rows, g, dst] += mass
        self._cluster_cum[rows, g] = np.cumsum(self._cluster[rows, g], axis=-1)
        prod = self._cluster[rows, g] * self._success[g]
        total = np.cumsum(prod, axis=-1)[:, -1]  # left to right, as LendingEnv's sum()
        self._pop_rows[rows, QUALIFIED_MASS - POPULATION, g] = self._group_probs[g] * total

    def _draw_applicants(self, rows: np.ndarray) -> None:
        spec = self.spec_env
        u = self._uniforms(rows)
        self._keep_draws(rows, u)
        gcum = self._group_cum
        g = (gcum[None, :] <= (u[:, 0] * gcum[-1])[:, None]).sum(axis=1)
        cum = self._cluster_cum[rows, g]
        b = (cum <= (u[:, 1] * cum[:, -1])[:, None]).sum(axis=1)
        obs = self._obs
        if spec._bin_off >= 0:
            old = self._bin[rows]
            had = old >= 0
            obs[rows[had], spec._bin_off + old[had]] = 0.0
            obs[rows, spec._bin_off + b] = 1.0
        if spec._group_off >= 0:
            old = self._group[rows]
            had = old >= 0
            obs[rows[had], spec._group_off + old[had]] = 0.0
            obs[rows, spec._group_off + g] = 1.0
        self._group[rows] = g
        self._bin[rows] = b
        self._label[rows] = (u[:, 2] < self._success[g, b]).astype(np.int64)


class LendingHardVectorEnv(LendingVectorEnv):
    """``num_envs`` copies of :class:`LendingHardEnv` (``fair/LendingHard-v0``) in arrays.

    As :class:`LendingVectorEnv`, with LendingHardEnv's destination bins: each applicant's
    fourth uniform (drawn with it, in the same block row) picks the bin its mass moves to
    from the cumulative transition rows, accept ``[label][bin]`` or reject
    ``[group][label][bin]`` (``bisect_right`` as a count of entries ``<= u * total``).
    """

    SINGLE_ENV = LendingHardEnv

    def __init__(self, num_envs: int = 1, **kwargs: Any) -> None:
        super().__init__(num_envs, **kwargs)
        spec = self.spec_env
        self._accept_cum = np.asarray(spec._accept_cum, dtype=np.float64)  # [2, B, B]
        self._reject_cum = np.asarray(spec._reject_cum, dtype=np.float64)  # [G, 2, B, B]
        self._u_move = np.zeros(self.num_envs)

    def _destinations(self, rows, key, g, b) -> np.ndarray:
        accept, y = key >= 2, key & 1
        cum = np.where(accept[:, None], self._accept_cum[y, b], self._reject_cum[g, y, b])
        threshold = self._u_move[rows] * cum[:, -1]
        return (cum <= threshold[:, None]).sum(axis=1)

    def _keep_draws(self, rows, u) -> None:
        self._u_move[rows] = u[:, 3]
