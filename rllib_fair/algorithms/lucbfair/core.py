"""L-UCBFair's learner state and episode loop in numpy (no Ray): Algorithm 1 end to end.

:class:`LUCBFairCore` holds the data store, the dual variable ``Y`` and the current
:class:`~rllib_fair.algorithms.lucbfair.lsvi.Plan`; the RLlib algorithm keeps one on the
driver and the RL module acts from the plan's arrays (:func:`act`). :func:`run_episode`
drives a gymnasium replicator env with the same functions, so tests and scripts can run
the whole method without Ray; the RLlib path is tested against it.

Algorithm 1 (as reconstructed: docs/methods/yin2023.md, "L-UCBFair"), per episode ``k``:
plan (backward LSVI pass with the bonus and the softmax value) -> act ``H`` steps (softmax
over regions, uniform point in the region) -> dual step on the planned ``V_{g,1}(s_1^k)``.
Here the planning for episode ``k + 1`` runs right after episode ``k``'s dual step
(:meth:`LUCBFairCore.observe`), which is the same sequence.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rllib_fair.algorithms.lucbfair import lsvi
from rllib_fair.algorithms.lucbfair.features import FeatureMap, region_grid, sample_in_regions


@dataclass
class Settings:
    """Resolved hyper-parameters (the config's defaults already applied).

    Attributes:
        horizon: ``H``.
        ridge: ``lambda`` of ``Lambda = sum phi phi^T + lambda I``.
        beta: UCB bonus multiplier.
        alpha: softmax temperature.
        xi: dual upper bound.
        eta: dual step size.
        threshold: ``b``, the constraint threshold on ``sum_h g_h``.
        half_width: region half-width.
        q_clip: ``"remaining"`` or ``"horizon"``.
        target_mode: ``"lsvi"`` or ``"reference_online"``.
    """

    horizon: int
    ridge: float = 1.0
    beta: float = 0.05
    alpha: float = 1.0
    xi: float = 20.0
    eta: float = 0.0
    threshold: float = 0.0
    half_width: float = 0.1
    q_clip: str = "remaining"
    target_mode: str = "lsvi"


@dataclass
class LUCBFairCore:
    """Data store, dual variable and plan of one L-UCBFair run."""

    settings: Settings
    features: FeatureMap
    dual: float = 0.0
    episodes: int = 0
    store: dict[str, np.ndarray] = field(default_factory=dict)
    plan: lsvi.Plan | None = None
    last_v_g1: float = 0.0
    last_v_r1: float = 0.0

    def __post_init__(self):
        s = self.settings
        self.centres, self.half_width = region_grid(s.half_width)
        H, d, M = s.horizon, self.features.dim, len(self.centres)
        if not self.store:
            self.store = {
                "q": np.zeros((0, H + 1, 2)),
                "a": np.zeros((0, H, 2)),
                "r": np.zeros((0, H)),
                "g": np.zeros((0, H)),
            }
        self._phi_sa = np.zeros((0, H, d))
        self._phi_next = np.zeros((0, H, M, d), dtype=np.float32)
        self._acc = lsvi.reference_accumulators(H, d)
        if self.plan is None:
            self.plan = lsvi.Plan.empty(H, d, s.ridge)
        self._cache(0)

    # ------------------------------------------------------------ data
    def _cache(self, start: int) -> None:
        """Features of stored episodes ``start..`` (phi is frozen: computed once)."""
        q, a = self.store["q"][start:], self.store["a"][start:]
        if not len(q):
            return
        H = self.settings.horizon
        phi_sa = self.features(q[:, :H], a)
        nxt = q[:, 1:].reshape(-1, 2)
        phi_next = self.features.all_regions(nxt, self.centres).reshape(
            len(q), H, len(self.centres), -1
        )
        self._phi_sa = np.concatenate([self._phi_sa, phi_sa])
        self._phi_next = np.concatenate([self._phi_next, phi_next.astype(np.float32)])

    def kwargs(self) -> dict:
        """Planning keywords of the current episode (bonus, temperature, dual, clip)."""
        s = self.settings
        return {"beta": s.beta, "alpha": s.alpha, "dual": self.dual, "q_clip": s.q_clip}

    def first_values(self, q1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Planned ``(V_{r,1}, V_{g,1})`` at first states ``q1[N, 2]`` under the current plan."""
        phi = self.features.all_regions(np.atleast_2d(q1), self.centres)
        _, _, _, v_r, v_g = lsvi.step_values(self.plan, 0, phi, **self.kwargs())
        return v_r, v_g

    def visit_values(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Softmax values at the visited states ``q[H(+1), 2]`` with the current plan."""
        H = self.settings.horizon
        phi = self.features.all_regions(q[:H], self.centres)
        v_r, v_g = np.zeros(H), np.zeros(H)
        for h in range(H):
            _, _, _, vr, vg = lsvi.step_values(self.plan, h, phi[h : h + 1], **self.kwargs())
            v_r[h], v_g[h] = vr[0], vg[0]
        return v_r, v_g

    def observe(self, q: np.ndarray, a: np.ndarray, r: np.ndarray, g: np.ndarray) -> dict:
        """Ends a batch of episodes played with the current plan, then plans the next one.

        Args:
            q: ``[N, H + 1, 2]`` visited states (first to last).
            a: ``[N, H, 2]`` actions.
            r: ``[N, H]`` rewards ``1 - L``.
            g: ``[N, H]`` utilities ``1 - D``.

        Returns:
            Metrics of the batch (planned first-state values, the dual variable used).
        """
        s = self.settings
        q, a = np.asarray(q, np.float64), np.asarray(a, np.float64)
        r, g = np.asarray(r, np.float64), np.asarray(g, np.float64)
        v_r1, v_g1 = self.first_values(q[:, 0])
        used_dual = self.dual
        if s.target_mode == "reference_online":
            for i in range(len(q)):
                vr, vg = self.visit_values(q[i])
                phi = self.features(q[i, : s.horizon], a[i])
                self._acc = lsvi.reference_accumulate(self._acc, phi, r[i], g[i], vr, vg)
        # dual step on the planned optimistic V_{g,1}(s_1^k) (mean over a batch of N)
        self.dual = lsvi.dual_step(self.dual, s.eta, s.threshold, float(v_g1.mean()), s.xi)
        n0 = len(self.store["q"])
        for key, val in (("q", q), ("a", a), ("r", r), ("g", g)):
            self.store[key] = np.concatenate([self.store[key], val])
        self._cache(n0)
        self.episodes += len(q)
        self.replan()
        self.last_v_r1, self.last_v_g1 = float(v_r1.mean()), float(v_g1.mean())
        return {"V_r1": self.last_v_r1, "V_g1": self.last_v_g1, "Y_used": used_dual}

    def replan(self) -> None:
        """One planning pass from the stored data with the current dual variable."""
        s = self.settings
        if s.target_mode == "reference_online":
            self.plan = lsvi.plan_reference(self._acc, s.ridge)
            return
        self.plan = lsvi.plan_lsvi(
            self._phi_sa,
            self.store["r"],
            self.store["g"],
            self._phi_next,
            ridge=s.ridge,
            horizon=s.horizon,
            **self.kwargs(),
        )

    # ------------------------------------------------------------ (de)serialisation
    def get_state(self) -> dict:
        """Store, dual variable, counters and reference accumulators (numpy, picklable)."""
        return {
            "store": {k: v.copy() for k, v in self.store.items()},
            "dual": self.dual,
            "episodes": self.episodes,
            "acc": {k: v.copy() for k, v in self._acc.items()},
            "plan": {
                "w_r": self.plan.w_r.copy(),
                "w_g": self.plan.w_g.copy(),
                "lambda_inv": self.plan.lambda_inv.copy(),
            },
            "last": (self.last_v_r1, self.last_v_g1),
        }

    def set_state(self, state: dict) -> None:
        """Restores :meth:`get_state` (the feature cache is recomputed)."""
        self.store = {k: np.asarray(v) for k, v in state["store"].items()}
        self.dual = float(state["dual"])
        self.episodes = int(state["episodes"])
        self._acc = {k: np.asarray(v) for k, v in state["acc"].items()}
        self.plan = lsvi.Plan(**{k: np.asarray(v) for k, v in state["plan"].items()})
        self.last_v_r1, self.last_v_g1 = state.get("last", (0.0, 0.0))
        H, d, M = self.settings.horizon, self.features.dim, len(self.centres)
        self._phi_sa = np.zeros((0, H, d))
        self._phi_next = np.zeros((0, H, M, d), dtype=np.float32)
        self._cache(0)

    def module_state(self) -> dict:
        """What the acting module needs: the plan, the dual variable, the episode index."""
        s = self.settings
        return {
            "w_r": self.plan.w_r.copy(),
            "w_g": self.plan.w_g.copy(),
            "lambda_inv": self.plan.lambda_inv.copy(),
            "dual": np.float64(self.dual),
            "alpha": np.float64(s.alpha),
            "beta": np.float64(s.beta),
            "episode": np.int64(self.episodes),
        }


def act(
    module_state: dict,
    features: FeatureMap,
    centres: np.ndarray,
    half_width: float,
    q: np.ndarray,
    h: np.ndarray,
    rng: np.random.Generator,
    *,
    explore: bool = True,
    q_clip: str = "remaining",
    reference_draws: bool = False,
) -> np.ndarray:
    """Actions ``[N, 2]`` for states ``q[N, 2]`` at 0-based steps ``h[N]``.

    Explore: region ``i ~ pi_h(. | s)``, ``a ~ Uniform(region i)``; inference: the centre
    of the argmax region. ``reference_draws`` reproduces the reference's
    ``torch.manual_seed(k)`` per step: ``rng`` is then re-created from its seed each call
    so every step of an episode uses the same uniforms.
    """
    plan = lsvi.Plan(module_state["w_r"], module_state["w_g"], module_state["lambda_inv"])
    q = np.atleast_2d(np.asarray(q, np.float64))
    h = np.clip(np.asarray(h, np.int64).reshape(-1), 0, plan.w_r.shape[0] - 1)
    phi = features.all_regions(q, centres)
    out = np.empty((len(q), 2))
    for i in range(len(q)):
        probs, *_ = lsvi.step_values(
            plan,
            int(h[i]),
            phi[i : i + 1],
            beta=float(module_state["beta"]),
            alpha=float(module_state["alpha"]),
            dual=float(module_state["dual"]),
            q_clip=q_clip,
        )
        if reference_draws:
            u = rng.random(3)
            idx = lsvi.choose_regions(probs, rng, explore, uniforms=u[:1])
            out[i] = sample_in_regions(rng, centres, idx, half_width, uniforms=u[1:])[0]
        else:
            idx = lsvi.choose_regions(probs, rng, explore)
            if explore:
                out[i] = sample_in_regions(rng, centres, idx, half_width)[0]
            else:
                out[i] = centres[idx[0]]
    return out


def run_episode(env, core: LUCBFairCore, rng: np.random.Generator, *, seed=None, options=None):
    """Plays one episode on a replicator env (``include_time`` not needed) and observes it.

    Returns:
        ``(metrics, episode)`` with ``episode = {"q", "a", "r", "g", "loss", "disparity"}``.
    """
    H = core.settings.horizon
    obs, _ = env.reset(seed=seed, options=options)
    model = env.unwrapped
    qs, acts, rs, gs, losses, disps = [model.q_from_observation(obs)], [], [], [], [], []
    state = core.module_state()
    for h in range(H):
        a = act(
            state,
            core.features,
            core.centres,
            core.half_width,
            qs[-1],
            np.array([h]),
            rng,
            q_clip=core.settings.q_clip,
        )[0]
        obs, _, term, trunc, info = env.step(a)
        qs.append(model.q_from_observation(obs))
        acts.append(a)
        rs.append(info["r"])
        gs.append(info["g"])
        losses.append(info["loss"])
        disps.append(info["disparity"])
        if term or trunc:
            break
    ep = {
        "q": np.array(qs),
        "a": np.array(acts),
        "r": np.array(rs),
        "g": np.array(gs),
        "loss": np.array(losses),
        "disparity": np.array(disps),
    }
    metrics = core.observe(ep["q"][None], ep["a"][None], ep["r"][None], ep["g"][None])
    return metrics, ep
