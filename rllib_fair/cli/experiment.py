"""Tuned-example YAML -> validated experiment (no Ray started, nothing written).

File format (RLlib's classic tuned-example layout, one or more experiments)::

    <experiment name>:
      run: PPO                      # a name from `rllib-fair algos`
      env: fair/Lending-v0          # a registered gymnasium id (`rllib-fair envs`)
      env_config: {max_steps: 2000} # constructor kwargs of the env (optional)
      stop: {num_env_steps_sampled_lifetime: 40000}
      config: {lr: 0.0003, fairness_notion: equal_opportunity, ...}
      pass_criteria:                # optional; checked by --as-test
        num_env_steps_sampled_lifetime: {min: 32000}  # the budget entry: 80-100% of stop
        env_runners/episode_return_mean: {min: 100}
        fairness/equal_opportunity/bias: {max: 0.5}
      checkpoint_config: {checkpoint_at_end: true}
      num_samples: 1
      storage_path: results         # optional; --storage-path overrides

A ``pass_criteria`` block must contain its budget entry: a ``{min: v}`` on the stop's env
steps or iterations (the same key as in ``stop:``) with v between 80% and 100% of the
stop value, so that an iteration can only pass once at least 80% of the budget was
trained (see :func:`budget_criterion`).

A config value may be a grid, ``{grid_search: [v1, v2, ...]}``: one trial per grid
point, then the SELLF paper's selection rule (Alg. 2) picks one configuration; an
optional ``selection:`` block sets its metric and omega (see :mod:`rllib_fair.cli.sweep`).
A config value may also be a sampled space (``{uniform: [a, b]}``, ``{loguniform: ...}``,
``{choice: [...]}``, ``{randint: ...}``, ``{quniform: [a, b, q]}``); ``seeds:`` runs every
configuration on every seed and a ``tune:`` block adds a scheduler and a search
algorithm (see :mod:`rllib_fair.cli.tuning`).

Everything is checked here before anything runs (no Ray, no folder): a problem raises
:class:`ExperimentError` whose message is one line naming the key, the bad value and
the valid choices.

Trust model: the file is data. The loader is a YAML safe loader that also rejects
explicit tags (``!!python/...`` and every other ``!tag``) and duplicate keys; ``env:``
must be an id already registered with gymnasium, never ``module:id`` (gymnasium would
import the module); ``run:`` must be a registered algorithm name. Nothing named in the
file is imported or executed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import logging
import math
import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rllib_fair.cli.result_keys import (
    BUDGET_KEYS,
    LEGACY_RESULT_KEYS,
    ExperimentError,
    result_key,
)
from rllib_fair.settings import RLLIB_SETTINGS, Setting, SettingError, check_values

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
    "seeds",
    "tune",
)

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


class _DataOnlyError(yaml.YAMLError):
    """A YAML construct a data file may not use (a duplicate key, an explicit tag)."""

    def __init__(self, problem: str, mark) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


class _Loader(yaml.SafeLoader):
    """SafeLoader for data files: floats like ``5e-5``, no duplicate keys, no tags.

    PyYAML follows YAML 1.1, where a float needs a dot and a signed exponent, so
    ``lr: 5e-5`` or ``{min: 1e9}`` would silently become strings; the YAML 1.2 form is
    added here. A mapping that repeats a key (a second ``config:`` block, two
    experiments with one name) would silently keep the last value; it is an error.
    Explicit tags (``!!python/object``, ``!!binary``, ``!custom``...) are errors too:
    a data file has no use for them.
    """

    def compose_node(self, parent, index):
        """Rejects explicit tags before composing a node."""
        event = self.peek_event()
        tag = getattr(event, "tag", None)
        if tag is not None and not isinstance(event, yaml.AliasEvent) and tag != "!":
            raise _DataOnlyError(
                f"tag {tag!r} is not allowed (the file is data: plain values, lists and "
                "mappings only)",
                event.start_mark,
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        """Rejects a key that appears twice in one mapping (merge keys ``<<`` aside)."""
        if isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    continue  # SafeLoader reports unhashable keys itself
                line = key_node.start_mark.line + 1
                if key in first_line:
                    raise _DataOnlyError(
                        f"duplicate key {key!r} (first at line {first_line[key]}); valid: "
                        "each key once per mapping",
                        key_node.start_mark,
                    )
                first_line[key] = line
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


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
    selection: Any = None  # rllib_fair.cli.sweep.Selection when there is a sweep
    spaces: dict[str, Any] = field(default_factory=dict)  # YAML key -> tuning.Space
    seeds: list[int] | None = None  # every configuration runs on each of these seeds
    tune: Any = None  # rllib_fair.cli.tuning.TuneSettings of a tune: block

    @property
    def is_sweep(self) -> bool:
        """More than one configuration or seed, or a scheduler/search algorithm."""
        return bool(self.grid or self.spaces or self.seeds or self.tune or self.num_samples > 1)


def parse_value(text: str) -> Any:
    """Parses a ``--config key=value`` right-hand side as YAML (numbers, lists, ...)."""
    try:
        value = yaml.load(text, Loader=_Loader)  # _Loader is a SafeLoader
        _check_expansion(value)
    except (yaml.YAMLError, RecursionError):
        return text
    return value


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
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ExperimentError(f"FILE: {str(path)!r} cannot be read: {_first_line(e)}") from None
    try:
        data = yaml.load(text, Loader=_Loader)  # _Loader is a SafeLoader
        _check_expansion(data)
    except RecursionError:
        raise ExperimentError(
            f"FILE: {str(path)!r} is nested too deeply; valid: ordinary nesting depths"
        ) from None
    except _DataOnlyError as e:
        mark = e.problem_mark
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ExperimentError(f"FILE: {str(path)!r}{where}: {e.problem}") from None
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
        _check_experiment_name(name)
        if not isinstance(spec, dict):
            raise ExperimentError(
                f"{name}: experiment spec must be a mapping with keys "
                f"{', '.join(TOP_LEVEL_KEYS)}; got {type(spec).__name__}"
            )
    return data


#: Most values (scalars, lists and mappings, counted with every alias expanded) a file
#: may hold; YAML aliases can otherwise describe exponentially large data in a few lines.
MAX_VALUES = 100_000


def _check_expansion(data: Any) -> None:
    """Rejects recursive data (an alias inside its own anchor) and alias bombs."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(value: Any) -> int:
        if not isinstance(value, (dict, list)):
            return 1
        key = id(value)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise _DataOnlyError("an alias refers to its own anchor (recursive data)", None)
        active.add(key)
        children = list(value.items()) if isinstance(value, dict) else value
        total = 1
        for child in children:
            total += size(child[1]) + 1 if isinstance(value, dict) else size(child)
            if total > MAX_VALUES:
                raise _DataOnlyError(
                    f"holds more than {MAX_VALUES:,} values once aliases are expanded", None
                )
        active.discard(key)
        sizes[key] = total
        return total

    size(data)


def _check_experiment_name(name: Any) -> None:
    """The name becomes a folder under the storage path: a plain, non-empty name."""
    if (
        not isinstance(name, str)
        or not name.strip()
        or name in (".", "..")
        or any(c in name for c in "/\\\0")
    ):
        raise ExperimentError(
            f"FILE: experiment name {name!r} is invalid; valid: a non-empty string without "
            "'/' or '\\' (it names the results folder), other than '.' and '..'"
        )


def _number(key: str, value: Any) -> float:
    if not _is_number(value) or not _finite(value):
        raise ExperimentError(f"{key}: {value!r} is not a finite number")
    return float(value)


def _finite(value: int | float) -> bool:
    """``math.isfinite`` that is also False (not OverflowError) for ints beyond float range."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _parse_stop(stop: Any) -> dict[str, float]:
    if stop is None:
        stop = {}
    if not isinstance(stop, dict):
        raise ExperimentError(f"stop: must be a mapping of result key to value, got {stop!r}")
    out = {}
    for key, value in stop.items():
        rkey = result_key("stop", key)
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


#: The least share of the stop budget an iteration must have trained to pass (the
#: ``pass_criteria`` budget entry's lowest allowed ``min``).
PASS_BUDGET_FRACTION = 0.8
#: Stop keys a budget entry can name (a time budget depends on the machine).
PASS_BUDGET_KEYS = ("num_env_steps_sampled_lifetime", "training_iteration")


def _plain(value: float) -> str:
    """``150000`` for 150000.0, ``2.4`` for 2.4 (no exponent for budgets)."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def budget_criterion(stop: dict[str, float], criteria: list[Criterion], where: str) -> Criterion:
    """The pass criterion that proves the budget was trained.

    It is a ``{min: v}`` on a key of ``stop`` among :data:`PASS_BUDGET_KEYS` (env steps
    or iterations) with ``PASS_BUDGET_FRACTION * stop[key] <= v <= stop[key]``. Since all
    criteria must hold on one and the same iteration, no iteration before 80% of the
    budget can pass, and so ``--as-test`` cannot stop a trial there either.

    Args:
        stop: the parsed stop block (result key -> limit).
        criteria: the parsed pass criteria.
        where: what the criteria belong to, for the error (a file and experiment name).

    Raises:
        ExperimentError: one line naming the key, the value found and the range required.
    """
    keys = [k for k in PASS_BUDGET_KEYS if k in stop]
    if not keys:
        raise ExperimentError(
            f"stop: {stop!r} in {where} has no env-step or iteration budget for "
            "pass_criteria to prove; valid: add num_env_steps_sampled_lifetime or "
            "training_iteration to stop"
        )
    by_metric = {c.metric: c for c in criteria}
    for key in keys:
        c = by_metric.get(key)
        low = PASS_BUDGET_FRACTION * stop[key]  # 0.8 * 3 is 2.4000000000000004 in floats
        if (
            c is not None
            and c.maximum is None
            and c.minimum is not None
            and low - 1e-9 * abs(low) <= c.minimum <= stop[key]
        ):
            return c
    key = next((k for k in keys if k in by_metric), keys[0])
    found = by_metric.get(key)
    if found is None:
        value = "missing"
    else:
        bound = {"min": found.minimum, "max": found.maximum}
        value = repr({k: v for k, v in bound.items() if v is not None})
    required = " or ".join(
        f"{k}: {{min: v}} with {_plain(PASS_BUDGET_FRACTION * stop[k])} <= v <= "
        f"{_plain(stop[k])} ({PASS_BUDGET_FRACTION:.0%} to 100% of stop.{k}: {_plain(stop[k])})"
        for k in keys
    )
    raise ExperimentError(
        f"pass_criteria.{key}: {value} in {where}; required: the budget entry "
        f"{required}, so that a pass proves the budget was trained"
    )


def _has_budget(stop: Any) -> bool:
    """True if a raw stop block names one of :data:`BUDGET_KEYS` (legacy names too)."""
    if not isinstance(stop, dict):
        return False
    return any(LEGACY_RESULT_KEYS.get(k, k) in BUDGET_KEYS for k in stop if isinstance(k, str))


def _parse_criteria(block: Any) -> list[Criterion]:
    if block is None:
        return []
    if not isinstance(block, dict):
        raise ExperimentError(
            f"pass_criteria: must map result keys to {{min: x}} / {{max: x}}, got {block!r}"
        )
    out = []
    for key, bound in block.items():
        rkey = result_key("pass_criteria", key)
        if isinstance(bound, (int, float)) and not isinstance(bound, bool):
            bound = {"min": bound}
        if not isinstance(bound, dict) or not bound or set(bound) - {"min", "max"}:
            raise ExperimentError(
                f"pass_criteria.{key}: {bound!r} is invalid; valid: {{min: x}}, {{max: x}} or both"
            )
        crit = Criterion(
            rkey,
            _number(f"pass_criteria.{key}.min", bound["min"]) if "min" in bound else None,
            _number(f"pass_criteria.{key}.max", bound["max"]) if "max" in bound else None,
        )
        if crit.minimum is not None and crit.maximum is not None and crit.minimum > crit.maximum:
            raise ExperimentError(
                f"pass_criteria.{key}: {bound!r} can never hold (min > max); valid: min <= max"
            )
        out.append(crit)
    return out


# ----------------------------------------------------------------------------- values


@dataclass(frozen=True)
class _Rule:
    """A check of one setting's value and the text naming what is valid."""

    ok: Callable[[Any], bool]
    valid: str


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _real(
    low: float | None = None,
    high: float | None = None,
    *,
    strict: bool = False,
    none: bool = False,
) -> _Rule:
    """A finite number ``>= low`` (``> low`` if ``strict``) and ``<= high``; or null."""

    def ok(value: Any) -> bool:
        if value is None:
            return none
        if not _is_number(value) or not _finite(value):
            return False
        if low is not None and (value <= low if strict else value < low):
            return False
        return high is None or value <= high

    if low is not None and high is not None:
        text = f"a number in {'(' if strict else '['}{low:g}, {high:g}]"
    elif low is not None:
        text = f"a finite number {'>' if strict else '>='} {low:g}"
    else:
        text = "a finite number"
    return _Rule(ok, text + (" or null" if none else ""))


def _integer(low: int, *, none: bool = False, also: tuple[str, ...] = ()) -> _Rule:
    """An integer ``>= low`` (bools and floats rejected), one of ``also``, or null."""

    def ok(value: Any) -> bool:
        if value is None:
            return none
        if isinstance(value, str):
            return value in also
        return _is_int(value) and value >= low

    extra = [repr(a) for a in also] + (["null"] if none else [])
    return _Rule(ok, f"an integer >= {low}" + "".join(f" or {e}" for e in extra))


def _positive_int_list(value: Any) -> bool:
    return isinstance(value, list) and all(_is_int(v) and v > 0 for v in value)


_ACTIVATIONS = ("relu", "tanh", "elu", "swish", "silu", "linear")


def _activation(value: Any) -> bool:
    """What RLlib's torch ``get_activation_fn`` accepts for a layer: a name or null."""
    if value is None:
        return True
    if not isinstance(value, str):
        return False
    if value.lower() in _ACTIVATIONS:
        return True
    from torch import nn

    cls = getattr(nn, value, None)
    return isinstance(cls, type) and cls.__module__ == "torch.nn.modules.activation"


_POSITIVE = _real(0, strict=True)
_HIDDENS = _Rule(_positive_int_list, "a list of positive integers (layer sizes), e.g. [64, 64]")
_ACTIVATION = _Rule(
    _activation,
    f"one of {', '.join(_ACTIVATIONS)} (or a torch.nn activation class name such as GELU)",
)

#: Checks of RLlib's config settings (attribute names, after CONFIG_TRANSLATIONS), applied
#: to every value and grid value before RLlib sees it: the declarations of
#: :data:`rllib_fair.settings.RLLIB_SETTINGS`. The algorithm's own settings are checked by
#: its declarations (``DECLARED_SETTINGS``); settings declared nowhere get a type check
#: against their default (a number for numbers, true/false for booleans).
CONFIG_RULES: dict[str, Setting] = {s.name: s for s in RLLIB_SETTINGS}

#: RLlib's DEPRECATED_VALUE: the default of settings it still stores but never reads.
_DEPRECATED_VALUE = -1

#: Settings whose values RLlib imports (a string is taken as ``module.Class``), calls or
#: puts into the workers' environment variables: never from a data file.
CODE_SETTINGS = frozenset(
    {
        "callbacks_class",
        "sample_collector",
        "policies",
        "policy_mapping_fn",
        "policies_to_train",
        "observation_fn",
        "algo_class",
        "stats_cls_lookup",
        "logger_config",
        "rl_module_spec",
        "extra_python_environs_for_driver",
        "extra_python_environs_for_worker",
        "replay_buffer_config",
    }
)
CODE_SETTING_SUFFIXES = re.compile(r"(_cls|_class|_fn|_creator|_connector)$")
#: Offline RL settings: read or write data files instead of sampling the env.
OFFLINE_IO_SETTINGS = frozenset(
    {"input_", "output", "input_read_method", "output_write_method", "input_config"}
)

#: Checks of ``model_config`` entries; other entries get the type check against the
#: default of RLlib's ``DefaultModelConfig``.
MODEL_RULES: dict[str, _Rule] = {
    "fcnet_hiddens": _HIDDENS,
    "head_fcnet_hiddens": _HIDDENS,
    "fusionnet_hiddens": _HIDDENS,
    "predictor_hiddens": _Rule(_positive_int_list, "a list of positive integers ([] allowed)"),
    "fcnet_activation": _ACTIVATION,
    "head_fcnet_activation": _ACTIVATION,
    "conv_activation": _ACTIVATION,
    "fusionnet_activation": _ACTIVATION,
    "max_seq_len": _integer(1),
    "lstm_cell_size": _integer(1),
    "log_std_clip_param": _POSITIVE,
}


def _non_finite(value: Any, path: str = "") -> tuple[str, float] | None:
    """``(path, x)`` of the first NaN or infinite float inside ``value``, else None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for k, v in items:
        found = _non_finite(v, f"{path}.{k}" if isinstance(k, str) else f"{path}[{k}]")
        if found is not None:
            return found
    return None


def _check_value(where: str, value: Any, rule: _Rule | Setting | None, default: Any) -> None:
    """One setting: finite numbers, then its rule or declaration, else its default's type."""
    bad = _non_finite(value)
    if isinstance(rule, Setting) and not rule.finite and bad is not None and not bad[0]:
        bad = None if value == math.inf else bad  # a declared infinite value (inf: off)
    if bad is not None:
        if not bad[0] and isinstance(rule, Setting):
            valid = rule.valid_text().removeprefix("choices: ")
        elif not bad[0]:
            valid = rule.valid if rule is not None else "a finite number"
        else:
            valid = "finite numbers"
        raise ExperimentError(f"{where}{bad[0]}: {bad[1]!r} is not finite; valid: {valid}")
    if isinstance(rule, Setting):
        err = rule.problem(value, where)
        if err is not None:
            raise ExperimentError(str(err))
        return
    if rule is not None:
        if not rule.ok(value):
            raise ExperimentError(f"{where}: {value!r} is invalid; valid: {rule.valid}")
        return
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ExperimentError(f"{where}: {value!r} is invalid; valid: true or false")
    elif _is_number(default) and value is not None and not _is_number(value):
        raise ExperimentError(
            f"{where}: {value!r} ({type(value).__name__}) is invalid; valid: a number "
            f"(default {default!r})"
        )


def _check_env(env: Any) -> str:
    import gymnasium as gym

    import rllib_fair  # noqa: F401  (registers the fair/* ids)
    from rllib_fair.envs import ENV_IDS

    valid = f"valid choices: {', '.join(ENV_IDS)} (or an id registered with gymnasium from Python)"
    if not isinstance(env, str) or not env:
        raise ExperimentError(f"env: {env!r} is invalid; {valid}")
    if ":" in env:
        raise ExperimentError(
            f"env: {env!r} is not allowed: a 'module:id' env makes gymnasium import the module "
            f"(YAML files are data); {valid}"
        )
    if env not in gym.registry:
        raise ExperimentError(f"env: unknown environment {env!r}; {valid}")
    return env


def build_config(run: str, env: str, env_config: dict, config: dict):
    """Creates the algorithm's config and applies ``config`` key by key, strictly.

    Every key must be a setting of the algorithm's config class and every value must
    pass :data:`CONFIG_RULES` (or the type of the setting's default) before RLlib's
    ``update_from_dict`` sees it; ``model_config`` entries are checked against RLlib's
    ``DefaultModelConfig`` plus the algorithm's own model keys.
    """
    from rllib_fair.algorithms import get_config_class
    from rllib_fair.settings import collect

    cfg = get_config_class(run)()
    declared = {**CONFIG_RULES, **collect(type(cfg))[0]}
    cfg.environment(env, env_config=env_config)
    # PPOConfig() defaults to 2 remote env runners; tuned examples start from 0 unless
    # they say otherwise (on a 2-core machine extra runner processes compete for the CPUs).
    cfg.env_runners(num_env_runners=0)
    clean: dict[str, Any] = {}
    for key, value in config.items():
        if not isinstance(key, str):
            raise ExperimentError(f"config: key {key!r} is invalid; valid: a setting name")
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
            cfg.rl_module(model_config=_checked_model_config(cfg, value))
            continue
        _check_data_setting(key, attr, vars(cfg).get(attr))
        if attr not in SETTABLE_PROPERTIES and (
            attr.startswith("_") or attr not in vars(cfg) or callable(getattr(cfg, attr, None))
        ):
            close = sorted(k for k in vars(cfg) if not k.startswith("_") and _similar(k, attr))
            hint = f"; did you mean {', '.join(close[:3])}?" if close else ""
            raise ExperimentError(
                f"config.{key}: unknown setting for {run} ({type(cfg).__name__}){hint}"
            )
        default = getattr(cfg, attr)
        if type(default) is int and default == _DEPRECATED_VALUE and attr not in declared:
            raise ExperimentError(
                f"config.{key}: deprecated in RLlib 2.60 (stored but never read); remove it"
            )
        _check_value(f"config.{key}", value, declared.get(attr), default)
        clean[key] = value
    try:
        cfg.update_from_dict(clean)
    except Exception as e:  # RLlib raises on a few deprecated keys
        raise ExperimentError(f"config: {_first_line(e)}") from None
    _check_batch_sizes(cfg)
    return cfg


def _check_data_setting(key: str, attr: str, default: Any) -> None:
    """Rejects settings whose value RLlib imports, calls or reads/writes files with."""
    if attr in OFFLINE_IO_SETTINGS:
        raise ExperimentError(
            f"config.{key}: offline data input/output is not available from a YAML file "
            "(the CLI trains online, on the env); remove it"
        )
    if (
        attr in CODE_SETTINGS
        or CODE_SETTING_SUFFIXES.search(attr)
        or isinstance(default, type)
        or (callable(default) and not isinstance(default, (int, float, str)))
    ):
        raise ExperimentError(
            f"config.{key}: takes Python code (a class, a function or an import path), which "
            "a YAML file may not name; set it from Python instead"
        )


def _checked_model_config(cfg, value: Any) -> dict:
    """``model_config`` with known keys and valid values only (did-you-mean on typos)."""
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    if not isinstance(value, dict):
        raise ExperimentError(
            f"config.model_config: {value!r} is invalid; valid: a mapping "
            "(e.g. {fcnet_hiddens: [64, 64]})"
        )
    defaults = {f.name: f.default for f in dataclasses.fields(DefaultModelConfig)}
    try:
        own = dict(cfg._model_config_auto_includes)
    except Exception:  # noqa: BLE001 - the env check reports what is wrong with the env
        own = {}
    known = {**defaults, **own}
    for key, item in value.items():
        if not isinstance(key, str) or key not in known:
            close = difflib.get_close_matches(str(key), list(known), n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ExperimentError(
                f"config.model_config.{key}: unknown model setting (RLlib's "
                f"DefaultModelConfig and {type(cfg).__name__}'s own keys){hint}"
            )
        default = known[key]
        if default is dataclasses.MISSING:
            default = None
        _check_value(f"config.model_config.{key}", item, MODEL_RULES.get(key), default)
    return dict(value)


def _check_batch_sizes(cfg) -> None:
    """``minibatch_size`` must fit in the train batch (checked before RLlib's wording)."""
    mbs = getattr(cfg, "minibatch_size", None)
    tbs = cfg.train_batch_size_per_learner
    if _is_int(mbs) and _is_int(tbs) and mbs > tbs:
        raise ExperimentError(
            f"config.minibatch_size: {mbs} is invalid; valid: an integer in [1, "
            f"train_batch_size_per_learner={tbs}]"
        )


def _similar(a: str, b: str) -> bool:
    return difflib.SequenceMatcher(None, a, b).ratio() > 0.75


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


# ------------------------------------------------------------------ metric keys


def _fairness_forms(cfg, notion: str, groups: list[str] | None) -> list[tuple[str, ...]]:
    """Every key tail ``fairness/<notion>/...`` reports (``""``: any group name)."""
    from rllib_fair.fairness.notions import get_notion
    from rllib_fair.rllib import keys
    from rllib_fair.rllib.callbacks import _selective_notion

    names = list(groups) if groups is not None else [""]
    forms: list[tuple[str, ...]] = [
        (k,)
        for k in (
            keys.BIAS,
            keys.RATIO,
            keys.STEP_DISPARITY_MEAN,
            keys.EPISODE_BIAS_MEAN,
            keys.NUM_STEPS,
            keys.NUM_EPISODES,
        )
    ]
    pairs = get_notion(notion).pair_names
    for what in (keys.RATE, keys.SUPPLY, keys.DEMAND):
        for g in names:
            if len(pairs) == 1:
                forms.append((what, g))
            else:
                forms.extend((what, pair, g) for pair in pairs)
    if notion == _selective_notion(cfg):
        predicts = bool(getattr(cfg, "provides_label_predictions", False))
        sources = ("true", "accepted") + (("imputed",) if predicts else ())
        forms.extend((keys.SELECTIVE, f"{s}_disparity_mean") for s in sources)
        per_group = ("rejection_rate",) + (("predictor_error",) if predicts else ())
        for what in per_group:
            forms.extend((keys.SELECTIVE, what, g) for g in names[:2])
    return forms


def _describe_forms(forms: list[tuple[str, ...]], groups: list[str] | None) -> str:
    shown: list[str] = []
    for form in forms:
        text = (
            "/".join(form[:-1] + ("<group>",))
            if len(form) > 1 and (groups is None or form[-1] in groups)
            else "/".join(form)
        )
        if text not in shown:
            shown.append(text)
    where = f" with <group> in {', '.join(groups)}" if groups is not None else ""
    return ", ".join(shown) + where


def reported_patterns(cfg) -> tuple[str, ...]:
    """Result keys (glob patterns) ``cfg``'s algorithm reports on its env, fairness/ aside.

    The algorithm's ``REPORTED_KEYS`` (along its config class's bases: RLlib's env-runner
    and perf keys, its learners' keys, its own namespace) and the env class's.
    """
    from rllib_fair.envs import ENV_IDS, env_class
    from rllib_fair.settings import reported_keys

    classes = [type(cfg)]
    if isinstance(cfg.env, str) and cfg.env in ENV_IDS:
        classes.append(env_class(cfg.env))
    return reported_keys(*classes)


def _check_reported_key(section: str, key: str, cfgs: list) -> None:
    """A key outside ``fairness/`` must be one the configured algorithm and env report."""
    from rllib_fair.settings import matches

    tail = key[len("evaluation/") :] if key.startswith("evaluation/") else key
    for cfg in cfgs:
        where = f"{_run_name(cfg)} on {cfg.env}"
        if key.startswith("evaluation/") and not cfg.evaluation_interval:
            raise ExperimentError(
                f"{section}.{key}: no evaluation is configured, so no evaluation/ keys are "
                "reported; valid: set evaluation_interval (>= 1), or use the key without "
                "evaluation/"
            )
        patterns = reported_patterns(cfg)
        if matches(tail, patterns):
            continue
        named = (k.replace("learners/*/", f"learners/{DEFAULT_MODULE}/", 1) for k in patterns)
        concrete = [k for k in named if "*" not in k]
        close = difflib.get_close_matches(tail, concrete, n=2, cutoff=0.6)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise ExperimentError(
            f"{section}.{key}: {where} never reports this key{hint}; valid: a key it reports "
            f"(docs/settings.md lists them), e.g. {RETURN_KEY}"
        )


def _run_name(cfg) -> str:
    """The registered name of ``cfg``'s algorithm (its class name if unregistered)."""
    from rllib_fair.algorithms import ALGORITHMS

    name = type(cfg).__name__
    for run, spec in ALGORITHMS.items():
        if spec.config_class == name and type(cfg).__module__ == spec.module:
            return run
    return name


#: RLlib's module id of a single-agent algorithm (what ``learners/*/`` stands for).
DEFAULT_MODULE = "default_policy"

#: The env's return, the key most criteria use.
RETURN_KEY = "env_runners/episode_return_mean"


def _check_metric_key(section: str, key: str, cfgs: list, groups: list[str] | None) -> None:
    """The key must be one a trial of these configs reports.

    ``fairness/...`` keys (also under ``evaluation/``) are checked against the notions,
    groups and selective-labels block the configs log; every other key against the result
    keys the algorithm and env declare (:func:`reported_patterns`).
    """
    tail = key[len("evaluation/") :] if key.startswith("evaluation/") else key
    if not tail.startswith("fairness/"):
        _check_reported_key(section, key, cfgs)
        return
    parts = tuple(tail.split("/")[1:])
    if parts[:1] == ("qualification_gain",):
        _check_qualification_gain_key(section, key, parts[1:], cfgs, groups)
        return
    for cfg in cfgs:
        notions = cfg.fairness_notions_to_log() if cfg.fairness_metrics else []
        if not notions:
            raise ExperimentError(
                f"{section}.{key}: no fairness metrics are reported (fairness_metrics is "
                "false); valid: set fairness_metrics: true, or use a key outside fairness/"
            )
        notion = parts[0] if parts else ""
        if notion not in notions:
            raise ExperimentError(
                f"{section}.{key}: notion {notion!r} is not reported by this config; valid "
                f"notions: {', '.join(notions)} (fairness_notion plus fairness_log_notions)"
            )
        forms = _fairness_forms(cfg, notion, groups)
        rest = parts[1:]
        if not any(
            len(f) == len(rest) and all(a == b or a == "" for a, b in zip(f, rest)) for f in forms
        ):
            raise ExperimentError(
                f"{section}.{key}: not a metric of notion {notion!r}; valid: fairness/{notion}/ "
                f"followed by one of {_describe_forms(forms, groups)}"
            )


#: Keys of the ``fairness/qualification_gain`` block (``callbacks.summarize_qualification``).
_QG_TERMS = ("c_pi", "dpe", "ipe", "spe")
_QG_VARIANTS = ("reference", "shadow", "exact")


def _check_qualification_gain_key(
    section: str, key: str, rest: tuple, cfgs: list, groups: list[str] | None
) -> None:
    """``fairness/qualification_gain/...`` exists only for envs that emit qualification gains."""
    from rllib_fair.algorithms.ppoc.ppoc import emits_qualification_info

    for cfg in cfgs:
        if not (cfg.fairness_metrics and emits_qualification_info(cfg.env)):
            raise ExperimentError(
                f"{section}.{key}: no qualification-gain metrics are reported for env "
                f"{cfg.env!r}; valid: an env that reports qualification gains "
                "(fair/LendingDrift-v0) with fairness_metrics: true"
            )
    forms = [(t,) for t in (*_QG_TERMS, "gain_gap_abs", "num_episodes")]
    forms += [(v, t) for v in _QG_VARIANTS for t in _QG_TERMS]
    forms += [("gain", g) for g in (groups or [""])]
    if not any(
        len(f) == len(rest) and all(a == b or a == "" for a, b in zip(f, rest)) for f in forms
    ):
        shown = ", ".join("/".join(f) if f[-1] else f"{f[0]}/<group>" for f in forms)
        raise ExperimentError(
            f"{section}.{key}: not a qualification-gain metric; valid: "
            f"fairness/qualification_gain/ followed by one of {shown}"
        )


# ------------------------------------------------------------------ other checks


def validate_cli_flags(
    *,
    num_cpus: Any = None,
    num_env_runners: Any = None,
    seed: Any = None,
) -> None:
    """Checks the ``train`` command's resource and seed flags (None: not given).

    Raises:
        ExperimentError: one line naming the flag, the bad value and the valid range.
    """
    for flag, value, low in (
        ("--num-cpus", num_cpus, 1),
        ("--num-env-runners", num_env_runners, 0),
        ("--seed", seed, 0),
    ):
        if value is not None and (not _is_int(value) or value < low):
            raise ExperimentError(f"{flag}: {value!r} is invalid; valid: an integer >= {low}")


#: Kernel filesystems (Linux) that hold no user folders: a storage path there can never be
#: created, whatever the permissions say (root may "write" to /proc and /sys).
PSEUDO_FILESYSTEMS = frozenset(
    {
        "proc",
        "sysfs",
        "cgroup",
        "cgroup2",
        "devpts",
        "securityfs",
        "debugfs",
        "tracefs",
        "configfs",
        "pstore",
        "bpf",
        "fusectl",
        "mqueue",
        "efivarfs",
        "binfmt_misc",
        "nsfs",
        "autofs",
        "rpc_pipefs",
        "hugetlbfs",
    }
)


def _filesystem_type(folder: Path, mounts: str = "/proc/self/mounts") -> str | None:
    """The type of the filesystem ``folder`` is on (the longest mount point above it).

    Read from the mount table; None where there is none (not Linux) or it cannot be read.
    """
    try:
        lines = Path(mounts).read_text().splitlines()
    except OSError:
        return None
    target = os.path.realpath(folder)
    best, best_type = "", None
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, best_type = point, fields[2]
    return best_type


def _check_storage_path(key: str, path: Any, name: str) -> None:
    """The results folder must be creatable and writable; checked without creating it."""
    if not isinstance(path, str) or not path.strip() or "\0" in path:
        raise ExperimentError(f"{key}: {path!r} is invalid; valid: a folder path")
    folder = Path(os.path.abspath(os.path.expanduser(path)))
    for target in (folder, folder / name):
        if target.exists() and not target.is_dir():
            raise ExperimentError(
                f"{key}: {path!r} is invalid: {str(target)!r} exists and is not a folder; "
                "valid: a folder path (existing or not)"
            )
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise ExperimentError(
            f"{key}: {path!r} is invalid: {str(probe)!r} is a file, so no folder can be "
            "created below it; valid: a folder path"
        )
    fstype = _filesystem_type(probe)
    if fstype in PSEUDO_FILESYSTEMS:
        raise ExperimentError(
            f"{key}: {path!r} is invalid: {str(probe)!r} is on the {fstype} filesystem "
            "(the kernel's, where no results folder can be created); valid: a folder on a "
            "disk you can write to"
        )
    writable = os.access(probe, os.W_OK | os.X_OK)
    with contextlib.suppress(OSError, AttributeError):
        writable = writable and not os.statvfs(probe).f_flag & os.ST_RDONLY
    if not writable:
        raise ExperimentError(
            f"{key}: {path!r} is not writable ({str(probe)!r} does not allow creating "
            "files); valid: a folder you can write to"
        )


def _check_checkpoint_config(ckpt: Any) -> dict[str, Any]:
    if ckpt is None:
        ckpt = {}
    if not isinstance(ckpt, dict):
        raise ExperimentError(f"checkpoint_config: must be a mapping, got {ckpt!r}")
    rules = {
        "checkpoint_frequency": _integer(0),
        "num_to_keep": _integer(1, none=True),
        "checkpoint_at_end": _Rule(lambda v: isinstance(v, bool), "true or false"),
        # ours: checkpoint by the clock (the runner's RunGuard); 0 turns it off
        "checkpoint_every_minutes": _real(0),
    }
    for key, value in ckpt.items():
        if key not in rules:
            raise ExperimentError(
                f"checkpoint_config.{key}: unknown key; valid keys: {', '.join(sorted(rules))}"
            )
        if not rules[key].ok(value):
            raise ExperimentError(
                f"checkpoint_config.{key}: {value!r} is invalid; valid: {rules[key].valid}"
            )
    return dict(ckpt)


def validate_experiment(
    name: str,
    spec: dict,
    *,
    stop_overrides: dict | None = None,
    config_overrides: dict | None = None,
    num_env_runners: int | None = None,
    seed: int | None = None,
    storage_path: str | None = None,
    source: str | None = None,
    as_test: bool = False,
) -> Experiment:
    """Checks one experiment spec (plus command-line overrides) and builds its config.

    Nothing is started or written: the env is built once in this process to check
    ``env_config`` (and closed), and the storage path is only inspected.

    ``pass_criteria`` must contain the budget entry of the spec's own ``stop``
    (:func:`budget_criterion`); ``source`` (the YAML file) is named in that error. With
    ``as_test``, the budget entry must also fit the stop after ``stop_overrides``
    (a ``--stop`` that shrinks or grows the budget would make a pass impossible or
    prove less than 80% of the budget).
    """
    from rllib_fair.algorithms import get_spec

    _check_experiment_name(name)
    bad_keys = [k for k in spec if not isinstance(k, str)]
    if bad_keys:
        raise ExperimentError(
            f"{name}: key {bad_keys[0]!r} is invalid; valid keys: {', '.join(TOP_LEVEL_KEYS)}"
        )
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
    for key, value in env_config.items():
        if not isinstance(key, str):
            raise ExperimentError(f"env_config: key {key!r} is invalid; valid: an argument name")
        _check_value(f"env_config.{key}", value, None, None)
    _check_env_settings(env, env_config)
    groups, fair_env = _check_env_config(env, env_config)
    config.update(config_overrides or {})
    validate_cli_flags(num_env_runners=num_env_runners, seed=seed)
    if seed is not None:
        config["seed"] = seed
    if num_env_runners is not None:
        config["num_env_runners"] = num_env_runners
    from rllib_fair.cli.sweep import SweepError, parse_selection, split_grid
    from rllib_fair.cli.tuning import TuneError, parse_seeds, parse_tune, split_spaces

    try:
        config, spaces = split_spaces(config)
        config, grid = split_grid(config)
        seeds = parse_seeds(spec.get("seeds"))
    except (SweepError, TuneError) as e:
        raise ExperimentError(str(e)) from None
    if seed is not None or "seed" in (config_overrides or {}):
        seeds = None  # a command-line seed replaces the seeds axis (as it replaces a grid)
    elif seeds is not None and ("seed" in grid or "seed" in spaces):
        raise ExperimentError(
            "seeds: cannot be combined with a grid or space over config.seed; valid: one of the two"
        )
    cfg = _built_and_validated(run, env, env_config, config, fair_env)
    cfgs = [cfg]
    sweeps = [(f"{key}.grid_search", key, values[1:]) for key, values in grid.items()]
    sweeps += [(f"{key}.{s.kind}", key, s.probes()) for key, s in spaces.items()]
    for where, key, values in sweeps:  # every grid value / bound / choice passes alone
        for value in values:
            try:
                cfgs.append(
                    _built_and_validated(run, env, env_config, {**config, key: value}, fair_env)
                )
            except ExperimentError as e:
                msg = f"config.{where}: {value!r} rejected: {e}"
                raise ExperimentError(msg) from None

    def check_metric(where: str, key: str) -> str:
        rkey = result_key(where, key)
        _check_metric_key(where, rkey, cfgs, groups)
        return rkey

    def check_value(where: str, key: Any, value: Any) -> None:
        try:
            _built_and_validated(run, env, env_config, {**config, key: value}, fair_env)
        except ExperimentError as e:
            raise ExperimentError(f"{where}: {value!r} rejected: {e}") from None

    try:
        tune_settings = parse_tune(
            spec.get("tune"), check_metric=check_metric, check_value=check_value
        )
    except TuneError as e:
        raise ExperimentError(str(e)) from None
    if tune_settings is not None and tune_settings.search_alg is not None:
        if grid:
            raise ExperimentError(
                f"config.{next(iter(grid))}: grid_search cannot be combined with "
                "tune.search_alg; valid: {choice: [...]} (the search algorithm samples it)"
            )
        if not spaces:
            raise ExperimentError(
                "tune.search_alg: needs at least one sampled space in config; valid: e.g. "
                "lr: {loguniform: [0.0001, 0.01]}"
            )
    selection = None
    sweep = grid or spaces or seeds or tune_settings is not None
    if sweep or spec.get("selection") is not None:
        omega = spec["selection"].get("omega") if isinstance(spec.get("selection"), dict) else None
        if _is_number(omega) and not _finite(omega):
            raise ExperimentError(
                f"selection.omega: {omega!r} is invalid; valid: a finite number >= 0"
            )
        try:
            selection = parse_selection(spec.get("selection"), cfg)
        except SweepError as e:
            raise ExperimentError(str(e)) from None
    stop = dict(spec.get("stop") or {})
    stop.update(stop_overrides or {})
    parsed_stop = _parse_stop(stop)
    criteria = _parse_criteria(spec.get("pass_criteria"))
    for section, keys_ in (
        ("stop", list(parsed_stop)),
        ("pass_criteria", [c.metric for c in criteria]),
        ("selection", [selection.disparity, selection.reward] if selection else []),
    ):
        for key in keys_:
            _check_metric_key(section, key, cfgs, groups)
    if criteria:
        _check_budget_entry(name, spec, parsed_stop, criteria, source=source, as_test=as_test)
    num_samples = spec.get("num_samples", 1)
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ExperimentError(f"num_samples: {num_samples!r} is invalid; valid: an integer >= 1")
    ckpt = _check_checkpoint_config(spec.get("checkpoint_config"))
    for key in ("storage_path", "local_dir"):
        value = spec.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ExperimentError(f"{key}: {value!r} is invalid; valid: a folder path")
    # The folder the runner will use (the same precedence as runner.run_experiment).
    if storage_path is not None:
        _check_storage_path("--storage-path", storage_path, name)
    elif spec.get("storage_path"):
        _check_storage_path("storage_path", spec["storage_path"], name)
    elif spec.get("local_dir"):
        _check_storage_path("local_dir", spec["local_dir"], name)
    else:
        _check_storage_path("storage_path (default)", "results", name)
    storage = storage_path or spec.get("storage_path") or spec.get("local_dir")
    return Experiment(
        name=str(name),
        run=run,
        env=env,
        config=cfg,
        stop=parsed_stop,
        pass_criteria=criteria,
        checkpoint_config=ckpt,
        num_samples=num_samples,
        storage_path=storage,
        grid=grid,
        selection=selection,
        spaces=spaces,
        seeds=seeds,
        tune=tune_settings,
    )


def _check_budget_entry(
    name: Any,
    spec: dict,
    parsed_stop: dict[str, float],
    criteria: list[Criterion],
    *,
    source: str | None,
    as_test: bool,
) -> None:
    """Requires the budget entry of the file's own stop in the pass criteria.

    With ``as_test`` the entry must also fit the stop after ``--stop`` overrides.
    """
    where = f"experiment {str(name)!r}"
    if source is not None:
        where = f"FILE {str(source)!r} ({where})"
    own = parsed_stop
    if _has_budget(spec.get("stop")):
        with contextlib.suppress(ExperimentError):  # a bad file value that --stop replaced
            own = _parse_stop(spec.get("stop"))
    budget_criterion(own, criteria, where)
    if as_test and own != parsed_stop:
        changed = ", ".join(f"{k}={_plain(v)}" for k, v in parsed_stop.items() if own.get(k) != v)
        try:
            budget_criterion(parsed_stop, criteria, where)
        except ExperimentError as e:
            raise ExperimentError(
                f"--stop: {changed} with --as-test conflicts with the file's budget entry "
                f"({e}); valid: a --stop that keeps that entry within "
                f"{PASS_BUDGET_FRACTION:.0%}-100% of the budget, or no --as-test"
            ) from None


def _built_and_validated(run: str, env: str, env_config: dict, config: dict, fair_env: bool = True):
    """The algorithm's config with ``config`` applied, validated (one-line errors).

    A violated declaration of the config class (a rule over several settings) names its
    setting as ``config.<key>``; other ``validate()`` errors are prefixed with ``config:``.
    """
    with _quiet_rllib():
        cfg = build_config(run, env, env_config, config)
        if not fair_env:
            _check_fair_env_needed(cfg, run, env)
        try:
            cfg.validate()
        except ExperimentError:
            raise
        except SettingError as e:
            raise ExperimentError(f"config.{_first_line(e)}") from None
        except Exception as e:
            raise ExperimentError(f"config: {_first_line(e)}") from None
    return cfg


def _check_fair_env_needed(cfg, run: str, env: str) -> None:
    """Rejects a non-fair env (no per-group counts in its infos) for a config that reads them.

    That is a config with ``fairness_columns``, a regulariser of the per-step disparity,
    or fairness metrics of a notion (configured, or the algorithm's default one).
    """
    from rllib_fair.envs import ENV_IDS

    wants = []
    if getattr(cfg, "fairness_columns", False):
        wants.append("fairness_columns")
    if getattr(cfg, "needs_step_disparity", False):
        wants.append("its per-step disparity")
    if getattr(cfg, "fairness_metrics", False):
        try:
            notions = cfg.fairness_notions_to_log()
        except ValueError:  # no notion and no env default: the metrics need one
            notions = ["(none set)"]
        if notions:
            wants.append("fairness_metrics")
    if wants:
        raise ExperimentError(
            f"env: {env!r} is not a fair environment (it reports no per-group counts in "
            f"info['fairness']), which {run} needs for {', '.join(wants)}; valid choices: "
            f"{', '.join(ENV_IDS)} (or a gymnasium id of an env class with GROUP_NAMES, "
            "registered from Python)"
        )


def param_space(exp: Experiment):
    """The config Tune runs: ``exp.config`` with its grids and spaces as Tune's objects.

    Grids become ``tune.grid_search``, sampled spaces ``tune.uniform`` and the like, and
    ``seeds`` a grid over ``seed`` (without a search algorithm; with one, the runner's
    seed repeater sets each trial's seed).
    """
    searching = exp.tune is not None and exp.tune.search_alg is not None
    seeds = exp.seeds if exp.seeds and not searching else None
    if not exp.grid and not exp.spaces and not seeds:
        return exp.config
    from ray import tune

    space = exp.config.copy(copy_frozen=False)
    for key, values in exp.grid.items():
        setattr(space, CONFIG_TRANSLATIONS.get(key, key), tune.grid_search(values))
    for key, sampled in exp.spaces.items():
        setattr(space, CONFIG_TRANSLATIONS.get(key, key), sampled.to_tune())
    if seeds:
        space.seed = tune.grid_search(list(seeds))
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


def _check_env_settings(env: str, env_config: dict) -> None:
    """Checks ``env_config`` against the env's declared settings and rules (no env built).

    Only for the envs this package registers; another gymnasium id is checked by
    building it (:func:`_check_env_config`).
    """
    from rllib_fair.envs import ENV_IDS
    from rllib_fair.envs.declared import env_declarations

    if env not in ENV_IDS:
        return
    settings, rules, defaults = env_declarations(env)
    try:
        check_values(settings, rules, env_config, defaults, prefix="env_config.", owner=env)
    except SettingError as e:
        raise ExperimentError(str(e)) from None


def _check_env_config(env: str, env_config: dict) -> tuple[list[str] | None, bool]:
    """Builds the env once (cheap) so a bad env_config fails here, not in a runner.

    Returns:
        The group names the fairness metrics will use (as the metrics callback names
        them), or None when the env does not say; and whether it is a fair env (its
        class names its groups in ``GROUP_NAMES``, so its infos carry per-group counts).
    """
    import gymnasium as gym

    from rllib_fair.rllib.config import _env_meta

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            made = gym.make(env, **env_config)
            n_groups = len(getattr(made.unwrapped, "GROUP_NAMES", ()) or ())
            made.close()
    except (TypeError, ValueError) as err:
        raise ExperimentError(f"env_config: {_first_line(err)}") from None
    except Exception as err:  # noqa: BLE001 - any failure of the env's constructor
        raise ExperimentError(
            f"env_config: building {env!r} failed with {type(err).__name__}: {_first_line(err)}"
        ) from None
    meta = _env_meta(env)
    if meta is not None and n_groups == len(meta["group_names"]):
        return list(meta["group_names"]), True
    if n_groups:
        return [f"group_{g}" for g in range(n_groups)], True
    return None, False
