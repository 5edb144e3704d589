"""The ``run``, ``env``, ``env_config`` and ``config`` sections: the config, built and validated.

The file names settings; the config checks their values. This module

* checks ``env`` (an id registered with gymnasium, never ``module:id``) and
  ``env_config`` (the env's declared settings and rules, then one build of the env);
* maps the file's ``config`` keys onto the algorithm's config (``lambda`` is RLlib's
  ``lambda_``, ...) and rejects the keys a data file may not set: unknown settings
  (with the closest names), names RLlib renamed or only reads on its old API stack,
  settings it no longer reads, settings that take Python code or read and write data
  files, and unknown ``model_config`` entries;
* rejects NaN and infinite numbers (unless a setting declares infinity meaningful);
* builds the config with RLlib's ``update_from_dict`` and calls the config's own
  ``validate()``: RLlib's checks, the algorithm's declared settings and rules and the
  RLlib settings every config of this package checks
  (:mod:`rllib_fair.rllib.rllib_settings`). Its error becomes one line,
  ``config.<key>: ...`` (the file's name of the key) or ``config: ...``.

Nothing is started or written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import logging
import math
import re
import warnings
from typing import Any

from rllib_fair.cli.result_keys import ExperimentError, first_line
from rllib_fair.settings import RLLIB_SETTINGS, Setting, SettingError, check_values, collect

#: The file's names of settings whose config attribute is named otherwise.
CONFIG_TRANSLATIONS = {
    "lambda": "lambda_",
    "num_workers": "num_env_runners",
    "framework": "framework_str",
    "callbacks": "callbacks_class",
    "input": "input_",
}
#: The file's names of config attributes (when the file does not say otherwise).
_YAML_NAMES = {attr: key for key, attr in CONFIG_TRANSLATIONS.items() if key != "num_workers"}

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

_RLLIB_DECLARED = {s.name: s for s in RLLIB_SETTINGS}


# ----------------------------------------------------------------------------- env


def check_env(env: Any) -> str:
    """``env`` must be an id registered with gymnasium, never ``module:id``."""
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


def check_env_config(env: str, env_config: Any) -> tuple[dict, list[str] | None, bool, tuple]:
    """Checks ``env_config`` and builds the env once (cheap); nothing else is built.

    The entries of a registered rllib-fair env are checked against its declared
    settings and rules first (precise one-line errors); then the env is built, so a bad
    ``env_config`` of any env fails here, not in a runner.

    Returns:
        The ``env_config``; the group names the fairness metrics will use (as the
        metrics callback names them), or None when the env does not say; and whether it
        is a fair env (its class names its groups in ``GROUP_NAMES``, so its infos carry
        per-group counts); the built env's observation and action spaces.
    """
    import gymnasium as gym

    from rllib_fair.envs import ENV_IDS, env_meta
    from rllib_fair.envs.declared import env_declarations

    if not isinstance(env_config, dict):
        raise ExperimentError(
            f"env_config: must be a mapping of constructor arguments, got {env_config!r}"
        )
    for key, value in env_config.items():
        if not isinstance(key, str):
            raise ExperimentError(f"env_config: key {key!r} is invalid; valid: an argument name")
        check_finite(f"env_config.{key}", value, None)
    if env in ENV_IDS:
        settings, rules, defaults = env_declarations(env)
        try:
            check_values(settings, rules, env_config, defaults, prefix="env_config.", owner=env)
        except SettingError as e:
            raise ExperimentError(str(e)) from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            made = gym.make(env, **env_config)
            n_groups = len(getattr(made.unwrapped, "GROUP_NAMES", ()) or ())
            spaces = (made.observation_space, made.action_space)
            made.close()
    except (TypeError, ValueError) as err:
        raise ExperimentError(f"env_config: {first_line(err)}") from None
    except Exception as err:  # noqa: BLE001 - any failure of the env's constructor
        raise ExperimentError(
            f"env_config: building {env!r} failed with {type(err).__name__}: {first_line(err)}"
        ) from None
    meta = env_meta(env)
    if meta is not None and n_groups == len(meta["group_names"]):
        return dict(env_config), list(meta["group_names"]), True, spaces
    if n_groups:
        return dict(env_config), [f"group_{g}" for g in range(n_groups)], True, spaces
    return dict(env_config), None, False, spaces


# ----------------------------------------------------------------------------- values


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


def check_finite(where: str, value: Any, declared: Setting | None) -> None:
    """The numbers in a file's value are finite (NaN and infinity are typos in a file).

    A setting that declares an infinite value meaningful (``finite=False``, e.g. RLlib's
    ``vf_clip_param: .inf``, no clipping) may be ``.inf`` itself.
    """
    bad = _non_finite(value)
    if bad is None or (declared is not None and not declared.finite and value == math.inf):
        return
    if bad[0]:
        valid = "finite numbers"
    elif declared is not None:
        valid = declared.valid_text().removeprefix("choices: ")
    else:
        valid = "a finite number"
    raise ExperimentError(f"{where}{bad[0]}: {bad[1]!r} is not finite; valid: {valid}")


# ----------------------------------------------------------------------------- keys


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


def _check_key(cfg, run: str, key: Any) -> str:
    """The config attribute a file's ``config`` key sets; raises for keys a file may not set."""
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
        raise ExperimentError(f"config.{key}: give {key} at the experiment level, not in config")
    if attr == "model_config":
        return attr
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
    if type(default) is int and default == _DEPRECATED_VALUE and attr not in _declared(cfg):
        raise ExperimentError(
            f"config.{key}: deprecated in RLlib 2.60 (stored but never read); remove it"
        )
    return attr


def _declared(cfg) -> dict[str, Setting]:
    """The declarations of ``cfg``'s settings: RLlib's common ones, then its class's."""
    return {**_RLLIB_DECLARED, **collect(type(cfg))[0]}


def _check_model_keys(cfg, value: Any) -> dict:
    """``model_config`` is a mapping of known model settings (did-you-mean on typos).

    Known: RLlib's ``DefaultModelConfig`` fields and the algorithm's own additions to
    ``model_config``; their values are checked by the config's ``validate()``.
    """
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    if not isinstance(value, dict):
        raise ExperimentError(
            f"config.model_config: {value!r} is invalid; valid: a mapping "
            "(e.g. {fcnet_hiddens: [64, 64]})"
        )
    known = [f.name for f in dataclasses.fields(DefaultModelConfig)]
    try:
        known += [k for k in cfg.model_config if k not in known]
    except Exception:  # noqa: BLE001 - the env check reports what is wrong with the env
        pass
    for key, item in value.items():
        if not isinstance(key, str) or key not in known:
            close = difflib.get_close_matches(str(key), known, n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ExperimentError(
                f"config.model_config.{key}: unknown model setting (RLlib's "
                f"DefaultModelConfig and {type(cfg).__name__}'s own keys){hint}"
            )
        check_finite(f"config.model_config.{key}", item, None)
    return dict(value)


def _similar(a: str, b: str) -> bool:
    return difflib.SequenceMatcher(None, a, b).ratio() > 0.75


# ----------------------------------------------------------------------------- config


def build_config(run: str, env: str, env_config: dict, config: dict):
    """Creates the algorithm's config and applies ``config`` (keys checked, not values).

    Every key must be a setting of the algorithm's config class that a data file may
    set, and every number must be finite; the values reach RLlib's ``update_from_dict``
    as they are and are checked by the config's ``validate()``
    (:func:`built_and_validated`).
    """
    from rllib_fair.algorithms import get_config_class

    cfg = get_config_class(run)()
    cfg.environment(env, env_config=env_config)
    # PPOConfig() defaults to 2 remote env runners; tuned examples start from 0 unless
    # they say otherwise (on a 2-core machine extra runner processes compete for the CPUs).
    cfg.env_runners(num_env_runners=0)
    declared = _declared(cfg)
    clean: dict[str, Any] = {}
    model = None
    for key, value in config.items():
        attr = _check_key(cfg, run, key)
        if attr == "model_config":
            model = _check_model_keys(cfg, value)
            continue
        check_finite(f"config.{key}", value, declared.get(attr))
        clean[key] = value
    if model is not None:
        cfg.rl_module(model_config=model)
    try:
        cfg.update_from_dict(clean)
    except Exception as e:  # RLlib raises on a few deprecated keys
        raise ExperimentError(f"config: {first_line(e)}") from None
    return cfg


def built_and_validated(
    run: str,
    env: str,
    env_config: dict,
    config: dict,
    fair_env: bool = True,
    spaces: tuple | None = None,
):
    """The algorithm's config with ``config`` applied, validated (one-line errors).

    ``spaces``: the observation and action spaces of the env :func:`check_env_config`
    built; a config of this package checks them (``check_env_spaces``: TD3 needs a Box
    action space), which its ``validate()`` cannot do without building the env.

    A violated declaration (a setting or a rule over several) names its setting as
    ``config.<key>``, with the file's name of the key; RLlib's own ``validate()``
    errors are prefixed with ``config:``.
    """
    # the file's names of the attributes it sets (``num_workers`` for ``num_env_runners``)
    written = {**_YAML_NAMES, **{CONFIG_TRANSLATIONS.get(k, k): k for k in config}}
    with quiet_rllib():
        cfg = build_config(run, env, env_config, config)
        if not fair_env:
            _check_fair_env_needed(cfg, run, env)
        try:
            cfg.validate()
            if spaces is not None and hasattr(cfg, "check_env_spaces"):
                cfg.check_env_spaces(*spaces)
        except ExperimentError:
            raise
        except SettingError as e:
            raise ExperimentError(f"config.{_file_names(first_line(e), e.key, written)}") from None
        except Exception as e:
            raise ExperimentError(_rllib_error(first_line(e), written)) from None
    return cfg


#: RLlib's way of naming a bad value: "`minibatch_size` (1000) must be <= ...".
_RLLIB_VALUE_ERROR = re.compile(r"`(?P<key>\w+)` \((?P<value>[^()]*)\) (?P<rest>must .*)")


def _rllib_error(line: str, written: dict[str, str]) -> str:
    """An error of RLlib's ``validate()`` as ``config.<key>: <value> is invalid: ...``.

    Where RLlib's line does not start by naming a setting and its value, it is kept as
    ``config: <line>``.
    """
    m = _RLLIB_VALUE_ERROR.fullmatch(line)
    if m is None:
        return f"config: {line}"
    key = written.get(m["key"], m["key"])
    return f"config.{key}: {m['value']} is invalid: it {m['rest']}"


def _file_names(message: str, key: str, written: dict[str, str]) -> str:
    """``message`` with its leading key in the file's spelling (``lambda``, not ``lambda_``)."""
    head = key.split(".", 1)[0].split("[", 1)[0]
    if head in written and message.startswith(head):
        return written[head] + message[len(head) :]
    return message


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
        except (ValueError, TypeError):  # no notion and no env default: the metrics need one
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


@contextlib.contextmanager
def quiet_rllib():
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
