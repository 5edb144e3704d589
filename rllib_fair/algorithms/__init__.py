"""Algorithm registry: short name -> (Algorithm class, Config class), imported lazily.

Importing :mod:`rllib_fair` does not import Ray or torch; the classes are imported the
first time a name is resolved. Every registered config mixes in
:class:`rllib_fair.rllib.config.FairnessConfigMixin`, so the shared fairness settings
(``fairness_notion``, ...) are typed fields of every algorithm, the baseline's included.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class AlgorithmSpec:
    """Where a registered algorithm lives and what it is.

    Attributes:
        name: registry name used in YAML ``run:`` and on the command line.
        module: module holding both classes.
        algo_class: name of the ``Algorithm`` subclass.
        config_class: name of the ``AlgorithmConfig`` subclass.
        paper: the method's paper and what the implementation takes from it.
        smoke_env: a registered env id the algorithm trains on out of the box; the
            registry-wide tests (multiple learners, GPU learner, weight-sync size)
            train every algorithm on its ``smoke_env``.
        learns: False for baselines that never update a learner (the myopic
            optimisers): registry-wide tests then check sampling, not training.
        variant_of: name of the registered algorithm whose classes this one only
            re-parameterises (a different default setting); its tuned examples live in
            that algorithm's folder and the registry-wide scale-out tests, which
            exercise the shared classes, run on the base name only.
    """

    name: str
    module: str
    algo_class: str
    config_class: str
    paper: str
    smoke_env: str = "fair/Lending-v0"
    learns: bool = True
    variant_of: str | None = None


ALGORITHMS: dict[str, AlgorithmSpec] = {
    spec.name: spec
    for spec in [
        AlgorithmSpec(
            name="PPO",
            module="rllib_fair.algorithms.ppo.ppo",
            algo_class="FairPPO",
            config_class="FairPPOConfig",
            paper=(
                "G-PPO baseline: PPO (Schulman et al. 2017) on the reward only, with "
                "fairness metrics; the unconstrained baseline of Yu et al. 2022 and Xu et al. 2024"
            ),
        ),
        AlgorithmSpec(
            name="RPPO",
            module="rllib_fair.algorithms.rppo.rppo",
            algo_class="RPPO",
            config_class="RPPOConfig",
            paper=(
                "R-PPO: PPO on the reward minus zeta_1 * max(0, Delta_t - omega) "
                "(Yu et al. 2022; Xu et al. 2024, App. D.2, Eq. 27)"
            ),
        ),
        AlgorithmSpec(
            name="POCAR",
            module="rllib_fair.algorithms.pocar.pocar",
            algo_class="POCAR",
            config_class="POCARConfig",
            paper=(
                "POCAR / A-PPO: PPO with advantages regularised by the per-step disparity "
                "(Yu et al. 2022; Xu et al. 2024, App. D.2, Eq. 28)"
            ),
        ),
        AlgorithmSpec(
            name="ELBERTPO",
            module="rllib_fair.algorithms.elbertpo.elbertpo",
            algo_class="ELBERTPO",
            config_class="ELBERTPOConfig",
            paper=(
                "ELBERT-PO: PPO with the fairness-aware advantage of the long-term benefit "
                "rate gap (Xu et al. 2024, ICML; Eq. 5-7, 30)"
            ),
        ),
        AlgorithmSpec(
            name="SELLF",
            module="rllib_fair.algorithms.sellf.sellf",
            algo_class="SELLF",
            config_class="SELLFConfig",
            paper=(
                "SELLF: PPO with an IPW-trained label predictor, imputed disparity and a "
                "Renyi loss for selective labels (Valdrighi et al., ICML 2026; Eq. 3, 6, 7)"
            ),
            smoke_env="fair/LendingFICO-v0",
        ),
        AlgorithmSpec(
            name="PPOC",
            module="rllib_fair.algorithms.ppoc.ppoc",
            algo_class="PPOC",
            config_class="PPOCConfig",
            paper=(
                "PPO-C: PPO-KL plus beta_C times the squared qualification-gain disparity "
                "estimate from per-individual Monte Carlo gains (Lear & Zhang, ICLR 2025, Eq. 2)"
            ),
            smoke_env="fair/LendingDrift-v0",
        ),
        AlgorithmSpec(
            name="PPOCb",
            module="rllib_fair.algorithms.ppoc.ppoc",
            algo_class="PPOCb",
            config_class="PPOCbConfig",
            paper=(
                "PPO-Cb: PPO-C plus beta_Lambda times the benefit-fairness term Lambda "
                "(Lear & Zhang, ICLR 2025, Eq. 5)"
            ),
            smoke_env="fair/LendingDrift-v0",
            variant_of="PPOC",
        ),
        AlgorithmSpec(
            name="PPOKL",
            module="rllib_fair.algorithms.ppoc.ppoc",
            algo_class="PPOKL",
            config_class="PPOKLConfig",
            paper=(
                "PPO-KL: the 'PPO' baseline of Lear & Zhang (ICLR 2025, Sec. 4.1): clipped "
                "surrogate plus a fixed KL penalty of 1.5"
            ),
            smoke_env="fair/LendingDrift-v0",
            variant_of="PPOC",
        ),
        AlgorithmSpec(
            name="FPPOL",
            module="rllib_fair.algorithms.fppol.fppol",
            algo_class="FPPOL",
            config_class="FPPOLConfig",
            paper=(
                "F-PPO-L: A-PPO's advantage regularisation plus the long-term Wasserstein "
                "term of the group bin histograms (Hu, Lear & Zhang 2023; baseline of Lear & "
                "Zhang, ICLR 2025)"
            ),
            smoke_env="fair/LendingDrift-v0",
        ),
        AlgorithmSpec(
            name="LUCBFair",
            module="rllib_fair.algorithms.lucbfair.lucbfair",
            algo_class="LUCBFair",
            config_class="LUCBFairConfig",
            paper=(
                "L-UCBFair: optimistic LSVI with a primal-dual softmax policy over action "
                "regions (Yin et al. 2023, NeurIPS, Algorithm 1, Eq. 4)"
            ),
            smoke_env="fair/Replicator-v0",
        ),
        AlgorithmSpec(
            name="TD3",
            module="rllib_fair.algorithms.td3.td3",
            algo_class="TD3",
            config_class="TD3Config",
            paper=(
                "TD3 (Fujimoto et al. 2018) on SAC's machinery with a fast numpy replay path, "
                "any Box-action env; the unconstrained baseline of Yin et al. 2023, Fig. 4"
            ),
            smoke_env="fair/ReplicatorAdult-v0",
        ),
        AlgorithmSpec(
            name="RTD3",
            module="rllib_fair.algorithms.rtd3.rtd3",
            algo_class="RTD3",
            config_class="RTD3Config",
            paper=(
                "R-TD3: TD3 on the relaxed reward (1 - lambda_t) r + lambda_t g, "
                "lambda_t = t / H (Yin et al. 2023, Sec. 3.2, Eq. 6)"
            ),
            smoke_env="fair/ReplicatorAdult-v0",
        ),
        *[
            AlgorithmSpec(
                name=name,
                module="rllib_fair.algorithms.myopic.myopic",
                algo_class=name,
                config_class=f"{name}Config",
                paper=f"{what} (Yin et al. 2023, Sec. 3.3, {eq}): per-step risk minimiser",
                smoke_env="fair/Replicator-v0",
                learns=False,
                variant_of=None if name == "Myopic" else "Myopic",
            )
            for name, what, eq in (
                ("Myopic", "Myopic baseline, min_a L(s, a)", "Eq. 7a"),
                ("MyopicFair", "Myopic-Fair baseline, (1 - lambda) L + lambda D", "Eq. 7b"),
                ("Maxmin", "Maxmin baseline, min_a max_g L_g(s, a)", "Eq. 7c"),
                ("MaxminFair", "Maxmin-Fair baseline, (1 - lambda) max_g L_g + lambda D", "Eq. 7d"),
            )
        ],
        *[
            AlgorithmSpec(
                name=name,
                module="rllib_fair.algorithms.uncertainty.uncertainty",
                algo_class=name,
                config_class=f"{name}Config",
                paper=(
                    f"{what} (Lee et al., FAccT 2026, Sec. 4): quarterly batch lending under a "
                    "budget, logistic model retrained on selective feedback"
                ),
                smoke_env="fair/QuarterlyLending-v0",
                learns=False,
                variant_of=None if name == "Uncertainty" else "Uncertainty",
            )
            for name, what in (
                ("Uncertainty", "Naive top-B lending (any of the five strategies via strategy)"),
                ("UncertaintyNaiveExploration", "Naive exploration: uniform draws in U_q"),
                ("UncertaintyProbWeighted", "Probability-weighted exploration in U_q"),
                ("UncertaintyAware", "Uncertainty-aware exploration: delta-method CI"),
                ("UncertaintyCounterfactual", "Counterfactual utility maximisation"),
            )
        ],
    ]
}


def list_algorithms() -> list[str]:
    """Returns the registered algorithm names, sorted."""
    return sorted(ALGORITHMS)


def base_algorithms() -> list[str]:
    """Registered names that are not mere variants of another (sorted)."""
    return sorted(n for n, spec in ALGORITHMS.items() if spec.variant_of is None)


def get_spec(name: str) -> AlgorithmSpec:
    """Returns the spec of a registered algorithm.

    Raises:
        ValueError: one line naming the bad value and the valid choices.
    """
    if name not in ALGORITHMS:
        raise ValueError(
            f"run: unknown algorithm {name!r}; valid choices: {', '.join(list_algorithms())}"
        )
    return ALGORITHMS[name]


def get_algorithm_class(name: str):
    """Returns the ``Algorithm`` subclass registered as ``name`` (imports it lazily)."""
    spec = get_spec(name)
    return getattr(importlib.import_module(spec.module), spec.algo_class)


def get_config_class(name: str):
    """Returns the ``AlgorithmConfig`` subclass registered as ``name`` (imports it lazily)."""
    spec = get_spec(name)
    return getattr(importlib.import_module(spec.module), spec.config_class)
