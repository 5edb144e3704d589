"""Tuned-example YAML -> validated experiment (no Ray started, nothing written).

The file's format and its loading (a YAML safe loader: no tags, no duplicate keys) are
:mod:`rllib_fair.cli.experiment_file`. Each experiment's sections are checked here, each
by the module that owns it:

* ``run``, ``env``, ``env_config``, ``config``: :mod:`rllib_fair.cli.config_build` builds
  the algorithm's config and calls its own ``validate()`` (RLlib's checks and the
  declared settings); the file's keys are mapped onto the config there;
* ``stop``, ``pass_criteria``: :mod:`rllib_fair.cli.criteria`; every result key a block
  names is one the trials will report (:mod:`rllib_fair.cli.metric_keys`);
* grids and ``selection``: :mod:`rllib_fair.cli.sweep`; sampled spaces, ``seeds`` and
  ``tune``: :mod:`rllib_fair.cli.tuning`;
* ``checkpoint_config``, ``num_samples``, ``storage_path``: here.

A config value may be a grid, ``{grid_search: [v1, v2, ...]}``: one trial per grid
point, then the SELLF paper's selection rule (Alg. 2) picks one configuration; an
optional ``selection:`` block sets its metric and omega. A config value may also be a
sampled space (``{uniform: [a, b]}``, ``{loguniform: ...}``, ``{choice: [...]}``,
``{randint: ...}``, ``{quniform: [a, b, q]}``); ``seeds:`` runs every configuration on
every seed and a ``tune:`` block adds a scheduler and a search algorithm. Every grid
value and every bound or choice of a space is validated on its own.

Everything is checked before anything runs (no Ray, no folder): a problem raises
:class:`ExperimentError` whose message is one line naming the key, the bad value and
the valid choices. Nothing named in the file is imported or executed: ``env:`` must be
an id already registered with gymnasium, never ``module:id`` (gymnasium would import the
module); ``run:`` must be a registered algorithm name.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rllib_fair.cli.config_build import (
    CONFIG_TRANSLATIONS,
    built_and_validated,
    check_env,
    check_env_config,
)
from rllib_fair.cli.criteria import (
    PASS_BUDGET_FRACTION,
    Criterion,
    budget_criterion,
    finite,
    has_budget,
    is_int,
    is_number,
    parse_criteria,
    parse_stop,
    plain,
)
from rllib_fair.cli.experiment_file import (
    TOP_LEVEL_KEYS,
    check_experiment_name,
    load_experiments,
)
from rllib_fair.cli.metric_keys import check_metric_key
from rllib_fair.cli.result_keys import ExperimentError, result_key
from rllib_fair.cli.sweep import SweepError, parse_selection, split_grid
from rllib_fair.cli.tuning import TuneError, parse_seeds, parse_tune, split_spaces
from rllib_fair.settings import Setting, SettingError, check_values, integer, number

#: What other modules and scripts import from here.
__all__ = [
    "Experiment",
    "ExperimentError",
    "load_experiments",
    "param_space",
    "validate_cli_flags",
    "validate_experiment",
]


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
        if value is not None and (not is_int(value) or value < low):
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


#: The ``checkpoint_config`` section: Tune's ``CheckpointConfig`` settings and ours.
CHECKPOINT_SETTINGS = {
    s.name: s
    for s in (
        integer("checkpoint_frequency", "iterations between checkpoints (0: none)", 0),
        integer("num_to_keep", "checkpoints kept per trial", 1, none=True),
        Setting("checkpoint_at_end", "bool", "checkpoint when a trial ends", valid="true or false"),
        # ours: checkpoint by the clock (the runner's RunGuard); 0 turns it off
        number("checkpoint_every_minutes", "minutes between clock checkpoints (0: none)", 0),
    )
}


def _check_checkpoint_config(ckpt: Any) -> dict[str, Any]:
    if ckpt is None:
        ckpt = {}
    if not isinstance(ckpt, dict):
        raise ExperimentError(f"checkpoint_config: must be a mapping, got {ckpt!r}")
    for key in ckpt:
        if key not in CHECKPOINT_SETTINGS:
            raise ExperimentError(
                f"checkpoint_config.{key}: unknown key; valid keys: "
                f"{', '.join(sorted(CHECKPOINT_SETTINGS))}"
            )
    try:
        check_values(CHECKPOINT_SETTINGS, (), ckpt, {}, prefix="checkpoint_config.")
    except SettingError as e:
        raise ExperimentError(str(e)) from None
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

    check_experiment_name(name)
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
    env = check_env(env)
    env_config = spec.get("env_config") or config.pop("env_config", None) or {}
    env_config, groups, fair_env, env_spaces = check_env_config(env, env_config)
    config.update(config_overrides or {})
    validate_cli_flags(num_env_runners=num_env_runners, seed=seed)
    if seed is not None:
        config["seed"] = seed
    if num_env_runners is not None:
        config["num_env_runners"] = num_env_runners
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
    cfg = built_and_validated(run, env, env_config, config, fair_env, env_spaces)
    cfgs = [cfg]
    sweeps = [(f"{key}.grid_search", key, values[1:]) for key, values in grid.items()]
    sweeps += [(f"{key}.{s.kind}", key, s.probes()) for key, s in spaces.items()]
    for where, key, values in sweeps:  # every grid value / bound / choice passes alone
        for value in values:
            try:
                cfgs.append(
                    built_and_validated(
                        run, env, env_config, {**config, key: value}, fair_env, env_spaces
                    )
                )
            except ExperimentError as e:
                msg = f"config.{where}: {value!r} rejected: {e}"
                raise ExperimentError(msg) from None

    def check_metric(where: str, key: str) -> str:
        rkey = result_key(where, key)
        check_metric_key(where, rkey, cfgs, groups)
        return rkey

    def check_value(where: str, key: Any, value: Any) -> None:
        try:
            built_and_validated(run, env, env_config, {**config, key: value}, fair_env, env_spaces)
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
        if is_number(omega) and not finite(omega):
            raise ExperimentError(
                f"selection.omega: {omega!r} is invalid; valid: a finite number >= 0"
            )
        try:
            selection = parse_selection(spec.get("selection"), cfg)
        except SweepError as e:
            raise ExperimentError(str(e)) from None
    stop = dict(spec.get("stop") or {})
    stop.update(stop_overrides or {})
    parsed_stop = parse_stop(stop)
    criteria = parse_criteria(spec.get("pass_criteria"))
    for section, keys_ in (
        ("stop", list(parsed_stop)),
        ("pass_criteria", [c.metric for c in criteria]),
        ("selection", [selection.disparity, selection.reward] if selection else []),
    ):
        for key in keys_:
            check_metric_key(section, key, cfgs, groups)
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
    if has_budget(spec.get("stop")):
        with contextlib.suppress(ExperimentError):  # a bad file value that --stop replaced
            own = parse_stop(spec.get("stop"))
    budget_criterion(own, criteria, where)
    if as_test and own != parsed_stop:
        changed = ", ".join(f"{k}={plain(v)}" for k, v in parsed_stop.items() if own.get(k) != v)
        try:
            budget_criterion(parsed_stop, criteria, where)
        except ExperimentError as e:
            raise ExperimentError(
                f"--stop: {changed} with --as-test conflicts with the file's budget entry "
                f"({e}); valid: a --stop that keeps that entry within "
                f"{PASS_BUDGET_FRACTION:.0%}-100% of the budget, or no --as-test"
            ) from None


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
