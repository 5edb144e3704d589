"""F-PPO-L (Hu, Lear & Zhang 2023), the long-term-fairness baseline of Lear & Zhang 2025.

POCAR's advantage regularisation (A-PPO, :mod:`rllib_fair.algorithms.pocar`) plus two
terms on the change of the 1-Wasserstein distance between the two groups' recent
credit-bin histograms (spec §3.6, reference ``F_PPO_BD``)::

    A' = standardise(beta_0 mm(A) + beta_1 mm(vt) + beta_2 mm(div)
                     + beta_3 mm(l1) + beta_4 mm(l2))
    l1 = min(0, -1[Delta_t > omega] dW_t),   l2 = max(0, -(1 - 1[Delta_t > omega]) dW_t)

with ``mm`` the per-minibatch min-max normalisation, ``Delta_t`` the TPR gap over the
last ``fairness_disparity_window`` decisions and ``dW_t = W_t - W_{t-1}``, W over the
last ``w1_window`` decided applicants (:func:`rllib_fair.fairness.qualification.windowed_count_w1`;
``w1_form="reference"``: the sorted-count form the reference computes, ``"intended"``: W1
between the normalised bin distributions). No KL penalty. Defaults are the reference's:
beta_0 = 1, beta_1 = beta_2 = 0 (erratum E4), beta_3 = 1.12, beta_4 = 1, omega = 0.005,
windows 301 (the reference counts the current decision plus the last 300, erratum E3).
"""

from __future__ import annotations

from typing import ClassVar

from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.ppo import PPO

from rllib_fair.algorithms.pocar.pocar import POCARConfig
from rllib_fair.algorithms.ppoc.ppoc import (
    _choice,
    add_qualification_columns,
    emits_qualification_info,
)
from rllib_fair.algorithms.rppo.rppo import _non_negative

W1_FORMS = ("reference", "intended")


class FPPOLConfig(POCARConfig):
    """Config of F-PPO-L: :class:`POCARConfig` plus the long-term W1 terms.

    Attributes:
        beta_3: weight of ``mm(l1)`` (W1 increase while the TPR gap exceeds omega).
        beta_4: weight of ``mm(l2)`` (W1 decrease while it does not).
        w1_form: ``"reference"`` (sorted bin counts, what the reference computes; spec
            P17) or ``"intended"`` (W1 of the normalised bin distributions).
        w1_window: decided applicants in the W1 histograms (reference 300 + the current).
    """

    #: The metrics callback writes dW_t into the step infos (see AddQualificationColumns).
    needs_long_term_w1: ClassVar[bool] = True

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or FPPOL)
        self.beta_1 = 0.0  # erratum E4: the reference's F-PPO-L has beta_1 = beta_2 = 0
        self.beta_2 = 0.0
        self.beta_3: float = 1.12
        self.beta_4: float = 1.0
        self.w1_form: str = "reference"
        self.w1_window: int = 301
        self.fairness_disparity_window = 301  # erratum E3
        self.use_kl_loss = False  # spec §3.5: no KL for A-PPO and F-PPO-L

    def training(
        self,
        *,
        beta_3=NotProvided,
        beta_4=NotProvided,
        w1_form=NotProvided,
        w1_window=NotProvided,
        **kw,
    ):
        """POCAR's ``training()`` plus F-PPO-L's settings (see the class attributes)."""
        super().training(**kw)
        for key, value in (
            ("beta_3", beta_3),
            ("beta_4", beta_4),
            ("w1_form", w1_form),
            ("w1_window", w1_window),
        ):
            if value is not NotProvided:
                setattr(self, key, value)
        return self

    def get_default_learner_class(self):
        """Returns :class:`FPPOLTorchLearner`."""
        from rllib_fair.algorithms.ppoc.fppol_learner import FPPOLTorchLearner

        return FPPOLTorchLearner

    def build_learner_connector(self, input_observation_space, input_action_space, device=None):
        """POCAR's pipeline plus :class:`AddQualificationColumns` (the dW_t column)."""
        pipeline = super().build_learner_connector(
            input_observation_space, input_action_space, device=device
        )
        return add_qualification_columns(
            self, pipeline, input_observation_space, input_action_space
        )

    def validate(self) -> None:
        """POCAR's checks, then F-PPO-L's (one-line messages)."""
        super().validate()
        if not emits_qualification_info(self.env):
            raise ValueError(
                f"env: {self.env!r} emits no credit_bin infos; valid: fair/LendingDrift-v0 or "
                "an env class with QUALIFICATION_INFO = True"
            )
        for key in ("beta_3", "beta_4"):
            _non_negative(key, getattr(self, key))
        _choice("w1_form", self.w1_form, W1_FORMS)
        w = self.w1_window
        if isinstance(w, bool) or not isinstance(w, int) or w < 1:
            raise ValueError(f"w1_window: {w!r} is invalid; valid: an integer >= 1")
        if not self.fairness_metrics:
            raise ValueError(
                "fairness_metrics: False is invalid for FPPOLConfig (its metrics callback "
                "attaches dW_t); valid: true"
            )


class FPPOL(PPO):
    """RLlib PPO with F-PPO-L's regularised advantages (see module docstring)."""

    @classmethod
    def get_default_config(cls) -> FPPOLConfig:
        """Returns a fresh :class:`FPPOLConfig`."""
        return FPPOLConfig()
