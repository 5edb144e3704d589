"""POCAR / A-PPO: advantage regularisation with the per-step disparity.

Yu et al. 2022 (POCAR, their Eq. for A-PPO); Xu et al. 2024, App. D.2, Eq. 28;
Valdrighi et al., App. (Eq. 72). With Delta_t the per-step disparity after the decision
at t and Delta_{t-1} the one before it:

    A'_t = beta_0 A_t + beta_1 min(0, omega - Delta_t)
           + beta_2 min(0, -(Delta_t - Delta_{t-1})) * 1[Delta_t > omega]

(``delta_timing="post"``, the reference code, where Delta is read after the env step) or,
with ``delta_timing="pre"``, the paper's literal indexing Delta(s_t) = Delta_{t-1},
Delta(s_{t+1}) = Delta_t:

    A'_t = beta_0 A_t + beta_1 min(0, omega - Delta_{t-1})
           + beta_2 min(0, Delta_{t-1} - Delta_t) * 1[Delta_{t-1} > omega]

``advantage_normalization="minmax"`` (default) is the reference code: A, the
value-thresholding term and the decrease-in-violation term are each min-max normalised
per minibatch before they are combined, and the result is standardised. It is the
default because it is what produced the published results, and because the raw terms
(Delta ~ 1e-2 with beta ~ 0.25) are two orders of magnitude smaller than standardised
advantages, so the paper's raw form barely moves the policy. ``"none"`` is the paper's
formula on RLlib's (standardised) GAE advantages.
"""

from __future__ import annotations

from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.ppo import PPO
from ray.rllib.utils.annotations import override

from rllib_fair.algorithms.common.setters import set_provided
from rllib_fair.algorithms.ppo.ppo import FairPPOConfig
from rllib_fair.rllib.annotators import StepDisparity
from rllib_fair.rllib.keys import POCAR_REGULARIZER_MAX
from rllib_fair.rllib.targets import STEP_DISPARITY, OwnMetrics
from rllib_fair.settings import choice, number

NORMALIZATIONS = ("minmax", "none")
TIMINGS = ("post", "pre")


class POCARConfig(FairPPOConfig):
    """Config of POCAR (A-PPO): :class:`FairPPOConfig` plus advantage regularisation.

    Attributes:
        beta_0: weight of PPO's advantage.
        beta_1: weight of the value-thresholding term ``min(0, omega - Delta)``.
        beta_2: weight of the decrease-in-violation term.
        omega: disparity tolerance (paper: 0.005 lending, 0.05 attention and infectious).
        advantage_normalization: ``"minmax"`` (reference, default) or ``"none"`` (paper).
        delta_timing: ``"post"`` (reference, default) or ``"pre"`` (paper's indexing).
        adam_epsilon: Adam's epsilon. Default 1e-5: the reference code trains with
            Stable-Baselines3's PPO, whose Adam uses 1e-5 (torch's and RLlib's default
            is 1e-8).
    """

    #: The per-step disparity Delta_t, written into the step infos on the env runners.
    ENV_RUNNER_ANNOTATORS = (StepDisparity(),)

    #: Advantages regularised by the per-step disparity Delta_t (Eq. 28).
    own_metrics = OwnMetrics(
        constraints=(STEP_DISPARITY,),
        note="the env's reward; advantages regularised by Delta_t against omega (Eq. 28)",
    )

    #: A run whose learner metric ``pocar_regularizer_max`` (:mod:`rllib_fair.rllib.keys`)
    #: was 0 at every iteration trained exactly as it would have with any other
    #: ``beta_1`` and ``beta_2`` (both multiply terms that were 0 throughout; e.g. the
    #: accepted-only equal-opportunity disparity, which is 0 by construction).
    #: ``rllib-fair reproduce`` copies such a run to the grid's other points instead of
    #: training them (a plan method's ``share_inert_grid``).
    INERT_GRID = {"metric": POCAR_REGULARIZER_MAX, "keys": ("beta_1", "beta_2")}
    REPORTED_KEYS = (f"learners/*/{POCAR_REGULARIZER_MAX}",)

    #: Oracle label access when the regularised disparity uses true labels, else observed.
    label_access_follows_disparity_source = True

    DECLARED_SETTINGS = (
        number("beta_0", "weight of PPO's advantage", 0),
        number("beta_1", "weight of the value-thresholding term min(0, omega - Delta)", 0),
        number("beta_2", "weight of the decrease-in-violation term", 0),
        number("omega", "disparity tolerance", 0),
        choice(
            "advantage_normalization",
            NORMALIZATIONS,
            "minmax: the reference's normalisation; none: the paper's",
        ),
        choice("delta_timing", TIMINGS, "post: Delta after the step (reference); pre: paper"),
        number("adam_epsilon", "Adam's epsilon", 0, low_open=True),
    )

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or POCAR)
        self.beta_0: float = 1.0
        self.beta_1: float = 0.25
        self.beta_2: float = 0.25
        self.omega: float = 0.005
        self.advantage_normalization: str = "minmax"
        self.delta_timing: str = "post"
        self.adam_epsilon: float = 1e-5

    @override(FairPPOConfig)
    def training(
        self,
        *,
        beta_0=NotProvided,
        beta_1=NotProvided,
        beta_2=NotProvided,
        omega=NotProvided,
        advantage_normalization=NotProvided,
        delta_timing=NotProvided,
        adam_epsilon=NotProvided,
        **kwargs,
    ):
        """PPO's ``training()`` plus POCAR's settings (see the class attributes)."""
        super().training(**kwargs)
        return set_provided(
            self,
            beta_0=beta_0,
            beta_1=beta_1,
            beta_2=beta_2,
            omega=omega,
            advantage_normalization=advantage_normalization,
            delta_timing=delta_timing,
            adam_epsilon=adam_epsilon,
        )

    @override(FairPPOConfig)
    def get_default_learner_class(self):
        """Returns :class:`POCARTorchLearner`."""
        from rllib_fair.algorithms.pocar.torch.pocar_torch_learner import POCARTorchLearner

        return POCARTorchLearner


class POCAR(PPO):
    """RLlib PPO with POCAR's regularised advantages (see module docstring)."""

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> POCARConfig:
        """Returns a fresh :class:`POCARConfig`."""
        return POCARConfig()
