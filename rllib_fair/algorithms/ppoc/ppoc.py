"""PPO-C, PPO-Cb and the paper's "PPO" (PPO-KL): Lear & Zhang, ICLR 2025.

"A Causal Lens for Learning Long-Term Fair Policies"; the method, our choices and the
corrections we found: docs/methods/lear2025.md, "PPO-KL, PPO-C and PPO-Cb". Per minibatch
B the learner minimises (Eq. 2 in Sec. 3.3, Eq. 5 in Sec. 3.5)::

    loss = -L^CLIP + beta_KL KL(pi_old || pi) + c_vf L^VF           (PPO-KL, Sec. 4.1)
           + beta_C * C_hat^2                                        (PPO-C, Eq. 2)
           + beta_Lambda * Lambda_hat                                (PPO-Cb, Eq. 5)

with ``C_hat = mean_{t in B0}(q~_t r_t) - mean_{t in B1}(q~_t r_t)`` (the estimator of
Sec. 3.3), ``q_t`` the Monte Carlo qualification gain-to-go of the *same individual* over
the rest of the episode (no critic, as in the authors' code), ``q~`` standardised over
the minibatch with both groups pooled, ``r_t = pi/pi_old`` unclipped, and ``Lambda_hat``
the benefit-fairness measure of Sec. 3.5 over all of the minibatch's cross-group pairs. See
``README.md`` in this folder for the equation -> line map and the choices.

Registered names (one set of classes): ``PPOC`` (beta_C = 0.65, beta_Lambda = 0),
``PPOCb`` (beta_Lambda = 1.0) and ``PPOKL`` (beta_C = beta_Lambda = 0: the paper's PPO
baseline, clipped surrogate plus a fixed KL penalty of 1.5).
"""

from __future__ import annotations

from typing import ClassVar

from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.ppo import PPO
from ray.rllib.utils.annotations import override

from rllib_fair.algorithms.common.annotators import QualificationReturns
from rllib_fair.algorithms.common.connectors import (
    add_qualification_columns,
    emits_qualification_info,
)
from rllib_fair.algorithms.common.setters import set_provided
from rllib_fair.algorithms.ppo.ppo import FairPPOConfig
from rllib_fair.rllib.targets import Metric, OwnMetrics
from rllib_fair.settings import Rule, bool_setting, choice, number

Q_NORMALIZATIONS = ("minibatch", "none")
LAMBDA_WEIGHTINGS = ("minibatch", "population")
V_PI0_VARIANTS = ("reference", "shadow", "exact")
AVERAGES = ("visited", "population")
ADV_STANDARDIZATIONS = ("minibatch", "batch")

#: The groups' gap in realised qualification gain, PPO-C's target (Eq. 2).
QUALIFICATION_GAIN_GAP = Metric(
    "fairness/qualification_gain/gain_gap_abs",
    "qualification-gain gap",
    "|G_0 - G_1|: gap between the groups' total qualification gain per episode",
    lower_is_better=True,
)


class PPOCConfig(FairPPOConfig):
    """Config of PPO-C / PPO-Cb / PPO-KL: :class:`FairPPOConfig` plus Eq. 2 and Eq. 5.

    Attributes:
        beta_c: weight of ``C_hat^2`` (Eq. 2). Paper: 0.65 (Setting 1), 0.75 (Settings 2, 3).
        beta_lambda: weight of ``Lambda_hat`` (Eq. 5). PPO-Cb: 1.0; PPO-C and PPO-KL: 0.
        lambda_epsilon: epsilon of Lambda (Sec. 3.5; the reference's ``B_EPSILON`` 1e-6).
        q_normalization: ``"minibatch"`` (reference: q standardised over the minibatch,
            both groups pooled, torch's unbiased std + 1e-8) or ``"none"`` (raw q).
        lambda_weighting: ``"minibatch"`` (reference: every cross-group pair of the
            minibatch weighs ``1/(|B0||B1|)``) or ``"population"`` (pairs reweighted so
            each group's steps weigh their bin's share of the initial population,
            the paper's ``P(x|s+) P(x'|s-)``, Sec. 3.5).
        kl_coeff_adaptive: False (the paper's fixed penalty): the KL coefficient stays ``kl_coeff``
            (1.5); True restores RLlib's adaptive update.
        advantage_standardization: ``"minibatch"`` (reference, SB3: advantages
            re-standardised per minibatch) or ``"batch"`` (RLlib's GAE piece only, over
            the train batch).
        adam_epsilon: Adam's epsilon (SB3's 1e-5, the reference; RLlib's default 1e-8).
        decomposition_v_pi0: which V_pi0 estimate the headline ``fairness/qualification_gain``
            C/DPE/IPE/SPE use: ``"reference"`` (the paper's heuristic, Fig. 5),
            ``"shadow"`` (unbiased Monte Carlo) or ``"exact"`` (tabular); all three are logged.
        decomposition_average: ``"visited"`` (reference) or ``"population"``.
        allow_partial_episodes: with False (default) ``batch_mode`` must be
            ``complete_episodes`` (q needs whole episodes); True treats a chunk end as the
            episode end (biased q).
    """

    #: The per-step Monte Carlo gains-to-go, written into the step infos on the env
    #: runners (they travel with their steps when RLlib shards episodes over
    #: data-parallel learners); the learner connector turns them into columns.
    ENV_RUNNER_ANNOTATORS = (QualificationReturns(),)

    #: Its target is the qualification-gain gap between the groups (C_hat^2, Eq. 2).
    own_metrics: ClassVar[OwnMetrics] = OwnMetrics(
        constraints=(QUALIFICATION_GAIN_GAP,),
        note="the env's reward; loss plus beta_c C_hat^2 (Eq. 2)",
    )

    DECLARED_SETTINGS = (
        number("beta_c", "weight of the squared qualification-gain gap estimate (Eq. 2)", 0),
        number("beta_lambda", "weight of the benefit-fairness term Lambda (Eq. 5)", 0),
        number("lambda_epsilon", "epsilon of Lambda", 0, low_open=True),
        choice(
            "q_normalization",
            Q_NORMALIZATIONS,
            "minibatch: q standardised over the minibatch (reference); none: raw q",
        ),
        choice(
            "lambda_weighting",
            LAMBDA_WEIGHTINGS,
            "weights of Lambda's cross-group pairs (minibatch: uniform, the reference)",
        ),
        bool_setting("kl_coeff_adaptive", "RLlib's adaptive KL coefficient (false: fixed)"),
        choice(
            "advantage_standardization",
            ADV_STANDARDIZATIONS,
            "minibatch: advantages standardised per minibatch (reference); batch: RLlib's",
        ),
        number("adam_epsilon", "Adam's epsilon", 0, low_open=True),
        choice(
            "decomposition_v_pi0",
            V_PI0_VARIANTS,
            "V_pi0 estimate of the headline qualification-gain decomposition",
        ),
        choice(
            "decomposition_average",
            AVERAGES,
            "average of the decomposition (visited: the reference's)",
        ),
        bool_setting(
            "allow_partial_episodes",
            "treat a chunk end as the episode end (biased q); false needs whole episodes",
        ),
    )
    DECLARED_RULES = (
        Rule(
            "whole_episodes",
            ("batch_mode", "allow_partial_episodes"),
            "batch_mode complete_episodes unless allow_partial_episodes (q needs whole episodes)",
            lambda v: (
                None
                if v["batch_mode"] == "complete_episodes" or v["allow_partial_episodes"]
                else (
                    f"batch_mode: {v['batch_mode']!r} is invalid for PPO-C (the Monte Carlo "
                    "gains need whole episodes); valid: complete_episodes (or set "
                    "allow_partial_episodes: true)"
                )
            ),
            {"batch_mode": "truncate_episodes"},
        ),
    )
    REPORTED_KEYS = ("learners/*/ppoc/*",)

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or PPOC)
        self.beta_c: float = 0.65
        self.beta_lambda: float = 0.0
        self.lambda_epsilon: float = 1e-6
        self.q_normalization: str = "minibatch"
        self.lambda_weighting: str = "minibatch"
        self.kl_coeff_adaptive: bool = False
        self.advantage_standardization: str = "minibatch"
        self.adam_epsilon: float = 1e-5
        self.decomposition_v_pi0: str = "reference"
        self.decomposition_average: str = "visited"
        self.allow_partial_episodes: bool = False
        # The paper's method (Sec. 4.1 and the authors' code), not the experiment: fixed KL
        # penalty 1.5, vf coefficient 0.5 without value clipping, global grad-norm 0.5,
        # no entropy bonus, whole episodes.
        self.use_kl_loss = True
        self.kl_coeff = 1.5
        self.vf_loss_coeff = 0.5
        self.vf_clip_param = float("inf")
        self.grad_clip = 0.5
        self.grad_clip_by = "global_norm"
        self.entropy_coeff = 0.0
        self.batch_mode = "complete_episodes"

    @override(FairPPOConfig)
    def training(
        self,
        *,
        beta_c=NotProvided,
        beta_lambda=NotProvided,
        lambda_epsilon=NotProvided,
        q_normalization=NotProvided,
        lambda_weighting=NotProvided,
        kl_coeff_adaptive=NotProvided,
        advantage_standardization=NotProvided,
        adam_epsilon=NotProvided,
        decomposition_v_pi0=NotProvided,
        decomposition_average=NotProvided,
        allow_partial_episodes=NotProvided,
        **kwargs,
    ):
        """PPO's ``training()`` plus PPO-C's settings (see the class attributes)."""
        super().training(**kwargs)
        return set_provided(
            self,
            beta_c=beta_c,
            beta_lambda=beta_lambda,
            lambda_epsilon=lambda_epsilon,
            q_normalization=q_normalization,
            lambda_weighting=lambda_weighting,
            kl_coeff_adaptive=kl_coeff_adaptive,
            advantage_standardization=advantage_standardization,
            adam_epsilon=adam_epsilon,
            decomposition_v_pi0=decomposition_v_pi0,
            decomposition_average=decomposition_average,
            allow_partial_episodes=allow_partial_episodes,
        )

    @override(FairPPOConfig)
    def get_default_learner_class(self):
        """Returns :class:`PPOCTorchLearner`."""
        from rllib_fair.algorithms.ppoc.torch.ppoc_torch_learner import PPOCTorchLearner

        return PPOCTorchLearner

    @override(FairPPOConfig)
    def build_learner_connector(self, input_observation_space, input_action_space, device=None):
        """The fairness pipeline plus :class:`AddQualificationColumns` after the fairness piece."""
        pipeline = super().build_learner_connector(
            input_observation_space, input_action_space, device=device
        )
        return add_qualification_columns(
            self, pipeline, input_observation_space, input_action_space
        )

    @override(FairPPOConfig)
    def validate(self) -> None:
        """The declared checks, PPO's and the fairness ones, then PPO-C's env checks."""
        super().validate()
        self.validate_qualification()

    def validate_qualification(self) -> None:
        """The env (it must emit qualification gains) and the fairness wiring PPO-C needs."""
        if not emits_qualification_info(self.env):
            raise ValueError(
                f"env: {self.env!r} emits no qualification-gain infos (individual, qual_gain, "
                "qual_gain_ps, benefit); valid: fair/LendingDrift-v0 or an env class with "
                "QUALIFICATION_INFO = True"
            )
        if not self.fairness_columns:
            raise ValueError(
                f"fairness_columns: False is invalid for {type(self).__name__}; valid: true"
            )


class PPOC(PPO):
    """RLlib PPO with PPO-C's (Eq. 2) and PPO-Cb's (Eq. 5) loss terms."""

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> PPOCConfig:
        """Returns a fresh :class:`PPOCConfig` (PPO-C's defaults)."""
        return PPOCConfig()


class PPOCbConfig(PPOCConfig):
    """PPO-Cb (Eq. 5): PPO-C with ``beta_lambda = 1.0`` by default (the reference's value)."""

    #: PPO-C's target plus the benefit-fairness term Lambda (Eq. 5).
    own_metrics: ClassVar[OwnMetrics] = OwnMetrics(
        constraints=(
            QUALIFICATION_GAIN_GAP,
            Metric(
                "learners/default_policy/ppoc/lambda",
                "benefit fairness Lambda",
                "benefit-fairness term Lambda over the minibatches' cross-group pairs "
                "(learner, mean over the update)",
                lower_is_better=True,
            ),
        ),
        note="the env's reward; loss plus beta_c C_hat^2 + beta_lambda Lambda (Eq. 2, 5)",
    )

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or PPOCb)
        self.beta_lambda = 1.0


class PPOCb(PPOC):
    """PPO-Cb: the PPO-C classes with ``beta_lambda = 1.0``."""

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> PPOCbConfig:
        """Returns a fresh :class:`PPOCbConfig`."""
        return PPOCbConfig()


class PPOKLConfig(PPOCConfig):
    """The paper's "PPO": clipped surrogate + fixed KL 1.5 (``beta_c = beta_lambda = 0``)."""

    #: A baseline: no fairness term.
    own_metrics: ClassVar[OwnMetrics] = OwnMetrics(
        note="unconstrained: maximises the env's reward only (fixed KL penalty 1.5)"
    )

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or PPOKL)
        self.beta_c = 0.0
        self.beta_lambda = 0.0


class PPOKL(PPOC):
    """PPO-KL: the PPO-C classes with both fairness weights 0."""

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> PPOKLConfig:
        """Returns a fresh :class:`PPOKLConfig`."""
        return PPOKLConfig()
