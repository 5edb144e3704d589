"""F-PPO-L (Hu, Lear & Zhang 2023), the long-term-fairness baseline of Lear & Zhang 2025.

POCAR's advantage regularisation (A-PPO, :mod:`rllib_fair.algorithms.pocar`) plus two
terms on the change of a distance W between the two groups' recent credit-bin
histograms::

    A' = standardise(beta_0 mm(A) + beta_1 mm(vt) + beta_2 mm(div)
                     + beta_3 mm(l1) + beta_4 mm(l2))
    l1 = min(0, -1[Delta_t > omega] dW_t),   l2 = max(0, -(1 - 1[Delta_t > omega]) dW_t)

with ``mm`` the per-minibatch min-max normalisation, ``Delta_t`` the TPR gap over the
last ``fairness_disparity_window`` decisions and ``dW_t = W_t - W_{t-1}`` (``W_0 = 0``
at the episode start), W over the last ``w1_window`` decided applicants
(:func:`rllib_fair.fairness.qualification.windowed_count_w1`). ``w1_form="reference"``
is what the authors' code computes: the debiased Sinkhorn divergence of the GeomLoss
library (``p = 1``, ``blur = 0.01``, annealing ratio 0.5;
:mod:`rllib_fair.fairness.sinkhorn`) between the two histograms, each taken as 14
one-dimensional points whose coordinates are the bin counts; ``"sorted_counts"`` is the
exact 1-Wasserstein distance between those point clouds (the Sinkhorn value's limit, about
15-30% above it); ``"intended"`` is W1 between the normalised bin distributions.

Defaults are the reference's: beta_0 = 1, beta_1 = beta_2 = 0, beta_3 = 1.12, beta_4 = 1,
omega = 0.005; the TPR window 301 (the reference computes the TPRs after counting the
current decision and before dropping the oldest of its last 300), the histogram window
300 (the reference's histograms hold the last 300 applicants, the current one included,
when W is computed); no KL penalty; Adam epsilon 1e-5 (``adam_epsilon``, from POCAR).
"""

from __future__ import annotations

from typing import ClassVar

from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.ppo import PPO
from ray.rllib.utils.annotations import override

from rllib_fair.algorithms.common.annotators import LongTermW1
from rllib_fair.algorithms.common.connectors import (
    add_qualification_columns,
    emits_qualification_info,
)
from rllib_fair.algorithms.common.setters import set_provided
from rllib_fair.algorithms.pocar.pocar import POCARConfig
from rllib_fair.fairness.qualification import W1_FORMS
from rllib_fair.fairness.sinkhorn import SINKHORN_PS
from rllib_fair.rllib.targets import STEP_DISPARITY, Metric, OwnMetrics
from rllib_fair.settings import choice, integer, number


class FPPOLConfig(POCARConfig):
    """Config of F-PPO-L: :class:`POCARConfig` plus the long-term W terms.

    Attributes:
        beta_3: weight of ``mm(l1)`` (W increase while the TPR gap exceeds omega).
        beta_4: weight of ``mm(l2)`` (W decrease while it does not).
        w1_form: ``"reference"`` (the reference's Sinkhorn divergence between the two
            groups' bin counts), ``"sorted_counts"`` (the exact W1 between those counts)
            or ``"intended"`` (W1 of the normalised bin distributions).
        w1_window: decided applicants in the histograms, the current one included
            (reference: 300).
        w1_p: cost exponent of the Sinkhorn divergence, 1 or 2 (reference: 1).
        w1_blur: its final blur scale (reference: 0.01; the temperature is blur^p).
        w1_scaling: its annealing ratio in (0, 1) (reference: 0.5).
    """

    #: A-PPO's Delta_t and dW_t, written into the step infos on the env runners (see
    #: AddQualificationColumns).
    ENV_RUNNER_ANNOTATORS = (*POCARConfig.ENV_RUNNER_ANNOTATORS, LongTermW1())

    #: The long-term W1 term, gated by the per-step disparity (A-PPO's Delta_t).
    own_metrics: ClassVar[OwnMetrics] = OwnMetrics(
        constraints=(
            Metric(
                "learners/default_policy/fppol/w1_delta_mean",
                "W1 change",
                "mean per-step change dW_t of the Wasserstein-1 distance between the groups' "
                "credit histograms (learner)",
                lower_is_better=True,
            ),
            STEP_DISPARITY,
        ),
        note="the env's reward; A-PPO's advantage terms plus the long-term W1 terms",
    )

    DECLARED_SETTINGS = (
        number("beta_3", "weight of mm(l1): W increase while the TPR gap exceeds omega", 0),
        number("beta_4", "weight of mm(l2): W decrease while it does not", 0),
        choice("w1_form", W1_FORMS, "which distance between the groups' bin histograms"),
        integer("w1_window", "decided applicants in the histograms (the current included)", 1),
        integer("w1_p", "cost exponent of the Sinkhorn divergence", choices=SINKHORN_PS),
        number("w1_blur", "final blur scale of the Sinkhorn divergence", 0, low_open=True),
        number(
            "w1_scaling",
            "annealing ratio of the Sinkhorn divergence",
            0,
            1,
            low_open=True,
            high_open=True,
        ),
    )
    REPORTED_KEYS = ("learners/*/fppol/*",)

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or FPPOL)
        self.beta_1 = 0.0  # the reference's F-PPO-L has beta_1 = beta_2 = 0
        self.beta_2 = 0.0
        self.beta_3: float = 1.12
        self.beta_4: float = 1.0
        self.w1_form: str = "reference"
        self.w1_window: int = 300
        self.w1_p: int = 1
        self.w1_blur: float = 0.01
        self.w1_scaling: float = 0.5
        self.fairness_disparity_window = 301  # the reference's TPRs: 300 + the current
        self.use_kl_loss = False  # the reference: no KL penalty for A-PPO and F-PPO-L

    @override(POCARConfig)
    def training(
        self,
        *,
        beta_3=NotProvided,
        beta_4=NotProvided,
        w1_form=NotProvided,
        w1_window=NotProvided,
        w1_p=NotProvided,
        w1_blur=NotProvided,
        w1_scaling=NotProvided,
        **kwargs,
    ):
        """POCAR's ``training()`` plus F-PPO-L's settings (see the class attributes)."""
        super().training(**kwargs)
        return set_provided(
            self,
            beta_3=beta_3,
            beta_4=beta_4,
            w1_form=w1_form,
            w1_window=w1_window,
            w1_p=w1_p,
            w1_blur=w1_blur,
            w1_scaling=w1_scaling,
        )

    @override(POCARConfig)
    def get_default_learner_class(self):
        """Returns :class:`FPPOLTorchLearner`."""
        from rllib_fair.algorithms.fppol.torch.fppol_torch_learner import FPPOLTorchLearner

        return FPPOLTorchLearner

    @override(POCARConfig)
    def build_learner_connector(self, input_observation_space, input_action_space, device=None):
        """POCAR's pipeline plus :class:`AddQualificationColumns` (the dW_t column)."""
        pipeline = super().build_learner_connector(
            input_observation_space, input_action_space, device=device
        )
        return add_qualification_columns(
            self, pipeline, input_observation_space, input_action_space
        )

    @override(POCARConfig)
    def validate(self) -> None:
        """POCAR's checks, then F-PPO-L's (one-line messages)."""
        super().validate()
        if not emits_qualification_info(self.env):
            raise ValueError(
                f"env: {self.env!r} emits no credit_bin infos; valid: fair/LendingDrift-v0 or "
                "an env class with QUALIFICATION_INFO = True"
            )


class FPPOL(PPO):
    """RLlib PPO with F-PPO-L's regularised advantages (see module docstring)."""

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> FPPOLConfig:
        """Returns a fresh :class:`FPPOLConfig`."""
        return FPPOLConfig()
