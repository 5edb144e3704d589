"""SELLF (Valdrighi et al., "Long-term fairness with selective labels", ICML 2026).

PPO for a decision-maker who only observes the label of accepted individuals. Pieces
(Alg. 1, Sec. 4) and where they live:

* label predictor phi(x, z) (logistic by default, ``predictor_hiddens`` for an MLP) in
  the RLModule, present on the env runners so every step carries its prediction
  (:class:`~.torch.sellf_torch_rl_module.SELLFTorchRLModule`);
* imputed per-step disparity Delta-tilde over the last ``fairness_disparity_window``
  decisions from Y-tilde = A Y + (1 - A) phi(x) (``fairness_disparity_source:
  imputed``; computed on the env runner from observed labels only, see
  :mod:`rllib_fair.fairness.sequence`), with Delta-tilde_{t+1} for qualification parity;
* advantage regularisation A - beta_1 max(|Delta-tilde| - omega / 2, 0) (Sec. 4;
  ``advantage_normalization: minmax`` is the reference's min-max form);
* Renyi loss beta_2 L^Renyi (Eq. 6) with c^i = r^i (r^i / phi-tilde^i for equality of
  opportunity), added to PPO's loss;
* IPW weights w(x, i) (Eq. 3) from the acceptance probability under the current policy
  and ``policy_samples`` policies drawn from a store of past policy snapshots;
* the predictor trained every iteration on the memory of accepted samples with the
  self-normalised IPW cross-entropy of Eq. 7 (``predictor_steps`` Adam steps, learning
  rate ``predictor_lr`` decayed by ``predictor_lr_decay`` per iteration, App. E).

Predictor, memory and policy store are part of the learner / module state, so they
survive checkpoints. Labels of rejected individuals never reach the learner
(``fairness_label_access: observed``, the default here).
"""

from __future__ import annotations

from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.ppo import PPO
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.utils.annotations import override

from rllib_fair.algorithms.common.setters import set_provided
from rllib_fair.algorithms.ppo.ppo import FairPPOConfig
from rllib_fair.rllib.annotators import StepDisparity
from rllib_fair.rllib.targets import STEP_DISPARITY, Metric, OwnMetrics
from rllib_fair.settings import Rule, Setting, choice, integer, number

NORMALIZATIONS = ("paper", "minmax")
RENYI_FORMS = ("paper", "reference")


class SELLFConfig(FairPPOConfig):
    """Config of SELLF: :class:`FairPPOConfig` plus the selective-labels machinery.

    Attributes:
        beta_1: weight of the disparity penalty on the advantage (paper grid 1, 2, 5, 10).
        beta_2: weight of the Renyi loss (paper grid 0.01, 0.05, 0.1).
        omega: disparity tolerance (paper 0.05; the penalty starts at omega / 2).
        advantage_normalization: ``"paper"`` (A - beta_1 max(|Delta| - omega/2, 0) on
            RLlib's standardised advantages) or ``"minmax"`` (reference: min-max
            normalise A and the penalty term per minibatch, combine, standardise).
        renyi_form: ``"paper"``: Eq. 6, ``c^1 E_{D_A}[w^2 | Z=1] + c^0 E_{D_A}[w^2 | Z=0]``
            with w of Eq. 3 (its ``a^i / r^i`` factor included) and ``c^i = r^i``;
            ``"reference"``: the reference code's ``(c0 E0 + c1 E1) / (c0 + c1)`` of
            ``(1 - pi)^2 / pi_all`` with ``c^i = a^i / r^i``, whose per-group weights are
            normalised. Default ``reference``: with the paper's form the detached
            ``a / r`` factor grows as the rejection rate falls, and on FICO lending any
            beta_2 that moves the disparity pushes the policy to accept everyone.
        predictor_hiddens: hidden sizes of phi; ``[]`` is the paper's logistic model.
        predictor_lr: Adam learning rate of phi (App. E: 1e-2).
        predictor_lr_decay: per-iteration exponential decay of it (App. E: 0.95).
        predictor_steps: gradient steps of phi per iteration (App. E: 25).
        predictor_batch_size: memory samples per predictor step (Alg. 1 samples a
            minibatch from M for each step; 64, App. E's minibatch size and the
            authors' code; None: the whole memory).
        memory_size: most recent accepted samples kept (the reference keeps all).
        policy_store_size: most recent policy snapshots kept.
        policy_samples: stored policies drawn for the acceptance probability (App. E: 10).
    """

    #: The per-step disparity Delta_t, written into the step infos on the env runners.
    ENV_RUNNER_ANNOTATORS = (StepDisparity(),)
    provides_label_predictions = True

    #: The disparity it regularises (imputed by default), then the true one it aims at.
    own_metrics = OwnMetrics(
        constraints=(
            STEP_DISPARITY,
            Metric(
                "fairness/{notion}/selective/true_disparity_mean",
                "true Delta_t {notion}",
                "per-step disparity of {notion} from every individual's true label, over "
                "the disparity window (what the imputed one stands in for)",
                lower_is_better=True,
            ),
        ),
        note="the env's reward; advantages penalised by beta_1 max(|Delta_t| - omega / 2, 0) "
        "plus a Renyi loss (Eq. 6, 7)",
    )

    DECLARED_SETTINGS = (
        number("beta_1", "weight of the disparity penalty on the advantage", 0),
        number("beta_2", "weight of the Renyi loss", 0),
        number("omega", "disparity tolerance (the penalty starts at omega / 2)", 0),
        choice(
            "advantage_normalization",
            NORMALIZATIONS,
            "paper: penalty on standardised advantages; minmax: the reference's",
        ),
        choice("renyi_form", RENYI_FORMS, "Eq. 6 (paper) or the reference code's form"),
        Setting(
            "predictor_hiddens",
            "list",
            "hidden sizes of the label predictor ([]: logistic model)",
            item=integer("", "", 1),
        ),
        number("predictor_lr", "Adam learning rate of the predictor", 0, low_open=True),
        number(
            "predictor_lr_decay",
            "per-iteration decay factor of that rate",
            0,
            1,
            low_open=True,
        ),
        integer("predictor_steps", "predictor gradient steps per iteration", 1),
        integer(
            "predictor_batch_size",
            "memory samples per predictor step",
            1,
            none=True,
            none_means="the whole memory",
        ),
        integer("memory_size", "most recent accepted samples kept for the predictor", 1),
        integer("policy_store_size", "most recent policy snapshots kept", 1),
        integer("policy_samples", "stored policies drawn for the acceptance probability", 1),
    )
    DECLARED_RULES = (
        Rule(
            "samples_fit_store",
            ("policy_samples", "policy_store_size"),
            "policy_samples <= policy_store_size (more draws than stored policies are never made)",
            lambda v: (
                None
                if v["policy_samples"] <= v["policy_store_size"]
                else (
                    f"policy_samples: {v['policy_samples']!r} is invalid; valid: an integer in "
                    f"[1, policy_store_size={v['policy_store_size']!r}]"
                )
            ),
            {"policy_samples": 20, "policy_store_size": 10},
        ),
        Rule(
            "batch_fits_memory",
            ("predictor_batch_size", "memory_size"),
            "predictor_batch_size <= memory_size (a larger batch is the whole memory)",
            lambda v: (
                None
                if v["predictor_batch_size"] is None
                or v["predictor_batch_size"] <= v["memory_size"]
                else (
                    f"predictor_batch_size: {v['predictor_batch_size']!r} is invalid; valid: an "
                    f"integer in [1, memory_size={v['memory_size']!r}] or null (the whole memory)"
                )
            ),
            {"predictor_batch_size": 2000, "memory_size": 1000},
        ),
    )
    REPORTED_KEYS = (
        "learners/*/disparity_penalty_mean",
        "learners/*/max_ipw_weight",
        "learners/*/memory_size",
        "learners/*/predictor_loss",
        "learners/*/renyi_loss",
    )

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or SELLF)
        self.beta_1: float = 5.0
        self.beta_2: float = 0.1
        self.omega: float = 0.05
        self.advantage_normalization: str = "paper"
        self.renyi_form: str = "reference"
        self.predictor_hiddens: list[int] = []
        self.predictor_lr: float = 1e-2
        self.predictor_lr_decay: float = 0.95
        self.predictor_steps: int = 25
        self.predictor_batch_size: int | None = 64
        self.memory_size: int = 200_000
        self.policy_store_size: int = 500
        self.policy_samples: int = 10
        # SELLF's defaults for the shared settings: imputed disparity over the last
        # 4,000 decisions (the reference: the last n_applicants decisions).
        self.fairness_disparity_source = "imputed"
        self.fairness_disparity_window = 4000

    @override(FairPPOConfig)
    def training(
        self,
        *,
        beta_1=NotProvided,
        beta_2=NotProvided,
        omega=NotProvided,
        advantage_normalization=NotProvided,
        renyi_form=NotProvided,
        predictor_hiddens=NotProvided,
        predictor_lr=NotProvided,
        predictor_lr_decay=NotProvided,
        predictor_steps=NotProvided,
        predictor_batch_size=NotProvided,
        memory_size=NotProvided,
        policy_store_size=NotProvided,
        policy_samples=NotProvided,
        **kwargs,
    ):
        """PPO's ``training()`` plus SELLF's settings (see the class attributes)."""
        super().training(**kwargs)
        return set_provided(
            self,
            beta_1=beta_1,
            beta_2=beta_2,
            omega=omega,
            advantage_normalization=advantage_normalization,
            renyi_form=renyi_form,
            predictor_hiddens=predictor_hiddens,
            predictor_lr=predictor_lr,
            predictor_lr_decay=predictor_lr_decay,
            predictor_steps=predictor_steps,
            predictor_batch_size=predictor_batch_size,
            memory_size=memory_size,
            policy_store_size=policy_store_size,
            policy_samples=policy_samples,
        )

    @property
    @override(FairPPOConfig)
    def _model_config_auto_includes(self):
        return super()._model_config_auto_includes | {
            "predictor_hiddens": list(self.predictor_hiddens)
        }

    @override(FairPPOConfig)
    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """PPO's module spec with the SELLF module class."""
        from rllib_fair.algorithms.sellf.torch.sellf_torch_rl_module import SELLFTorchRLModule

        spec = super().get_default_rl_module_spec()
        spec.module_class = SELLFTorchRLModule
        return spec

    @override(FairPPOConfig)
    def get_default_learner_class(self):
        """Returns :class:`SELLFTorchLearner`."""
        from rllib_fair.algorithms.sellf.torch.sellf_torch_learner import SELLFTorchLearner

        return SELLFTorchLearner


class SELLF(PPO):
    """RLlib PPO with SELLF's predictor, imputed disparity and Renyi loss."""

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> SELLFConfig:
        """Returns a fresh :class:`SELLFConfig`."""
        return SELLFConfig()
