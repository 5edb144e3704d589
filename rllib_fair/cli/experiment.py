"""Tuned-example YAML -> validated experiment (no Ray started, nothing written).

File format (RLlib's classic tuned-example layout, one or more experiments)::

    <experiment name>:
      run: PPO                      # a name from `rllib-fair algos`
      env: fair/Lending-v0          # a registered gymnasium id (`rllib-fair envs`)
      env_config: {max_steps: 2000} # constructor kwargs of the env (optional)
      stop: {num_env_steps_sampled_lifetime: 40000}
      config: {lr: 0.0003, fairness_notion: equal_opportunity, ...}
      pass_criteria:                # optional; checked by --as-test
        env_runners/episode_return_mean: {min: 100}
        fairness/equal_opportunity/bias: {max: 0.5}
      checkpoint_config: {checkpoint_at_end: true}
      num_samples: 1
      storage_path: results         # optional; --storage-path overrides

A config value may be a grid, ``{grid_search: [v1, v2, ...]}``: one trial per grid
point, then the SELLF paper's selection rule (Alg. 2) picks one configuration; an
optional ``selection:`` block sets its metric and omega (see :mod:`rllib_fair.cli.sweep`).

Everything is checked here before anything runs; a problem raises
:class:`ExperimentError` whose message is one line naming the key, the bad value and
the valid choices.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

TOP_LEVEL_KEYS = (
    "run",
    "env",
    "env_config",
    "stop",
    "config",
    "pass_criteria",
    "checkpoint_config",
    "num_samples",
    "storage_path",
    "local_dir",
    "selection",
)

# Old result keys people still write in stop / pass_criteria blocks.
LEGACY_RESULT_KEYS = {
    "episode_reward_mean": "env_runners/episode_return_mean",
    "episode_return_mean": "env_runners/episode_return_mean",
    "timesteps_total": "num_env_steps_sampled_lifetime",
    "time_total_s": "time_total_s",
    "training_iteration": "training_iteration",
}
BUDGET_KEYS = ("training_iteration", "num_env_steps_sampled_lifetime", "time_total_s")
RESULT_PREFIXES = ("env_runners/", "fairness/", "evaluation/", "learners/", "perf/")

# Keys RLlib 2.60's update_from_dict would store as dead attributes (old API stack) or
# that were renamed; the runner rejects them with the new name.
DEAD_CONFIG_KEYS = {
    "model": "model_config",
    "num_sgd_iter": "num_epochs",
    "sgd_minibatch_size": "minibatch_size",
    "min_iter_time_s": "min_time_s_per_iteration",
    "num_envs_per_worker": "num_envs_per_env_runner",
    "num_rollout_workers": "num_env_runners",
    "rollout_fragment_length_per_worker": "rollout_fragment_length",
    "train_batch_size_per_worker": "train_batch_size_per_learner",
    "lr_schedule": "lr (a list of [timestep, value] pairs)",
    "entropy_coeff_schedule": "entropy_coeff (a list of [timestep, value] pairs)",
    "vf_share_layers": "model_config: {vf_share_layers: ...}",
    "batch_mode_per_worker": "batch_mode",
    "evaluation_num_workers": "evaluation_num_env_runners",
}
# Settings that exist on AlgorithmConfig but do nothing on the new API stack.
OLD_STACK_ONLY = {"exploration_config", "preprocessor_pref", "observation_filter"}
# Public settings that are properties (with a setter) rather than plain attributes.
SETTABLE_PROPERTIES = {"train_batch_size_per_learner"}
CONFIG_TRANSLATIONS = {
    "lambda": "lambda_",
    "num_workers": "num_env_runners",
    "framework": "framework_str",
    "callbacks": "callbacks_class",
    "input": "input_",
}


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e9`` and ``5e-5`` as floats (YAML 1.2).

    PyYAML follows YAML 1.1, where a float needs a dot and a signed exponent, so
    ``lr: 5e-5`` or ``{min: 1e9}`` would silently become strings.
    """


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


class ExperimentError(ValueError):
    """A bad experiment file or override; the message is one line."""


@dataclass
class Criterion:
    """One pass criterion: ``metric`` must be >= ``minimum`` and/or <= ``maximum``."""

    metric: str
    minimum: float | None = None
    maximum: float | None = None

    def holds(self, value: float | None) -> bool:
        """True if ``value`` is finite and within the bounds."""
        if value is None or not math.isfinite(value):
            return False
        if self.minimum is not None and value < self.minimum:
            return False
        return not (self.maximum is not None and value > self.maximum)

    def better(self, a: float | None, b: float | None) -> float | None:
        """The better of two values under this criterion (for reporting the best reached)."""
        vals = [v for v in (a, b) if v is not None and math.isfinite(v)]
        if not vals:
            return None
        return min(vals) if self.maximum is not None and self.minimum is None else max(vals)

    def describe(self) -> str:
        """Human-readable bound, e.g. ``>= 100`` or ``<= 0.5``."""
        parts = []
        if self.minimum is not None:
            parts.append(f">= {self.minimum:g}")
        if self.maximum is not None:
            parts.append(f"<= {self.maximum:g}")
        return " and ".join(parts)


@dataclass
class Experiment:
    """A validated experiment ready to run."""

    name: str
    run: str
    env: str
    config: Any  # the algorithm's AlgorithmConfig subclass instance
    stop: dict[str, float]
    pass_criteria: list[Criterion] = field(default_factory=list)
    checkpoint_config: dict[str, Any] = field(default_factory=dict)
    num_samples: int = 1
    storage_path: str | None = None
    grid: dict[str, list] = field(default_factory=dict)  # YAML key -> values
    selection: Any = None  # rllib_fair.cli.sweep.Selection when there is a grid


def parse_value(text: str) -> Any:
    """Parses a ``--config key=value`` right-hand side as YAML (numbers, lists, ...)."""
    try:
        return yaml.load(text, Loader=_Loader)  # _Loader is a SafeLoader
    except yaml.YAMLError:
        return text


def parse_overrides(items: list[str] | None, flag: str) -> dict[str, Any]:
    """Turns ``["a=1", "b=x"]`` into ``{"a": 1, "b": "x"}``."""
    out = {}
    for item in items or []:
        if "=" not in item:
            raise ExperimentError(f"{flag}: {item!r} is not of the form key=value")
        key, value = item.split("=", 1)
        out[key.strip()] = parse_value(value)
    return out


def load_experiments(path: str | Path) -> dict[str, dict]:
    """Reads a tuned-example YAML file into ``{name: spec}``."""
    path = Path(path)
    if not path.is_file():
        raise ExperimentError(f"FILE: {str(path)!r} does not exist or is not a file")
    try:
        data = yaml.load(path.read_text(), Loader=_Loader)  # _Loader is a SafeLoader
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ExperimentError(f"FILE: {str(path)!r} is not valid YAML{where}: {problem}") from None
    if not isinstance(data, dict) or not data:
        raise ExperimentError(
            f"FILE: {str(path)!r} must map experiment names to specs "
            "({name: {run, env, stop, config, ...}}), got "
            f"{type(data).__name__}"
        )
    for name, spec in data.items():
        if not isinstance(spec, dict):
            raise ExperimentError(
                f"{name}: experiment spec must be a mapping with keys "
                f"{', '.join(TOP_LEVEL_KEYS)}; got {type(spec).__name__}"
            )
    return data


def _number(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ExperimentError(f"{key}: {value!r} is not a finite number")
    return float(value)


def _result_key(section: str, key: str) -> str:
    key = LEGACY_RESULT_KEYS.get(key, key)
    if key in BUDGET_KEYS or key.startswith(RESULT_PREFIXES):
        return key
    valid = ", ".join(sorted(set(LEGACY_RESULT_KEYS.values())))
    raise ExperimentError(
        f"{section}.{key}: unknown result key {key!r}; valid: {valid}, or a key under "
        f"{', '.join(RESULT_PREFIXES)}"
    )


def _parse_stop(stop: Any) -> dict[str, float]:
    if stop is None:
        stop = {}
    if not isinstance(stop, dict):
        raise ExperimentError(f"stop: must be a mapping of result key to value, got {stop!r}")
    out = {}
    for key, value in stop.items():
        rkey = _result_key("stop", key)
        num = _number(f"stop.{key}", value)
        if rkey in BUDGET_KEYS and num <= 0:
            raise ExperimentError(
                f"stop.{key}: {value!r} is not a valid budget; valid: a number > 0"
            )
        out[rkey] = num
    if not any(k in out for k in BUDGET_KEYS):
        raise ExperimentError(
            f"stop: no budget given; valid: at least one of {', '.join(BUDGET_KEYS)} "
            "(or --stop key=value)"
        )
    return out


def _parse_criteria(block: Any) -> list[Criterion]:
    if block is None:
        return []
    if not isinstance(block, dict):
        raise ExperimentError(
            f"pass_criteria: must map result keys to {{min: x}} / {{max: x}}, got {block!r}"
        )
    out = []
    for key, bound in block.items():
        rkey = _result_key("pass_criteria", key)
        if isinstance(bound, (int, float)) and not isinstance(bound, bool):
            bound = {"min": bound}
        if not isinstance(bound, dict) or not bound or set(bound) - {"min", "max"}:
            raise ExperimentError(
                f"pass_criteria.{key}: {bound!r} is invalid; valid: {{min: x}}, {{max: x}} or both"
            )
        out.append(
            Criterion(
                rkey,
                _number(f"pass_criteria.{key}.min", bound["min"]) if "min" in bound else None,
                _number(f"pass_criteria.{key}.max", bound["max"]) if "max" in bound else None,
            )
        )
    return out


def _check_env(env: Any) -> str:
    import gymnasium as gym

    import rllib_fair  # noqa: F401  (registers the fair/* ids)
    from rllib_fair.envs import ENV_IDS

    if not isinstance(env, str) or not env:
        raise ExperimentError(f"env: {env!r} is invalid; valid choices: {', '.join(ENV_IDS)}")
    env_id = env.split(":", 1)[1] if ":" in env else env
    if env_id not in gym.registry:
        raise ExperimentError(
            f"env: unknown environment {env!r}; valid choices: {', '.join(ENV_IDS)} "
            "(or any registered gymnasium id)"
        )
    return env


def build_config(run: str, env: str, env_config: dict, config: dict):
    """Creates the algorithm's config and applies ``config`` key by key, strictly."""
    from rllib_fair.algorithms import get_config_class

    cfg = get_config_class(run)()
    cfg.environment(env, env_config=env_config)
    # PPOConfig() defaults to 2 remote env runners; tuned examples start from 0 unless
    # they say otherwise (RLLIB_NOTES: a 2-core machine).
    cfg.env_runners(num_env_runners=0)
    clean: dict[str, Any] = {}
    for key, value in config.items():
        if key in DEAD_CONFIG_KEYS:
            raise ExperimentError(
                f"config.{key}: not used by RLlib 2.60's new API stack; use "
                f"{DEAD_CONFIG_KEYS[key]} instead"
            )
        attr = CONFIG_TRANSLATIONS.get(key, key)
        if attr in OLD_STACK_ONLY:
            raise ExperimentError(f"config.{key}: only used by RLlib's old API stack; remove it")
        if attr in ("env", "env_config"):
            raise ExperimentError(
                f"config.{key}: give {key} at the experiment level, not in config"
            )
        if attr == "model_config":
            if not isinstance(value, dict):
                raise ExperimentError(
                    f"config.model_config: {value!r} is invalid; valid: a mapping "
                    "(e.g. {fcnet_hiddens: [64, 64]})"
                )
            cfg.rl_module(model_config=dict(value))
            continue
        if attr in SETTABLE_PROPERTIES:
            clean[key] = value
            continue
        if attr.startswith("_") or attr not in vars(cfg) or callable(getattr(cfg, attr, None)):
            close = sorted(k for k in vars(cfg) if not k.startswith("_") and _similar(k, attr))
            hint = f"; did you mean {', '.join(close[:3])}?" if close else ""
            raise ExperimentError(
                f"config.{key}: unknown setting for {run} ({type(cfg).__name__}){hint}"
            )
        clean[key] = value
    try:
        cfg.update_from_dict(clean)
    except Exception as e:  # RLlib raises on a few deprecated keys
        raise ExperimentError(f"config: {_first_line(e)}") from None
    return cfg


def _similar(a: str, b: str) -> bool:
    import difflib

    return difflib.SequenceMatcher(None, a, b).ratio() > 0.75


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def validate_experiment(
    name: str,
    spec: dict,
    *,
    stop_overrides: dict | None = None,
    config_overrides: dict | None = None,
    num_env_runners: int | None = None,
    seed: int | None = None,
    storage_path: str | None = None,
) -> Experiment:
    """Checks one experiment spec (plus command-line overrides) and builds its config."""
    from rllib_fair.algorithms import get_spec

    unknown = sorted(set(spec) - set(TOP_LEVEL_KEYS))
    if unknown:
        raise ExperimentError(
            f"{name}.{unknown[0]}: unknown key; valid keys: {', '.join(TOP_LEVEL_KEYS)}"
        )
    run = spec.get("run")
    if not isinstance(run, str):
        from rllib_fair.algorithms import list_algorithms

        raise ExperimentError(
            f"run: {run!r} is invalid; valid choices: {', '.join(list_algorithms())}"
        )
    try:
        get_spec(run)
    except ValueError as e:
        raise ExperimentError(str(e)) from None
    if not isinstance(spec.get("config") or {}, dict):
        raise ExperimentError(f"config: must be a mapping, got {spec.get('config')!r}")
    config = dict(spec.get("config") or {})
    env = spec.get("env", config.pop("env", None))
    env = _check_env(env)
    env_config = spec.get("env_config") or config.pop("env_config", None) or {}
    if not isinstance(env_config, dict):
        raise ExperimentError(
            f"env_config: must be a mapping of constructor arguments, got {env_config!r}"
        )
    env_config = dict(env_config)
    config.update(config_overrides or {})
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ExperimentError(f"--seed: {seed!r} is invalid; valid: an integer >= 0")
        config["seed"] = seed
    if num_env_runners is not None:
        if num_env_runners < 0:
            raise ExperimentError(
                f"--num-env-runners: {num_env_runners!r} is invalid; valid: an integer >= 0"
            )
        config["num_env_runners"] = num_env_runners
    from rllib_fair.cli.sweep import SweepError, parse_selection, split_grid

    try:
        config, grid = split_grid(config)
    except SweepError as e:
        raise ExperimentError(str(e)) from None
    cfg = _built_and_validated(run, env, env_config, config)
    for key, values in grid.items():  # every grid value must pass like a single value
        for value in values[1:]:
            try:
                _built_and_validated(run, env, env_config, {**config, key: value})
            except ExperimentError as e:
                msg = f"config.{key}.grid_search: {value!r} rejected: {e}"
                raise ExperimentError(msg) from None
    selection = None
    if grid or spec.get("selection") is not None:
        try:
            selection = parse_selection(spec.get("selection"), cfg)
        except SweepError as e:
            raise ExperimentError(str(e)) from None
    _check_env_config(env, env_config)
    stop = dict(spec.get("stop") or {})
    stop.update(stop_overrides or {})
    num_samples = spec.get("num_samples", 1)
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ExperimentError(f"num_samples: {num_samples!r} is invalid; valid: an integer >= 1")
    ckpt = spec.get("checkpoint_config") or {}
    if not isinstance(ckpt, dict):
        raise ExperimentError(f"checkpoint_config: must be a mapping, got {ckpt!r}")
    valid_ckpt = {"checkpoint_frequency", "checkpoint_at_end", "num_to_keep"}
    for key in ckpt:
        if key not in valid_ckpt:
            raise ExperimentError(
                f"checkpoint_config.{key}: unknown key; valid keys: {', '.join(sorted(valid_ckpt))}"
            )
    return Experiment(
        name=str(name),
        run=run,
        env=env,
        config=cfg,
        stop=_parse_stop(stop),
        pass_criteria=_parse_criteria(spec.get("pass_criteria")),
        checkpoint_config=dict(ckpt),
        num_samples=num_samples,
        storage_path=storage_path or spec.get("storage_path") or spec.get("local_dir"),
        grid=grid,
        selection=selection,
    )


def _built_and_validated(run: str, env: str, env_config: dict, config: dict):
    with _quiet_rllib():
        cfg = build_config(run, env, env_config, config)
        try:
            cfg.validate()
        except ExperimentError:
            raise
        except Exception as e:
            raise ExperimentError(f"config: {_first_line(e)}") from None
    return cfg


def param_space(exp: Experiment):
    """The config Tune runs: ``exp.config`` with its grids as ``tune.grid_search``."""
    if not exp.grid:
        return exp.config
    from ray import tune

    space = exp.config.copy(copy_frozen=False)
    for key, values in exp.grid.items():
        setattr(space, CONFIG_TRANSLATIONS.get(key, key), tune.grid_search(values))
    return space


@contextlib.contextmanager
def _quiet_rllib():
    """Mutes RLlib's warnings while a config is built and validated.

    ``validate()`` logs "You are running ... on the new API stack!" to stderr, which
    would break the one-line error contract for bad input.
    """
    import ray.rllib  # noqa: F401  (importing ray resets the logger's level)

    log = logging.getLogger("ray.rllib")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def _check_env_config(env: str, env_config: dict) -> None:
    """Builds the env once (cheap) so a bad env_config fails here, not in a runner."""
    import gymnasium as gym

    try:
        e = gym.make(env, **env_config)
        e.close()
    except TypeError as err:
        raise ExperimentError(f"env_config: {_first_line(err)}") from None
    except ValueError as err:
        raise ExperimentError(f"env_config: {_first_line(err)}") from None
