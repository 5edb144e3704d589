"""R-PPO: reward shaping with the per-step disparity.

Xu et al. 2024, App. D.2, Eq. 27 (and Yu et al. 2022's R-PPO baseline): the learner
trains on

    r'_t = r_t - zeta_1 * max(0, Delta_t - omega)          (``penalty_form="hinge"``)
    r'_t = r_t - zeta_1 * Delta_t * 1[Delta_t >= omega]    (``penalty_form="threshold"``)

where Delta_t is the per-step disparity after the decision at t (the running gap of the
configured notion since the episode start, or over ``fairness_disparity_window``). Eq. 27
prints "+ zeta_1 Delta" (a sign typo: the text says a larger bias gives a smaller
reward); the hinge form is the issue's and the POCAR attention reference's
(``zeta_2 * min(0, omega - Delta)``); the threshold form is POCAR's lending and
infectious reference. The shaping happens on the learner, right before GAE, so the
episode returns RLlib reports stay the true utility.
"""

from __future__ import annotations

from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.ppo import PPO
from ray.rllib.utils.annotations import override

from rllib_fair.algorithms.common.setters import set_provided
from rllib_fair.algorithms.ppo.ppo import FairPPOConfig
from rllib_fair.rllib.annotators import StepDisparity
from rllib_fair.rllib.targets import STEP_DISPARITY, OwnMetrics
from rllib_fair.settings import choice, number

PENALTY_FORMS = ("hinge", "threshold")


class RPPOConfig(FairPPOConfig):
    """Config of R-PPO: :class:`FairPPOConfig` plus the reward-shaping settings.

    Attributes:
        zeta_1: weight of the disparity penalty (paper: 2 lending, 0.1 infectious,
            10 / 20 attention original / harder).
        omega: disparity tolerance below which there is no penalty.
        penalty_form: ``"hinge"`` (``max(0, Delta - omega)``) or ``"threshold"``
            (``Delta * 1[Delta >= omega]``).
    """

    #: The per-step disparity Delta_t, written into the step infos on the env runners.
    ENV_RUNNER_ANNOTATORS = (StepDisparity(),)

    #: Return of the env's reward, shaped on the learner by the Delta_t penalty (Eq. 27).
    own_metrics = OwnMetrics(
        constraints=(STEP_DISPARITY,),
        note="the env's reward minus zeta_1 max(0, Delta_t - omega) per step (Eq. 27)",
    )

    #: Oracle label access when the regularised disparity uses true labels, else observed.
    label_access_follows_disparity_source = True

    DECLARED_SETTINGS = (
        number("zeta_1", "weight of the disparity penalty on the reward", 0),
        number("omega", "disparity tolerance below which there is no penalty", 0),
        choice(
            "penalty_form",
            PENALTY_FORMS,
            "hinge: max(0, Delta - omega); threshold: Delta 1[Delta >= omega]",
        ),
    )

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or RPPO)
        self.zeta_1: float = 2.0
        self.omega: float = 0.005
        self.penalty_form: str = "hinge"

    @override(FairPPOConfig)
    def training(
        self,
        *,
        zeta_1=NotProvided,
        omega=NotProvided,
        penalty_form=NotProvided,
        **kwargs,
    ):
        """PPO's ``training()`` plus ``zeta_1``, ``omega`` and ``penalty_form``."""
        super().training(**kwargs)
        return set_provided(self, zeta_1=zeta_1, omega=omega, penalty_form=penalty_form)

    @override(FairPPOConfig)
    def get_default_learner_class(self):
        """Returns :class:`RPPOTorchLearner`."""
        from rllib_fair.algorithms.rppo.torch.rppo_torch_learner import RPPOTorchLearner

        return RPPOTorchLearner


class RPPO(PPO):
    """RLlib PPO trained on the disparity-penalised reward (see module docstring)."""

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> RPPOConfig:
        """Returns a fresh :class:`RPPOConfig`."""
        return RPPOConfig()
