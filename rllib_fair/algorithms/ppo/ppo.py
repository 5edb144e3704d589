"""G-PPO, the unconstrained baseline: RLlib's PPO plus the shared fairness settings.

The policy is trained on the environment reward only ("greedy" PPO in Yu et al. 2022
and Xu et al. 2024). What it adds over ``ray.rllib.algorithms.ppo.PPO``: the typed
``fairness(...)`` settings, the fairness metrics callback and the fairness train-batch
columns, all from :class:`~rllib_fair.rllib.config.FairnessConfigMixin`; and
``weight_init``, the networks' initialisation (RLlib's, or the papers' orthogonal
scheme: :mod:`rllib_fair.algorithms.ppo.torch.ppo_torch_rl_module`), which every
PPO-family algorithm (their configs subclass :class:`FairPPOConfig`) inherits.
"""

from __future__ import annotations

from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.ppo import PPO, PPOConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.utils.annotations import override

from rllib_fair.accel.gate import accel_active
from rllib_fair.algorithms.common.setters import set_provided
from rllib_fair.algorithms.ppo.torch.ppo_torch_learner import OPTIMIZER_IMPLS
from rllib_fair.algorithms.ppo.torch.ppo_torch_rl_module import WEIGHT_INITS, FairPPOTorchRLModule
from rllib_fair.rllib.config import FairnessConfigMixin
from rllib_fair.settings import LEARNER_REPORTED_KEYS, choice

#: Learner result keys of RLlib's PPO (``learners/<module>/...``).
PPO_REPORTED_KEYS = LEARNER_REPORTED_KEYS + tuple(
    f"learners/*/{name}"
    for name in (
        "policy_loss",
        "vf_loss",
        "vf_loss_unclipped",
        "vf_explained_var",
        "entropy",
        "mean_kl_loss",
        "curr_kl_coeff",
        "curr_entropy_coeff",
        "diff_num_grad_updates_vs_sampler_policy",
    )
)


class FairPPOConfig(FairnessConfigMixin, PPOConfig):
    """PPOConfig with the shared fairness settings (see ``FairnessConfigMixin``).

    Attributes:
        weight_init: ``"rllib"`` (default: RLlib's initialisation) or ``"orthogonal"``
            (the papers' reference code: orthogonal weights with gain sqrt(2), policy
            output gain 0.01 so the initial policy is uniform, value output gain 1, zero
            biases). Set it with ``.training(weight_init=...)`` or ``weight_init:`` in a
            YAML ``config``.
        optimizer_impl: the Adam implementation: ``"foreach"`` (default; torch's
            multi-tensor Adam, bit-identical to RLlib's on CPU and faster),
            ``"fused"`` (torch's fused kernel: faster still, last-bit differences) or
            ``"rllib"`` (RLlib's ``torch.optim.Adam(params)``).

    Example:
        >>> from rllib_fair.algorithms.ppo.ppo import FairPPOConfig
        >>> config = (
        ...     FairPPOConfig()
        ...     .environment("fair/Lending-v0")
        ...     .fairness(notion="equal_opportunity")
        ... )
    """

    DECLARED_SETTINGS = (
        choice("weight_init", WEIGHT_INITS, "initialisation of the networks"),
        choice("optimizer_impl", OPTIMIZER_IMPLS, "implementation of Adam"),
    )
    REPORTED_KEYS = PPO_REPORTED_KEYS

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or FairPPO)
        self.weight_init: str = "rllib"
        self.optimizer_impl: str = "foreach"

    @override(PPOConfig)
    def training(
        self,
        *,
        weight_init=NotProvided,
        optimizer_impl=NotProvided,
        **kwargs,
    ):
        """PPO's ``training()`` plus the settings in the class attributes.

        The speed layer's learner loop (``lean_learner``) is set with
        :meth:`~rllib_fair.rllib.config.FairnessConfigMixin.accel`.
        """
        if "lean_learner" in kwargs:
            raise ValueError(
                f"lean_learner: {kwargs['lean_learner']!r} is no training() setting any "
                "more; set it with config.accel(learner=...) (YAML key: lean_learner)"
            )
        super().training(**kwargs)
        return set_provided(
            self,
            weight_init=weight_init,
            optimizer_impl=optimizer_impl,
        )

    @override(PPOConfig)
    def get_default_learner_class(self):
        """The torch learner, :class:`~.torch.ppo_torch_learner.FairPPOTorchLearner`."""
        if self.framework_str == "torch":
            from rllib_fair.algorithms.ppo.torch.ppo_torch_learner import FairPPOTorchLearner

            return FairPPOTorchLearner
        return super().get_default_learner_class()

    @property
    @override(PPOConfig)
    def _model_config_auto_includes(self):
        """PPO's, plus ``weight_init`` and whether the speed layer runs (``accel``)."""
        return super()._model_config_auto_includes | {
            "weight_init": self.weight_init,
            "accel": accel_active(self),
        }

    @override(PPOConfig)
    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """PPO's module spec with :class:`FairPPOTorchRLModule`.

        That is RLlib's default module plus ``weight_init``; subclasses with their own
        module (SELLF, ELBERT-PO) subclass it.
        """
        spec = super().get_default_rl_module_spec()
        spec.module_class = FairPPOTorchRLModule
        return spec


class FairPPO(PPO):
    """RLlib PPO whose default config is :class:`FairPPOConfig`."""

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> FairPPOConfig:
        """Returns a fresh :class:`FairPPOConfig`."""
        return FairPPOConfig()
