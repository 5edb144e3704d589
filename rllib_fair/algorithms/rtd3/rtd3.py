"""R-TD3 (Yin, Raab, Liu, Liu, NeurIPS 2023, Sec. 3.2, Eq. 6): TD3 on a relaxed reward.

R-TD3 maximises, over an episode of ``H`` steps,

    E[ sum_{t=1}^{H} (1 - lambda_t) r(s_t, a_t) + lambda_t g(s_t, a_t) ],   lambda_t = t / H

(Eq. 6), with ``r = 1 - L`` the reward and ``g = 1 - D`` the fairness utility: the
weight moves from the loss to the disparity over the episode, so the agent learns to
trade immediate loss for a fair state late in the episode. Everything else is plain TD3
(:mod:`rllib_fair.algorithms.td3`).

The relaxation lives in the environment (``reward_mode="relaxed"`` of
``fair/Replicator-v0`` / ``fair/ReplicatorAdult-v0``), not in a learner connector: an
off-policy replay buffer stores rewards, and the weight ``lambda_t`` depends on the step
index, which the buffer does not keep. :meth:`RTD3Config.validate` writes the settings
into ``env_config``; it raises if the user's ``env_config`` disagrees.

Two forms (``relaxation_sharpness`` = kappa), per step with ``lambda_t = min(1,
lambda_final * t / H)``:

* ``kappa = 1`` (default): reward ``1 - ((1 - lambda_t) L + lambda_t D)``, Eq. 6 exactly;
* ``kappa = 20``: the supplementary code's ``RelaxationEnv``, which replaces ``D`` by
  ``psi(D) = 1 - (1 - D)^20`` (about ``20 D`` for small ``D``: the disparity term is
  sharpened twenty-fold).

``relaxation_lambda_final = 0`` gives the reward ``1 - L`` of the paper's TD3 baseline
(Fig. 4, "TD3 (lambda = 0)").
"""

from __future__ import annotations

from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.utils.annotations import override

from rllib_fair.algorithms.common.setters import set_provided
from rllib_fair.algorithms.td3.td3 import TD3, TD3Config
from rllib_fair.rllib.targets import RETURN_KEY, SQUARED_DISPARITY, Metric, OwnMetrics
from rllib_fair.settings import check_object, number

#: env_config key -> RTD3Config attribute written into it.
RELAXATION_KEYS = {
    "relaxation_lambda_final": "relaxation_lambda_final",
    "relaxation_sharpness": "relaxation_sharpness",
}


class RTD3Config(TD3Config):
    """TD3's settings plus the relaxation of Eq. 6.

    Attributes:
        relaxation_lambda_final: ``lambda`` reached on the episode's last step
            (``lambda_t = min(1, lambda_final * t / H)``; 1.0 is Eq. 6, 0.0 plain TD3).
        relaxation_sharpness: ``kappa`` of ``psi(D) = 1 - (1 - D)^kappa``; 1.0 is Eq. 6
            (default), 20.0 the supplementary code's form.
    """

    #: RLlib's return is the relaxed one; the env's own reward is logged apart.
    own_metrics = OwnMetrics(
        objective=Metric(
            RETURN_KEY,
            "relaxed return",
            "the relaxed reward (1 - lambda_t) r + lambda_t g summed over an episode (Eq. 6); "
            "R-TD3's env pays it, so RLlib's episode return is this",
        ),
        env_reward=Metric(
            "env_runners/replicator/reward_return",
            "env return",
            "the env's own reward r = 1 - L summed over an episode",
        ),
        constraints=(SQUARED_DISPARITY,),
        note="TD3 on the relaxed reward, weight moving from the loss L to the disparity D",
    )

    DECLARED_SETTINGS = (
        number("relaxation_lambda_final", "lambda reached on the episode's last step", 0),
        number("relaxation_sharpness", "kappa of psi(D) = 1 - (1 - D)^kappa", 0, low_open=True),
    )

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or RTD3)
        self.relaxation_lambda_final: float = 1.0
        self.relaxation_sharpness: float = 1.0

    def relaxation(self, *, lambda_final=NotProvided, sharpness=NotProvided):
        """Sets the relaxation (see the class attributes).

        Returns:
            This updated config.
        """
        return set_provided(
            self, relaxation_lambda_final=lambda_final, relaxation_sharpness=sharpness
        )

    @override(TD3Config)
    def training(
        self,
        *,
        relaxation_lambda_final=NotProvided,
        relaxation_sharpness=NotProvided,
        **kwargs,
    ):
        """TD3's ``training()`` plus the relaxation (YAML keys of the same names)."""
        super().training(**kwargs)
        return set_provided(
            self,
            relaxation_lambda_final=relaxation_lambda_final,
            relaxation_sharpness=relaxation_sharpness,
        )

    @override(TD3Config)
    def validate(self) -> None:
        """The relaxation's checks, then TD3's.

        The env must have a relaxed reward and ``env_config`` must not conflict with the
        relaxation; :meth:`resolve_derived` writes it into ``env_config``.
        """
        check_object(self)
        self.relaxed_env_config()
        super().validate()

    @override(TD3Config)
    def resolve_derived(self) -> None:
        """TD3's, then ``env_config`` with the relaxation (called by ``freeze()``)."""
        super().resolve_derived()
        self.env_config = self.relaxed_env_config()

    def relaxed_env_config(self) -> dict:
        """``env_config`` plus ``reward_mode='relaxed'`` and the relaxation's two settings.

        Raises:
            ValueError: one line, for an env without a relaxed reward or an
                ``env_config`` entry that conflicts with the relaxation.
        """
        from rllib_fair.envs import env_class, env_meta

        meta = env_meta(self.env)
        cls = env_class(meta["id"]) if meta is not None else None
        modes = getattr(cls, "SUPPORTED_REWARD_MODES", ())
        if "relaxed" not in modes:
            raise ValueError(
                f"env: {self.env!r} is invalid for RTD3 (it has no relaxed reward, "
                "reward_mode='relaxed'); valid choices: fair/Replicator-v0, "
                "fair/ReplicatorAdult-v0"
            )
        env_config = dict(self.env_config or {})
        wanted = {"reward_mode": "relaxed"} | {
            key: float(getattr(self, attr)) for key, attr in RELAXATION_KEYS.items()
        }
        for key, value in wanted.items():
            if key in env_config and env_config[key] != value:
                setting = "" if key == "reward_mode" else f" (RTD3's {key} is {value!r})"
                raise ValueError(
                    f"env_config.{key}: {env_config[key]!r} conflicts with RTD3{setting}; "
                    f"valid: leave it out or set {value!r}"
                )
            env_config[key] = value
        return env_config


class RTD3(TD3):
    """TD3 trained on the relaxed reward of Eq. 6 (see the module docstring)."""

    @classmethod
    @override(TD3)
    def get_default_config(cls) -> RTD3Config:
        """Returns a fresh :class:`RTD3Config`."""
        return RTD3Config()
