"""ELBERT-PO (Xu et al. 2024, ICML): Equal Long-term BEnefit RaTe policy optimisation.

PPO whose advantage is the fairness-aware advantage of Eq. 5 (Eq. 7 with the soft gap
for more than two groups, Eq. 9 for equalized odds' two supply-demand pairs, Eq. 30 with
the demand regulariser):

    A^fair = A - alpha * sum_g dh/dz_g (A^S_g / eta^D_g - eta^S_g A^D_g / (eta^D_g)^2)
             + zeta * A^D_{g*}

The pieces, and where they live:

* 2 K M extra value streams (supply and demand of each group and pair) from one extra
  critic MLP with 2 K M outputs, built on the learner only
  (:class:`~.torch.elbertpo_torch_rl_module.ELBERTPOTorchRLModule`);
* per-stream GAE and the combination above, once per train batch, in a learner
  connector after RLlib's GAE (:class:`~.connectors.ELBERTAdvantage`);
  the weights come from :func:`rllib_fair.fairness.objective.fair_advantage_weights`;
* the extra value loss, added to PPO's loss
  (:class:`~.torch.elbertpo_torch_learner.ELBERTPOTorchLearner`).

eta^S_g and eta^D_g are estimated from the train batch as the mean supply / demand per
step times the episode length ``L`` (``episode_length``; by default the env's
``max_steps``). This equals the reference's undiscounted Monte-Carlo mean per episode
(sum over the rollout buffer / number of episodes) when the batch holds whole episodes
of length ``L``, and keeps working when RLlib cuts episodes across batches.

``advantage_form="paper"`` (default) combines the raw advantages as Eq. 5 writes them;
``"reference"`` standardises each stream's advantage first, as the reference code does
(which changes the relative scale of the terms). ``standardize_fair_advantage`` says
whether the combined advantage is then standardised over the batch: ``"auto"`` does so
for the paper form (a positive rescaling of the whole policy gradient, so the direction
of Eq. 5 is kept, and the clipped surrogate sees unit-scale advantages as in PPO) and not
for the reference form, whose code passes the combination to the clipped surrogate as it
is, so that the fairness term's size grows with the bias.
"""

from __future__ import annotations

from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.ppo import PPO
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.utils.annotations import override

from rllib_fair.algorithms.common.setters import set_provided
from rllib_fair.algorithms.ppo.ppo import FairPPOConfig
from rllib_fair.rllib.targets import Metric, OwnMetrics
from rllib_fair.settings import Rule, choice, integer, number

ADVANTAGE_FORMS = ("paper", "reference")
#: Choices of a switch whose "auto" depends on the rest of the config.
AUTO_MODES = ("auto", "always", "never")


class ELBERTPOConfig(FairPPOConfig):
    """Config of ELBERT-PO: :class:`FairPPOConfig` plus the fairness-aware advantage.

    Attributes:
        alpha: bias coefficient (paper, App. D.2: 2e5 lending, 10 / 50 infectious
            original / harder, 50 / 2e4 attention original / harder).
        beta: soft-gap temperature (paper: 20).
        soft_bias: ``"auto"`` (soft gap when there are more than two groups, as the
            paper and the reference), ``"always"`` or ``"never"``.
        demand_zeta: zeta of the demand regulariser (App. E, Eq. 30); 0 switches it off.
        demand_group: the group whose demand is regularised; None: the group with the
            lowest long-term benefit rate in the batch.
        advantage_form: ``"paper"`` (Eq. 5 on raw advantages) or ``"reference"``
            (each stream standardised first).
        standardize_fair_advantage: ``"auto"`` (standardise the combined advantage over
            the batch for the paper form, not for the reference form, as the authors'
            code), ``"always"`` or ``"never"``.
        episode_length: ``L`` in the eta estimate; None reads ``max_steps`` of the env.
    """

    #: ELBERT-PO's supply/demand streams (e.g. qualified applicants) need true labels.
    oracle_by_default = True

    #: The long-term benefit-rate gap of its notion, the env's default gap when the
    #: notion is the env's default one.
    own_metrics = OwnMetrics(
        constraints=(
            Metric(
                "fairness/{notion}/bias",
                "benefit-rate gap {notion}",
                "long-term benefit-rate gap of {notion} that the fairness-aware advantage "
                "reduces (Eq. 5-7)",
                lower_is_better=True,
            ),
        ),
        note="the env's reward minus alpha times the (soft) benefit-rate gap (Eq. 5)",
    )

    #: Settings added since the first release: for a run recorded before one existed, the
    #: value that reproduces it (``rllib_fair.reproduce.resolved.upgraded``). Until
    #: 2026-11-29 both advantage forms standardised the combined advantage.
    ADDED_SETTINGS = {
        "standardize_fair_advantage": lambda former: (
            "auto" if former.get("advantage_form", "paper") == "paper" else "always"
        ),
    }

    DECLARED_SETTINGS = (
        number("alpha", "bias coefficient of the fairness-aware advantage", 0),
        number("beta", "temperature of the soft gap", 0, low_open=True),
        choice("soft_bias", AUTO_MODES, "when h uses the soft gap (auto: > 2 groups)"),
        number("demand_zeta", "zeta of the demand regulariser (0: off)", 0),
        integer(
            "demand_group",
            "group whose demand is regularised (an index below the env's group count)",
            0,
            none=True,
            none_means="the group with the lowest benefit rate in the batch",
        ),
        choice(
            "advantage_form",
            ADVANTAGE_FORMS,
            "paper: Eq. 5 on raw advantages; reference: each stream standardised first",
        ),
        choice(
            "standardize_fair_advantage",
            AUTO_MODES,
            "standardise the combined advantage over the batch (auto: paper form only)",
        ),
        integer(
            "episode_length",
            "L of the long-term rate estimate",
            1,
            none=True,
            none_means="the env's max_steps",
        ),
    )
    DECLARED_RULES = (
        Rule(
            "columns_on",
            ("fairness_columns",),
            "the supply and demand streams come from the fairness columns",
            lambda v: (
                None
                if v["fairness_columns"]
                else "fairness_columns: False is invalid for ELBERTPO; valid: true"
            ),
            {"fairness_columns": False},
        ),
    )
    REPORTED_KEYS = (
        "learners/*/fair_vf_loss",
        "learners/*/elbert_gap",
        "learners/*/elbert_h",
        "learners/*/elbert_rate_*",
        "learners/*/elbert_eta_supply_*",
        "learners/*/elbert_eta_demand_*",
    )

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or ELBERTPO)
        self.alpha: float = 2e5
        self.beta: float = 20.0
        self.soft_bias: str = "auto"
        self.demand_zeta: float = 0.0
        self.demand_group: int | None = None
        self.advantage_form: str = "paper"
        self.standardize_fair_advantage: str = "auto"
        self.episode_length: int | None = None

    @override(FairPPOConfig)
    def training(
        self,
        *,
        alpha=NotProvided,
        beta=NotProvided,
        soft_bias=NotProvided,
        demand_zeta=NotProvided,
        demand_group=NotProvided,
        advantage_form=NotProvided,
        standardize_fair_advantage=NotProvided,
        episode_length=NotProvided,
        **kwargs,
    ):
        """PPO's ``training()`` plus ELBERT-PO's settings (see the class attributes)."""
        super().training(**kwargs)
        return set_provided(
            self,
            alpha=alpha,
            beta=beta,
            soft_bias=soft_bias,
            demand_zeta=demand_zeta,
            demand_group=demand_group,
            advantage_form=advantage_form,
            standardize_fair_advantage=standardize_fair_advantage,
            episode_length=episode_length,
        )

    # ---------------------------------------------------------------- derived settings
    def fairness_shape(self) -> tuple[int, int]:
        """``(K, G)``: supply-demand pairs of the notion and groups of the env."""
        from rllib_fair.envs import env_meta
        from rllib_fair.fairness.notions import get_notion

        meta = env_meta(self.env)
        if meta is None:
            raise ValueError(
                f"env: ELBERTPO needs a registered rllib-fair environment to know its groups, "
                f"got {self.env!r}"
            )
        return get_notion(self.resolved_fairness_notion()).n_pairs, meta["n_groups"]

    def resolved_episode_length(self) -> int:
        """``episode_length`` or the env's ``max_steps``.

        The env's ``max_steps`` is read from ``env_config`` and the env class's
        constructor default (:func:`rllib_fair.envs.declared.declared_value`); nothing is
        built.
        """
        if self.episode_length is not None:
            return int(self.episode_length)
        from numbers import Integral

        from rllib_fair.envs.declared import declared_value

        length = declared_value(self.env, self.env_config, "max_steps")
        if isinstance(length, bool) or not isinstance(length, Integral) or length < 1:
            raise ValueError(
                f"episode_length: None but env {self.env!r} has no max_steps; valid: a positive int"
            )
        return int(length)

    def use_soft_bias(self) -> bool:
        """Whether h uses the soft gap."""
        if self.soft_bias == "always":
            return True
        if self.soft_bias == "never":
            return False
        return self.fairness_shape()[1] > 2

    def standardizes_fair_advantage(self) -> bool:
        """Whether the combined fairness-aware advantage is standardised over the batch."""
        if self.standardize_fair_advantage == "always":
            return True
        if self.standardize_fair_advantage == "never":
            return False
        return self.advantage_form == "paper"

    @property
    @override(FairPPOConfig)
    def _model_config_auto_includes(self):
        k, g = self.fairness_shape()
        return super()._model_config_auto_includes | {"fair_value_streams": 2 * k * g}

    @override(FairPPOConfig)
    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """PPO's module spec with the ELBERT-PO module class."""
        from rllib_fair.algorithms.elbertpo.torch.elbertpo_torch_rl_module import (
            ELBERTPOTorchRLModule,
        )

        spec = super().get_default_rl_module_spec()
        spec.module_class = ELBERTPOTorchRLModule
        return spec

    @override(FairPPOConfig)
    def get_default_learner_class(self):
        """Returns :class:`ELBERTPOTorchLearner`."""
        from rllib_fair.algorithms.elbertpo.torch.elbertpo_torch_learner import (
            ELBERTPOTorchLearner,
        )

        return ELBERTPOTorchLearner

    @override(FairPPOConfig)
    def validate(self) -> None:
        """The declared checks, PPO's and the fairness ones, then those that need the env."""
        super().validate()
        _, g = self.fairness_shape()
        if self.demand_group is not None and not self.demand_group < g:
            raise ValueError(
                f"demand_group: {self.demand_group!r} is invalid; valid: None or a group "
                f"index in 0..{g - 1}"
            )
        self.resolved_episode_length()


class ELBERTPO(PPO):
    """RLlib PPO trained on the fairness-aware advantage (see module docstring)."""

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> ELBERTPOConfig:
        """Returns a fresh :class:`ELBERTPOConfig`."""
        return ELBERTPOConfig()
