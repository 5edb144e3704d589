"""Table of bad ``rllib-fair train`` inputs: each is rejected before anything happens.

Every case runs ``rllib_fair.cli.main(["train", FILE, ...])`` in-process with Ray and
the runner forbidden and checks the contract of bad input: exit code 2, nothing on
stdout, exactly one line on stderr that names the key, the bad value and what is
valid, no results folder created and Ray not started. A few cases run the console
entry point in a subprocess, including a YAML tag and a ``module:id`` env that would
run code if they were honoured.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
import yaml

from rllib_fair.algorithms import list_algorithms
from rllib_fair.cli import main
from rllib_fair.cli.experiment import ExperimentError, validate_cli_flags

ENV_ID = "fair/Lending-v0"
BIAS_KEY = "fairness/equal_opportunity/bias"
RETURN_KEY = "env_runners/episode_return_mean"
RAISING_ENV_ID = "test/RaisesKeyError-v0"
DELETE = object()


def spec(**edits) -> dict:
    """A valid PPO spec; ``edits`` maps ``"a.b.c"`` paths (``__`` for ``.``) to values."""
    base = {
        "run": "PPO",
        "env": ENV_ID,
        "env_config": {"max_steps": 200},
        "stop": {"training_iteration": 1},
        "config": {
            "fairness_notion": "equal_opportunity",
            "train_batch_size_per_learner": 400,
            "minibatch_size": 100,
            "num_epochs": 1,
            "model_config": {"fcnet_hiddens": [16]},
        },
        "pass_criteria": {
            BIAS_KEY: {"max": 1.0},
            RETURN_KEY: {"min": -1000},
            "training_iteration": {"min": 1},
        },
    }
    out = copy.deepcopy(base)
    for path, value in edits.items():
        keys = path.split("__")
        node = out
        for key in keys[:-1]:
            node = node[key]
        if value is DELETE:
            del node[keys[-1]]
        else:
            node[keys[-1]] = value
    return out


def algo_spec(run: str, **config) -> dict:
    """A valid spec of another algorithm with extra config settings."""
    out = spec(run=run)
    out["config"].update(config)
    return out


def text(s: str) -> str:
    """Raw YAML (for what a dict cannot express: duplicates, tags, bad syntax)."""
    return s


GOOD = yaml.safe_dump({"exp": spec()}, sort_keys=False)


def alias_bomb(levels: int = 6) -> str:
    """Ten aliases per level: 10**levels values from a few lines of YAML."""
    lines = ["l0: &l0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n" + GOOD


# (content, extra argv, needles that the one error line must contain)
CASES = [
    # --- YAML structure and duplicate keys ------------------------------------------
    pytest.param(
        text("exp:\n  run: [PPO\n"), [], ["FILE", "not valid YAML", "line"], id="yaml-syntax"
    ),
    pytest.param(text(""), [], ["FILE", "NoneType"], id="yaml-empty"),
    pytest.param(text("- a\n- b\n"), [], ["FILE", "list"], id="yaml-top-level-list"),
    pytest.param(text("exp: 5\n"), [], ["exp", "mapping", "int"], id="yaml-spec-not-mapping"),
    pytest.param(
        GOOD + "  config: {lr: 0.1}\n",
        [],
        ["FILE", "line 23", "duplicate key 'config'", "first at line 8"],
        id="dup-config-block",
    ),
    pytest.param(
        GOOD + GOOD,
        [],
        ["FILE", "line 23", "duplicate key 'exp'", "first at line 1"],
        id="dup-experiment",
    ),
    pytest.param(
        GOOD.replace("    num_epochs: 1\n", "    num_epochs: 1\n    lr: 0.1\n    lr: 0.2\n"),
        [],
        ["FILE", "line 14", "duplicate key 'lr'", "first at line 13"],
        id="dup-key-in-config",
    ),
    pytest.param(
        GOOD.replace("      - 16\n", "      - 16\n      fcnet_hiddens: [8]\n"),
        [],
        ["duplicate key 'fcnet_hiddens'", "line 16"],
        id="dup-key-in-model-config",
    ),
    pytest.param(
        GOOD.replace("run: PPO", "run: !!python/object/apply:os.getcwd []"),
        [],
        ["FILE", "line 2", "tag", "python/object/apply:os.getcwd", "not allowed"],
        id="yaml-python-tag",
    ),
    pytest.param(
        GOOD.replace("max_steps: 200", "max_steps: !custom 200"),
        [],
        ["FILE", "tag '!custom'", "not allowed"],
        id="yaml-custom-tag",
    ),
    pytest.param(
        GOOD.replace("  stop:\n", "  loop: &loop [*loop]\n  stop:\n"),
        [],
        ["FILE", "alias refers to its own anchor"],
        id="yaml-recursive-alias",
    ),
    pytest.param(alias_bomb(), [], ["FILE", "more than 100,000 values"], id="yaml-alias-bomb"),
    pytest.param(
        "exp: " + "[" * 3000 + "]" * 3000 + "\n", [], ["FILE", "nested too deeply"], id="yaml-deep"
    ),
    pytest.param(
        text(GOOD.replace("exp:", "../escape:", 1)),
        [],
        ["experiment name '../escape'", "'/'"],
        id="name-with-slash",
    ),
    pytest.param(
        GOOD.replace("    num_epochs: 1\n", "    num_epochs: 1\n    1: 2\n"),
        [],
        ["config", "key 1", "setting name"],
        id="non-string-config-key",
    ),
    pytest.param(
        spec(stopp={"training_iteration": 1}),
        [],
        ["exp.stopp", "unknown key", "valid keys: run, env"],
        id="typo-top-level-key",
    ),
    # --- env ids: registered only, never module:id ------------------------------------
    pytest.param(
        spec(env="this:fair/Lending-v0"),
        [],
        ["env", "'this:fair/Lending-v0'", "module:id", ENV_ID, "fair/SchoolAdmission-v0"],
        id="env-module-prefix",
    ),
    pytest.param(
        spec(env="os:fair/Lending-v0"),
        [],
        ["env", "'os:fair/Lending-v0'", "module:id"],
        id="env-os-prefix",
    ),
    pytest.param(
        spec(env="rllib_fair:fair/Lending-v0"),
        [],
        ["env", "'rllib_fair:fair/Lending-v0'", "module:id"],
        id="env-own-package-prefix",
    ),
    pytest.param(spec(env="fair/Nope-v0"), [], ["env", "'fair/Nope-v0'", ENV_ID], id="env-unknown"),
    pytest.param(spec(env=5), [], ["env", "5", "valid choices", ENV_ID], id="env-not-a-string"),
    pytest.param(spec(env=DELETE), [], ["env", "None", ENV_ID], id="env-missing"),
    pytest.param(
        spec(env=DELETE, config__env="evil:fair/Lending-v0"),
        [],
        ["env", "'evil:fair/Lending-v0'", "module:id"],
        id="env-module-prefix-inside-config",
    ),
    pytest.param(
        spec(run="rllib_fair.algorithms.ppo.ppo:FairPPO"),
        [],
        ["run", "'rllib_fair.algorithms.ppo.ppo:FairPPO'", ", ".join(list_algorithms())],
        id="run-import-path",
    ),
    pytest.param(spec(run=["PPO"]), [], ["run", "['PPO']", "PPO"], id="run-not-a-string"),
    # --- unknown, renamed and code-valued settings ------------------------------------
    pytest.param(
        spec(config__lrr=0.1),
        [],
        ["config.lrr", "unknown setting", "did you mean lr"],
        id="typo-lr",
    ),
    pytest.param(
        spec(config__num_sgd_iter=3), [], ["config.num_sgd_iter", "use num_epochs"], id="dead-key"
    ),
    pytest.param(
        spec(config__monitor=True),
        [],
        ["config.monitor", "deprecated", "remove it"],
        id="deprecated-key",
    ),
    pytest.param(
        spec(config__callbacks="os.getcwd"),
        [],
        ["config.callbacks", "Python code", "YAML"],
        id="callbacks-import-path",
    ),
    pytest.param(
        spec(config__extra_python_environs_for_worker={"PYTHONPATH": "/tmp"}),
        [],
        ["config.extra_python_environs_for_worker", "Python code"],
        id="worker-environment-variables",
    ),
    pytest.param(
        spec(config__env_runner_cls="my.Runner"),
        [],
        ["config.env_runner_cls", "Python code"],
        id="class-setting",
    ),
    pytest.param(
        spec(config__input="/data/x"), [], ["config.input", "offline"], id="offline-input"
    ),
    pytest.param(
        spec(config__exploration_config={}),
        [],
        ["config.exploration_config", "old API stack"],
        id="old-stack-key",
    ),
    # --- out-of-range numbers --------------------------------------------------------
    pytest.param(spec(config__lr=0), [], ["config.lr", "0", "> 0"], id="lr-zero"),
    pytest.param(spec(config__lr=-0.001), [], ["config.lr", "-0.001", "> 0"], id="lr-negative"),
    pytest.param(
        spec(config__gamma=1.5), [], ["config.gamma", "1.5", "[0, 1]"], id="gamma-above-1"
    ),
    pytest.param(
        spec(config__gamma=-0.1), [], ["config.gamma", "-0.1", "[0, 1]"], id="gamma-negative"
    ),
    pytest.param(spec(config__lambda=2), [], ["config.lambda", "2", "[0, 1]"], id="lambda-above-1"),
    pytest.param(
        spec(config__clip_param=0), [], ["config.clip_param", "0", "> 0"], id="clip-param-zero"
    ),
    pytest.param(
        spec(config__vf_clip_param=-1),
        [],
        ["config.vf_clip_param", "-1", "> 0"],
        id="vf-clip-negative",
    ),
    pytest.param(
        spec(config__entropy_coeff=-0.01),
        [],
        ["config.entropy_coeff", "-0.01", ">= 0"],
        id="entropy-negative",
    ),
    pytest.param(
        spec(config__vf_loss_coeff=-1),
        [],
        ["config.vf_loss_coeff", "-1", ">= 0"],
        id="vf-loss-negative",
    ),
    pytest.param(
        spec(config__kl_coeff=-0.2), [], ["config.kl_coeff", "-0.2", ">= 0"], id="kl-coeff-negative"
    ),
    pytest.param(
        spec(config__kl_target=0), [], ["config.kl_target", "0", "> 0"], id="kl-target-zero"
    ),
    pytest.param(
        spec(config__grad_clip=0), [], ["config.grad_clip", "0", "> 0 or null"], id="grad-clip-zero"
    ),
    pytest.param(
        spec(config__train_batch_size_per_learner=0),
        [],
        ["config.train_batch_size_per_learner", "0", ">= 1"],
        id="train-batch-zero",
    ),
    pytest.param(
        spec(config__minibatch_size=0),
        [],
        ["config.minibatch_size", "0", ">= 1"],
        id="minibatch-zero",
    ),
    pytest.param(
        spec(config__minibatch_size=1000),
        [],
        # RLlib's own validate() checks this one; its words, in the one-line format
        ["config.minibatch_size: 1000 is invalid", "<= `train_batch_size_per_learner` (400)"],
        id="minibatch-above-train-batch",
    ),
    pytest.param(
        spec(config__num_epochs=0), [], ["config.num_epochs", "0", ">= 1"], id="num-epochs-zero"
    ),
    pytest.param(
        spec(config__num_env_runners=-1),
        [],
        ["config.num_env_runners", "-1", ">= 0"],
        id="env-runners-negative",
    ),
    pytest.param(
        spec(config__num_envs_per_env_runner=0),
        [],
        ["config.num_envs_per_env_runner", "0", ">= 1"],
        id="envs-per-runner-zero",
    ),
    pytest.param(
        spec(config__num_learners=-1),
        [],
        ["config.num_learners", "-1", ">= 0"],
        id="learners-negative",
    ),
    pytest.param(
        spec(config__rollout_fragment_length=0),
        [],
        ["config.rollout_fragment_length", "0", ">= 1 or 'auto'"],
        id="fragment-zero",
    ),
    pytest.param(
        spec(config__rollout_fragment_length="sometimes"),
        [],
        ["config.rollout_fragment_length", "'sometimes'", "'auto'"],
        id="fragment-unknown-word",
    ),
    pytest.param(
        spec(config__seed=-5), [], ["config.seed", "-5", ">= 0"], id="seed-negative-in-file"
    ),
    pytest.param(
        spec(config__lr=[[100, 0.001], [200, 0.0001]]),
        [],
        ["config.lr", "[[100, 0.001], [200, 0.0001]]", "timesteps from 0"],
        id="lr-schedule-not-from-0",
    ),
    pytest.param(
        spec(config__lr=[[0, 0.001], [100, -1]]),
        [],
        ["config.lr", "-1", "finite values >= 0"],
        id="lr-schedule-negative",
    ),
    pytest.param(
        spec(config__lr=[[0, 0.001]]),
        [],
        ["config.lr", "[[0, 0.001]]", "at least two"],
        id="lr-schedule-one-pair",
    ),
    pytest.param(
        spec(config__batch_mode="episodes"),
        [],
        ["config.batch_mode", "'episodes'", "valid choices: truncate_episodes, complete_episodes"],
        id="batch-mode-unknown",
    ),
    pytest.param(
        spec(config__framework="tf2"),
        [],
        ["config.framework", "'tf2'", "valid choices: torch"],
        id="framework-tf",
    ),
    pytest.param(spec(num_samples=0), [], ["num_samples", "0", ">= 1"], id="num-samples-zero"),
    pytest.param(
        spec(config__fairness_disparity_window=0),
        [],
        ["fairness_disparity_window", "0", "an integer >= 1"],
        id="window-zero",
    ),
    pytest.param(
        algo_spec("RPPO", zeta_1=-1.0), [], ["zeta_1", "-1.0", ">= 0"], id="rppo-weight-negative"
    ),
    pytest.param(
        spec(stop__training_iteration=0),
        [],
        ["stop.training_iteration", "0", "> 0"],
        id="budget-zero",
    ),
    # --- NaN and infinity ---------------------------------------------------------------
    pytest.param(
        spec(config__lr=float("nan")), [], ["config.lr", "nan", "not finite", "> 0"], id="nan-lr"
    ),
    pytest.param(
        spec(config__gamma=float("inf")),
        [],
        ["config.gamma", "inf", "not finite", "[0, 1]"],
        id="inf-gamma",
    ),
    pytest.param(
        spec(config__entropy_coeff=float("-inf")),
        [],
        ["config.entropy_coeff", "-inf", "not finite"],
        id="minus-inf-entropy",
    ),
    pytest.param(
        algo_spec("RPPO", zeta_1=float("nan")),
        [],
        ["config.zeta_1", "nan", "not finite"],
        id="nan-rppo-zeta",
    ),
    pytest.param(
        algo_spec("POCAR", beta_0=float("inf")),
        [],
        ["config.beta_0", "inf", "not finite"],
        id="inf-pocar-beta",
    ),
    pytest.param(
        algo_spec("ELBERTPO", beta=float("nan")),
        [],
        ["config.beta", "nan", "not finite"],
        id="nan-elbertpo-beta",
    ),
    pytest.param(
        algo_spec("SELLF", predictor_lr=float("nan")),
        [],
        ["config.predictor_lr", "nan", "not finite"],
        id="nan-sellf-predictor-lr",
    ),
    pytest.param(
        spec(config__fairness_smoothing=float("nan")),
        [],
        ["config.fairness_smoothing", "nan", ">= 0"],
        id="nan-smoothing",
    ),
    pytest.param(
        GOOD.replace("training_iteration: 1", "training_iteration: 1" + "0" * 400),
        [],
        ["stop.training_iteration", "1000000", "finite"],
        id="huge-int-budget",
    ),
    pytest.param(
        GOOD.replace("max_steps: 200", "max_steps: 200\n    loan_amount: 1" + "0" * 400),
        [],
        ["env_config", "loan_amount", "1e+15"],
        id="huge-int-env-config",
    ),
    pytest.param(
        spec(stop__training_iteration=float("inf")),
        [],
        ["stop.training_iteration", "inf", "finite"],
        id="inf-budget",
    ),
    pytest.param(
        spec(pass_criteria={RETURN_KEY: {"min": float("nan")}}),
        [],
        [f"pass_criteria.{RETURN_KEY}.min", "nan", "finite"],
        id="nan-criterion",
    ),
    pytest.param(
        spec(config__lr=[[0, float("nan")], [10, 0.1]]),
        [],
        ["config.lr[0][1]", "nan", "not finite"],
        id="nan-in-lr-schedule",
    ),
    pytest.param(
        spec(), ["--config", "gamma=.nan"], ["config.gamma", "nan", "[0, 1]"], id="nan-override"
    ),
    pytest.param(
        spec(config__lr={"grid_search": [0.001, float("inf")]}),
        [],
        ["config.lr.grid_search", "inf", "not finite"],
        id="inf-in-grid",
    ),
    pytest.param(
        spec(selection={"omega": float("inf")}),
        [],
        ["selection.omega", "inf", "finite"],
        id="inf-selection-omega",
    ),
    # --- wrong types -----------------------------------------------------------------
    pytest.param(
        spec(config__gamma="0.99"), [], ["config.gamma", "'0.99'", "[0, 1]"], id="quoted-gamma"
    ),
    pytest.param(spec(config__lr=True), [], ["config.lr", "True", "> 0"], id="bool-lr"),
    pytest.param(
        spec(config__num_epochs=2.5), [], ["config.num_epochs", "2.5", "integer"], id="float-epochs"
    ),
    pytest.param(
        spec(config__train_batch_size_per_learner="400"),
        [],
        ["config.train_batch_size_per_learner", "'400'", "integer"],
        id="string-batch",
    ),
    pytest.param(
        spec(config__use_kl_loss="yes"),
        [],
        ["config.use_kl_loss", "'yes'", "true or false"],
        id="string-bool",
    ),
    pytest.param(
        spec(config__shuffle_batch_per_epoch=1),
        [],
        ["config.shuffle_batch_per_epoch", "1", "true or false"],
        id="int-for-bool",
    ),
    pytest.param(
        spec(config__min_sample_timesteps_per_iteration="many"),
        [],
        ["config.min_sample_timesteps_per_iteration", "'many'", "a number"],
        id="string-for-number",
    ),
    pytest.param(spec(config__seed=1.5), [], ["config.seed", "1.5", "integer"], id="float-seed"),
    pytest.param(
        spec(num_samples=True), [], ["num_samples", "True", "integer"], id="bool-num-samples"
    ),
    pytest.param(
        spec(),
        ["--config", "num_epochs=abc"],
        ["config.num_epochs", "'abc'", "integer"],
        id="bad-override",
    ),
    pytest.param(
        algo_spec("SELLF", predictor_lr_decay="fast"),
        [],
        ["config.predictor_lr_decay", "'fast'", "a number"],
        id="string-algorithm-weight",
    ),
    # --- model_config ------------------------------------------------------------------
    pytest.param(
        spec(config__model_config={"fcnet_hidden": [16]}),
        [],
        ["config.model_config.fcnet_hidden", "unknown model setting", "did you mean fcnet_hiddens"],
        id="model-typo",
    ),
    pytest.param(
        spec(config__model_config={"fcnet_hiddens": [16, -4]}),
        [],
        ["config.model_config.fcnet_hiddens", "[16, -4]", "positive integers"],
        id="model-negative-layer",
    ),
    pytest.param(
        spec(config__model_config={"fcnet_hiddens": 64}),
        [],
        ["config.model_config.fcnet_hiddens", "64", "list of positive integers"],
        id="model-hiddens-not-list",
    ),
    pytest.param(
        spec(config__model_config={"fcnet_activation": "sigmoidd"}),
        [],
        ["config.model_config.fcnet_activation", "'sigmoidd'", "relu, tanh"],
        id="model-unknown-activation",
    ),
    pytest.param(
        spec(config__model_config={"vf_share_layers": "no"}),
        [],
        ["config.model_config.vf_share_layers", "'no'", "true or false"],
        id="model-string-bool",
    ),
    pytest.param(
        spec(config__model_config=[16]),
        [],
        ["config.model_config", "[16]", "mapping"],
        id="model-not-mapping",
    ),
    # --- metric keys ----------------------------------------------------------------
    pytest.param(
        spec(pass_criteria={"fairness/demographic_parity/bias": {"max": 0.1}}),
        [],
        [
            "pass_criteria.fairness/demographic_parity/bias",
            "'demographic_parity'",
            "equal_opportunity",
        ],
        id="metric-notion-not-logged",
    ),
    pytest.param(
        spec(pass_criteria={"fairness/equal_opportunity/rate/group_9": {"max": 0.1}}),
        [],
        ["fairness/equal_opportunity/rate/group_9", "rate/<group>", "group_0, group_1"],
        id="metric-unknown-group",
    ),
    pytest.param(
        spec(stop={"training_iteration": 1, "fairness/equal_opportunity/biass": 0.1}),
        [],
        ["stop.fairness/equal_opportunity/biass", "bias, ratio, step_disparity_mean"],
        id="metric-typo",
    ),
    pytest.param(
        spec(
            pass_criteria={
                "fairness/equal_opportunity/selective/imputed_disparity_mean": {"max": 1}
            }
        ),
        [],
        ["selective/imputed_disparity_mean", "selective/accepted_disparity_mean"],
        id="metric-imputed-without-predictor",
    ),
    pytest.param(
        spec(
            config__fairness_notion="equalized_odds",
            pass_criteria={"fairness/equalized_odds/rate/group_0": {"max": 1}},
        ),
        [],
        ["fairness/equalized_odds/rate/group_0", "rate/tpr/<group>", "rate/fpr/<group>"],
        id="metric-missing-pair",
    ),
    pytest.param(
        spec(config__fairness_metrics=False),
        [],
        [BIAS_KEY, "fairness_metrics"],
        id="metric-without-fairness-metrics",
    ),
    pytest.param(
        spec(pass_criteria={"evaluation/fairness/benefit_rate/bias": {"max": 1}}),
        [],
        ["evaluation/fairness/benefit_rate/bias", "'benefit_rate'"],
        id="metric-evaluation-notion",
    ),
    pytest.param(
        spec(
            config__lr={"grid_search": [0.001, 0.002]},
            selection={"disparity": "fairness/accuracy_parity/bias"},
        ),
        [],
        ["selection.fairness/accuracy_parity/bias", "'accuracy_parity'"],
        id="metric-selection-notion",
    ),
    pytest.param(
        spec(pass_criteria={"episode_len": {"min": 1}}),
        [],
        ["pass_criteria.episode_len", RETURN_KEY],
        id="metric-unknown-prefix",
    ),
    # --- pass criteria bounds ----------------------------------------------------------
    pytest.param(
        spec(pass_criteria={RETURN_KEY: {"min": 10, "max": 1}}),
        [],
        [f"pass_criteria.{RETURN_KEY}", "'min': 10", "'max': 1", "min <= max"],
        id="criterion-min-above-max",
    ),
    pytest.param(
        spec(pass_criteria={RETURN_KEY: {"min": "high"}}),
        [],
        [f"pass_criteria.{RETURN_KEY}.min", "'high'", "finite number"],
        id="criterion-string-bound",
    ),
    pytest.param(
        spec(pass_criteria={RETURN_KEY: {"below": 1}}),
        [],
        [f"pass_criteria.{RETURN_KEY}", "'below'", "{min: x}"],
        id="criterion-unknown-bound",
    ),
    # --- checkpoint settings ---------------------------------------------------------
    pytest.param(
        spec(checkpoint_config={"checkpoint_frequency": -1}),
        [],
        ["checkpoint_config.checkpoint_frequency", "-1", ">= 0"],
        id="ckpt-frequency-negative",
    ),
    pytest.param(
        spec(checkpoint_config={"checkpoint_frequency": 2.5}),
        [],
        ["checkpoint_config.checkpoint_frequency", "2.5", "integer"],
        id="ckpt-frequency-float",
    ),
    pytest.param(
        spec(checkpoint_config={"num_to_keep": 0}),
        [],
        ["checkpoint_config.num_to_keep", "0", ">= 1 or null"],
        id="ckpt-keep-zero",
    ),
    pytest.param(
        spec(checkpoint_config={"checkpoint_at_end": "yes"}),
        [],
        ["checkpoint_config.checkpoint_at_end", "'yes'", "true or false"],
        id="ckpt-at-end-string",
    ),
    pytest.param(
        spec(checkpoint_config={"every": 2}),
        [],
        [
            "checkpoint_config.every",
            "checkpoint_at_end, checkpoint_every_minutes, checkpoint_frequency, num_to_keep",
        ],
        id="ckpt-unknown-key",
    ),
    pytest.param(
        spec(checkpoint_config=[1]),
        [],
        ["checkpoint_config", "mapping", "[1]"],
        id="ckpt-not-mapping",
    ),
    # --- env_config --------------------------------------------------------------------
    pytest.param(
        spec(env_config__max_steps=-3),
        [],
        ["env_config", "max_steps", "-3", ">= 1"],
        id="env-config-range",
    ),
    pytest.param(
        spec(env_config__max_stepz=10), [], ["env_config", "max_stepz"], id="env-config-unknown-arg"
    ),
    pytest.param(
        spec(env_config=5), [], ["env_config", "mapping", "got 5"], id="env-config-not-mapping"
    ),
    pytest.param(
        spec(env_config__group_probs=[0.5]),
        [],
        ["env_config", "group_probs", "a list of 2 numbers in [0, 1] summing to 1"],
        id="env-config-shape",
    ),
    pytest.param(
        spec(env_config__loan_amount=1e300),
        [],
        ["env_config", "loan_amount", "1e+300", "1e+15"],
        id="env-config-overflow",
    ),
    pytest.param(
        spec(env_config__loan_amount=float("nan")),
        [],
        ["env_config.loan_amount", "nan", "not finite"],
        id="env-config-nan",
    ),
    pytest.param(
        spec(env_config__obs_bin="yes"),
        [],
        ["env_config", "obs_bin", "'yes'", "valid choices: true, false"],
        id="env-config-flag",
    ),
    pytest.param(
        spec(env_config__interest_rate="1"),
        [],
        ["env_config", "interest_rate", "'1'", "[0, 1e+15]"],
        id="env-config-string-number",
    ),
    pytest.param(
        spec(env=RAISING_ENV_ID, config__fairness_notion="equal_opportunity", pass_criteria=DELETE),
        [],
        ["env_config", RAISING_ENV_ID, "KeyError", "'boom'"],
        id="env-config-other-exception",
    ),
    # --- command-line flags ----------------------------------------------------------
    pytest.param(spec(), ["--seed", "-1"], ["--seed", "-1", ">= 0"], id="flag-seed-negative"),
    pytest.param(
        spec(),
        ["--num-env-runners", "-1"],
        ["--num-env-runners", "-1", ">= 0"],
        id="flag-runners-negative",
    ),
    pytest.param(
        spec(),
        ["--stop", "training_iteration=-1"],
        ["stop.training_iteration", "-1", "> 0"],
        id="flag-stop",
    ),
    pytest.param(
        spec(), ["--config", "lr"], ["--config", "'lr'", "key=value"], id="flag-config-no-equals"
    ),
    pytest.param(
        spec(pass_criteria=DELETE),
        ["--as-test"],
        ["pass_criteria", "--as-test"],
        id="flag-as-test-no-criteria",
    ),
    # --- the budget entry of pass_criteria ---------------------------------------------
    pytest.param(
        spec(pass_criteria={BIAS_KEY: {"max": 1.0}, RETURN_KEY: {"min": -1000}}),
        [],
        [
            "pass_criteria.training_iteration: missing in FILE '",
            "exp.yaml' (experiment 'exp')",
            "training_iteration: {min: v} with 0.8 <= v <= 1",
            "80% to 100% of stop.training_iteration: 1",
        ],
        id="criteria-without-budget-entry",
    ),
    pytest.param(
        spec(
            stop={"num_env_steps_sampled_lifetime": 4000},
            pass_criteria={BIAS_KEY: {"max": 1.0}, "timesteps_total": {"min": 3000}},
        ),
        [],
        [
            "pass_criteria.num_env_steps_sampled_lifetime: {'min': 3000.0}",
            "3200 <= v <= 4000",
        ],
        id="criteria-budget-entry-below-80-percent",
    ),
    pytest.param(
        spec(pass_criteria={BIAS_KEY: {"max": 1.0}, "training_iteration": {"min": 2}}),
        [],
        ["pass_criteria.training_iteration: {'min': 2.0}", "0.8 <= v <= 1"],
        id="criteria-budget-entry-above-the-stop",
    ),
    pytest.param(
        spec(pass_criteria={BIAS_KEY: {"max": 1.0}, "training_iteration": {"max": 1}}),
        [],
        ["pass_criteria.training_iteration: {'max': 1.0}", "{min: v}"],
        id="criteria-budget-entry-a-max",
    ),
    pytest.param(
        spec(
            stop={"time_total_s": 60},
            pass_criteria={BIAS_KEY: {"max": 1.0}, "time_total_s": {"min": 50}},
        ),
        [],
        ["stop: {'time_total_s': 60.0}", "no env-step or iteration budget", "training_iteration"],
        id="criteria-time-budget-only",
    ),
    pytest.param(
        spec(stop={"training_iteration": 10}, pass_criteria__training_iteration={"min": 8}),
        ["--as-test", "--stop", "training_iteration=2"],
        [
            "--stop: training_iteration=2 with --as-test",
            "pass_criteria.training_iteration: {'min': 8.0}",
            "1.6 <= v <= 2",
            "or no --as-test",
        ],
        id="flag-stop-as-test-below-budget-entry",
    ),
    pytest.param(
        spec(stop={"training_iteration": 10}, pass_criteria__training_iteration={"min": 8}),
        ["--as-test", "--stop", "training_iteration=100"],
        ["--stop: training_iteration=100 with --as-test", "80 <= v <= 100"],
        id="flag-stop-as-test-budget-grown",
    ),
]


class _RaisesKeyError(gym.Env):
    """An env whose constructor fails with something other than TypeError/ValueError."""

    def __init__(self, **kwargs):
        raise KeyError("boom")


if RAISING_ENV_ID not in gym.registry:
    gym.register(id=RAISING_ENV_ID, entry_point=_RaisesKeyError)


@pytest.fixture
def guarded(monkeypatch, tmp_path):
    """Forbids Ray and the runner; runs in an empty folder; yields the storage path."""
    import ray

    from rllib_fair.cli import runner

    def forbidden(*args, **kwargs):
        raise AssertionError("bad input must be rejected before Ray or Tune start")

    # Another test of the session may have started its Ray instance already: what
    # matters is that this command does not start one (ray.init is forbidden).
    was_initialized = ray.is_initialized()
    monkeypatch.setattr(ray, "init", forbidden)
    monkeypatch.setattr(runner, "run_experiment", forbidden)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    yield work / "results"
    assert ray.is_initialized() == was_initialized


def run_bad(argv: list[str], capsys) -> str:
    """Runs ``main``; checks exit code 2, empty stdout and one stderr line; returns it."""
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    line = err.rstrip("\n")
    assert line.startswith("rllib-fair: error: ")
    return line


def write(folder: Path, content: dict | str) -> Path:
    path = folder / "exp.yaml"
    if isinstance(content, dict):
        content = yaml.safe_dump({"exp": content}, sort_keys=False)
    path.write_text(content)
    return path


@pytest.mark.parametrize(("content", "extra", "needles"), CASES)
def test_bad_input_is_rejected_before_anything_happens(content, extra, needles, guarded, capsys):
    work = guarded.parent
    path = write(work, content)
    line = run_bad(["train", str(path), "--storage-path", str(guarded), *extra], capsys)
    for needle in needles:
        assert needle in line, f"{needle!r} missing from: {line}"
    assert not guarded.exists()
    assert sorted(p.name for p in work.iterdir()) == ["exp.yaml"]


def test_anchors_and_merge_keys_are_still_data(guarded, capsys):
    """Aliases that only share data are fine: an anchored config merged into another."""
    content = GOOD.replace("  config:\n", "  config: &base\n") + (
        "exp2:\n  run: PPO\n  env: fair/Lending-v0\n  stop: {training_iteration: 1}\n"
        "  config:\n    <<: *base\n    lr: 0.001\n"
    )
    path = write(guarded.parent, content)
    with pytest.raises(AssertionError, match="before Ray or Tune start"):
        main(["train", str(path), "--storage-path", str(guarded)])
    assert capsys.readouterr().err == ""


def test_the_table_is_large_and_the_valid_spec_passes(guarded, capsys):
    """Control: the unedited spec reaches the (forbidden) runner; the table has >= 60 cases."""
    assert len(CASES) >= 60
    path = write(guarded.parent, spec())
    with pytest.raises(AssertionError, match="before Ray or Tune start"):
        main(["train", str(path), "--storage-path", str(guarded)])
    assert capsys.readouterr().err == ""
    assert not guarded.exists()


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
@pytest.mark.parametrize(
    ("run", "key"),
    [("RPPO", "zeta_1"), ("POCAR", "beta_0"), ("ELBERTPO", "alpha"), ("SELLF", "predictor_lr")],
)
def test_non_finite_fairness_weights_fail_validate_from_python(run, key, value):
    """The config classes' own validate() (Python API, no YAML) rejects NaN and inf."""
    from rllib_fair.algorithms import get_config_class

    cfg = get_config_class(run)().environment(ENV_ID)
    setattr(cfg, key, value)
    # the declared bound: >= 0 for the weights, > 0 for a learning rate
    bound = "> 0" if key == "predictor_lr" else ">= 0"
    with pytest.raises(
        ValueError, match=rf"^{key}: {value!r} is invalid; valid: a finite number {bound}$"
    ):
        cfg.validate()


# ----------------------------------------------------------------------- storage paths


def test_storage_path_is_an_existing_file(guarded, capsys):
    work = guarded.parent
    target = work / "taken"
    target.write_text("x")
    path = write(work, spec())
    line = run_bad(["train", str(path), "--storage-path", str(target)], capsys)
    assert "--storage-path" in line and "'" + str(target) + "'" in line and "not a folder" in line
    assert target.read_text() == "x"


def test_storage_path_below_a_file(guarded, capsys):
    work = guarded.parent
    (work / "file").write_text("x")
    path = write(work, spec())
    line = run_bad(["train", str(path), "--storage-path", str(work / "file" / "sub")], capsys)
    assert "--storage-path" in line and "is a file" in line
    assert sorted(p.name for p in work.iterdir()) == ["exp.yaml", "file"]


@pytest.mark.parametrize("key", ["storage_path", "local_dir"])
def test_storage_path_in_the_file_is_a_file(key, guarded, capsys):
    work = guarded.parent
    (work / "taken").write_text("x")
    path = write(work, spec(**{key: "taken"}))
    line = run_bad(["train", str(path)], capsys)
    assert line.startswith(f"rllib-fair: error: {key}: 'taken'") and "not a folder" in line


def test_storage_path_of_the_wrong_type(guarded, capsys):
    path = write(guarded.parent, spec(storage_path=5))
    line = run_bad(["train", str(path)], capsys)
    assert "storage_path: 5 is invalid" in line


def test_experiment_folder_name_taken_by_a_file(guarded, capsys):
    guarded.mkdir()
    (guarded / "exp").write_text("x")
    path = write(guarded.parent, spec())
    line = run_bad(["train", str(path), "--storage-path", str(guarded)], capsys)
    assert "--storage-path" in line and "exp' exists and is not a folder" in line


def test_unwritable_storage_path(guarded, capsys, monkeypatch):
    """Root may write anywhere, so the permission answer is simulated."""
    from rllib_fair.cli import experiment

    real_access = os.access
    locked = guarded.parent / "locked"
    locked.mkdir()

    def access(path, mode, *args, **kwargs):
        if Path(path) == locked and mode & os.W_OK:
            return False
        return real_access(path, mode, *args, **kwargs)

    monkeypatch.setattr(experiment.os, "access", access)
    path = write(guarded.parent, spec())
    line = run_bad(["train", str(path), "--storage-path", str(locked / "results")], capsys)
    assert "--storage-path" in line and "not writable" in line and str(locked) in line
    assert list(locked.iterdir()) == []


# ----------------------------------------------------------------------- CLI flags


@pytest.mark.parametrize(
    ("kwargs", "needles"),
    [
        ({"num_cpus": 0}, ["--num-cpus", "0", "integer >= 1"]),
        ({"num_cpus": -2}, ["--num-cpus", "-2", "integer >= 1"]),
        ({"num_cpus": 1.5}, ["--num-cpus", "1.5", "integer >= 1"]),
        ({"num_env_runners": -1}, ["--num-env-runners", "-1", ">= 0"]),
        ({"seed": -1}, ["--seed", "-1", ">= 0"]),
        ({"seed": True}, ["--seed", "True", ">= 0"]),
    ],
)
def test_validate_cli_flags_rejects(kwargs, needles):
    with pytest.raises(ExperimentError) as excinfo:
        validate_cli_flags(**kwargs)
    message = str(excinfo.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message


def test_validate_cli_flags_accepts_valid_and_missing_values():
    validate_cli_flags()
    validate_cli_flags(num_cpus=1, num_env_runners=0, seed=0)
    validate_cli_flags(num_cpus=16, num_env_runners=4, seed=123)


@pytest.mark.parametrize("value", ["0", "-2"])
def test_num_cpus_below_one_through_main(value, guarded, capsys):
    path = write(guarded.parent, spec())
    line = run_bad(
        ["train", str(path), "--storage-path", str(guarded), "--num-cpus", value], capsys
    )
    assert "--num-cpus" in line and value in line and ">= 1" in line
    assert not guarded.exists()


# ----------------------------------------------------------------------- subprocesses


def _console(work: Path, content: str, *extra: str) -> subprocess.CompletedProcess:
    path = work / "exp.yaml"
    path.write_text(content)
    return subprocess.run(
        [sys.executable, "-m", "rllib_fair.cli", "train", str(path), *extra],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=work,
        env={**os.environ, "RAY_ADDRESS": "", "PYTHONPATH": str(work)},
    )


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        pytest.param(
            GOOD.replace("env: fair/Lending-v0", "env: evil:fair/Lending-v0"),
            "env: 'evil:fair/Lending-v0' is not allowed",
            id="module-env",
        ),
        pytest.param(
            GOOD.replace("run: PPO", "run: !!python/object/apply:evil.touch []"),
            "tag 'tag:yaml.org,2002:python/object/apply:evil.touch' is not allowed",
            id="python-tag",
        ),
        pytest.param(GOOD + GOOD, "duplicate key 'exp'", id="duplicate-experiment"),
    ],
)
def test_console_entry_point_runs_no_code_from_yaml(content, needle, tmp_path):
    """In a fresh process: a module named by the file is never imported."""
    work = tmp_path / "work"
    work.mkdir()
    marker = work / "imported.txt"
    (work / "evil.py").write_text(
        "from pathlib import Path\n"
        f"Path({str(marker)!r}).write_text('imported')\n"
        "def touch():\n    return None\n"
    )
    proc = _console(work, content, "--storage-path", str(work / "results"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rllib-fair: error: "), proc.stderr
    assert needle in lines[0]
    assert not marker.exists()
    assert sorted(p.name for p in work.iterdir() if p.name != "__pycache__") == [
        "evil.py",
        "exp.yaml",
    ]


@pytest.mark.parametrize(
    ("stop", "minimum", "ok"),
    [
        (3, 2.4, True),  # 0.8 * 3 is 2.4000000000000004 in floats: the bound is inclusive
        (3, 3, True),
        (3, 2.39, False),
        (3, 3.01, False),
        (150000, 120000, True),
        (150000, 119999, False),
        (24, 19.2, True),
        (24, 19.1, False),
    ],
)
def test_budget_entry_bounds_are_inclusive(stop, minimum, ok):
    from rllib_fair.cli.criteria import Criterion, budget_criterion

    crit = Criterion("training_iteration", minimum)
    others = [Criterion(BIAS_KEY, None, 0.5)]
    if ok:
        assert budget_criterion({"training_iteration": stop}, [*others, crit], "x") is crit
    else:
        with pytest.raises(ExperimentError, match=r"^pass_criteria\.training_iteration: "):
            budget_criterion({"training_iteration": stop}, [*others, crit], "x")
