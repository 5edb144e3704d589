"""Every declared setting gets its bad values on the command-line path: one line, nothing run.

The walk covers the algorithm registry (every registered name and every setting its config
class declares, the shared fairness settings included), RLlib's settings the command line
checks (on PPO) and the env registry (every constructor setting of every id). Each setting
gets every value its declaration rejects (``Setting.invalid_examples``: out of range first,
then values of a wrong type), and every declared rule its declared example. Each must fail
``validate_experiment`` with one line that names the key and the bad value, with nothing
written to the storage path and Ray not started; the first bad value of every setting also
goes through ``rllib_fair.cli.main`` (exit code 2, nothing on stdout, one line on stderr).
No env is stepped and nothing trains: the whole walk takes seconds.
"""

from __future__ import annotations

import pytest
import torch
import yaml

from rllib_fair.algorithms import ALGORITHMS, get_config_class
from rllib_fair.cli import main
from rllib_fair.cli.config_build import CONFIG_TRANSLATIONS
from rllib_fair.cli.experiment import ExperimentError, validate_experiment
from rllib_fair.envs import ENV_IDS
from rllib_fair.envs.declared import env_declarations
from rllib_fair.settings import RLLIB_SETTINGS, Setting, check_values, collect, show

torch.set_num_threads(1)

#: Settings no value of which is invalid, with the reason (none today: every declared
#: setting has a type). The walk fails if a setting without bad values is not listed here.
NO_BAD_VALUE: dict[tuple[str, str], str] = {}

#: Rules whose example no YAML file can give, with the reason; they are broken on the
#: declarations directly (``test_rules_python_only``).
PYTHON_ONLY_RULES: dict[tuple[str, str], str] = {
    ("fair/SchoolAdmission-v0", "one_population"): (
        "params takes a SchoolAdmissionParams object, which a YAML file cannot hold"
    ),
}

YAML_KEYS = {attr: key for key, attr in CONFIG_TRANSLATIONS.items()}


def _run_for(env_id: str) -> str:
    """A registered algorithm that trains on ``env_id`` (its smoke env), else PPO."""
    for name, spec in ALGORITHMS.items():
        if spec.smoke_env == env_id:
            return name
    return "PPO"


def _algorithm_cases() -> list:
    out = []
    for run in ALGORITHMS:
        for name, setting in collect(get_config_class(run))[0].items():
            out.append(
                pytest.param(run, ALGORITHMS[run].smoke_env, name, setting, id=f"{run}.{name}")
            )
    for setting in RLLIB_SETTINGS:
        out.append(
            pytest.param(
                "PPO", "fair/Lending-v0", setting.name, setting, id=f"rllib.{setting.name}"
            )
        )
    return out


def _env_cases() -> list:
    out = []
    for env_id in ENV_IDS:
        settings, _, _ = env_declarations(env_id)
        for name, setting in settings.items():
            out.append(pytest.param(env_id, name, setting, id=f"{env_id}.{name}"))
    return out


def _rule_cases() -> list:
    out = []
    for run in ALGORITHMS:
        for rule in collect(get_config_class(run))[1]:
            out.append(
                pytest.param(
                    "config", run, ALGORITHMS[run].smoke_env, rule, id=f"{run}.{rule.name}"
                )
            )
    for env_id in ENV_IDS:
        for rule in env_declarations(env_id)[1]:
            if (env_id, rule.name) in PYTHON_ONLY_RULES:
                continue
            out.append(
                pytest.param(
                    "env_config", _run_for(env_id), env_id, rule, id=f"{env_id}.{rule.name}"
                )
            )
    return out


ALGORITHM_CASES = _algorithm_cases()
ENV_CASES = _env_cases()
RULE_CASES = _rule_cases()


@pytest.fixture
def guarded(monkeypatch, tmp_path):
    """Forbids Ray and the runner; runs in an empty folder; yields the storage path."""
    import ray

    from rllib_fair.cli import runner

    def forbidden(*args, **kwargs):
        raise AssertionError("bad input must be rejected before Ray or Tune start")

    was_initialized = ray.is_initialized()
    monkeypatch.setattr(ray, "init", forbidden)
    monkeypatch.setattr(runner, "run_experiment", forbidden)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    yield work / "results"
    assert ray.is_initialized() == was_initialized
    assert sorted(p.name for p in work.iterdir()) in ([], ["exp.yaml"])


def _spec(run: str, env: str, config: dict | None = None, env_config: dict | None = None):
    spec = {"run": run, "env": env, "stop": {"training_iteration": 1}}
    if config:
        spec["config"] = config
    if env_config:
        spec["env_config"] = env_config
    return spec


def _shown(value) -> list[str]:
    """How an error line can show ``value``: whole, or one of its items or keys."""
    out = [show(value)]
    if isinstance(value, (list, tuple)):
        for item in value:
            out += _shown(item)
    if isinstance(value, dict):
        for key, item in value.items():
            out += [str(key), *_shown(item)]
    return out


def _rejected(spec: dict, key: str, bad, storage) -> str:
    """``validate_experiment`` fails with one line naming ``key`` and ``bad``."""
    with pytest.raises(ExperimentError) as err:
        validate_experiment("exp", spec, storage_path=str(storage))
    line = str(err.value)
    assert "\n" not in line, line
    assert key in line, line
    assert any(s in line for s in _shown(bad)), line
    assert not storage.exists()
    return line


def _main_rejects(spec: dict, key: str, storage, capsys) -> None:
    """``rllib-fair train`` on the spec exits 2 with one stderr line naming ``key``."""
    path = storage.parent / "exp.yaml"
    path.write_text(yaml.safe_dump({"exp": spec}, sort_keys=False))
    rc = main(["train", str(path), "--storage-path", str(storage)])
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("rllib-fair: error: "), err
    assert key in err, err
    assert not storage.exists()
    path.unlink()


@pytest.mark.parametrize(
    ("run", "env"), sorted({(p.values[0], p.values[1]) for p in ALGORITHM_CASES})
)
def test_the_base_specs_are_valid(run, env, guarded):
    """Control: without a bad value, every spec the walk uses passes."""
    validate_experiment("exp", _spec(run, env), storage_path=str(guarded))
    assert not guarded.exists()


@pytest.mark.parametrize(("env",), [(e,) for e in ENV_IDS])
def test_the_base_env_specs_are_valid(env, guarded):
    validate_experiment("exp", _spec(_run_for(env), env), storage_path=str(guarded))


@pytest.mark.parametrize(("run", "env", "name", "setting"), ALGORITHM_CASES)
def test_every_algorithm_setting_rejects_its_bad_values(run, env, name, setting, guarded, capsys):
    bad_values = setting.invalid_examples()
    if not bad_values:
        assert (run, name) in NO_BAD_VALUE, f"{run}.{name} has no bad value and no reason"
        return
    key = f"config.{YAML_KEYS.get(name, name)}"
    for bad in bad_values:
        _rejected(_spec(run, env, config={YAML_KEYS.get(name, name): bad}), key, bad, guarded)
    _main_rejects(
        _spec(run, env, config={YAML_KEYS.get(name, name): bad_values[0]}), key, guarded, capsys
    )


@pytest.mark.parametrize(("env", "name", "setting"), ENV_CASES)
def test_every_env_setting_rejects_its_bad_values(env, name, setting, guarded, capsys):
    bad_values = setting.invalid_examples()
    if not bad_values:
        assert (env, name) in NO_BAD_VALUE, f"{env}.{name} has no bad value and no reason"
        return
    run = _run_for(env)
    key = f"env_config.{name}"
    for bad in bad_values:
        _rejected(_spec(run, env, env_config={name: bad}), key, bad, guarded)
    _main_rejects(_spec(run, env, env_config={name: bad_values[0]}), key, guarded, capsys)


@pytest.mark.parametrize(("where", "run", "env", "rule"), RULE_CASES)
def test_every_declared_rule_rejects_its_example(where, run, env, rule, guarded, capsys):
    example = dict(rule.example)
    spec = _spec(run, env, **{"config" if where == "config" else "env_config": example})
    key = f"{where}.{rule.keys[0]}"
    line = _rejected(spec, key, example[rule.keys[0]] if rule.keys[0] in example else key, guarded)
    assert line.startswith(key), line
    _main_rejects(spec, key, guarded, capsys)


def test_rules_python_only():
    """The rules no YAML file can break, broken on the declarations with Python objects."""
    from rllib_fair.envs.school_standin import standin_params
    from rllib_fair.settings import SettingError

    settings, rules, defaults = env_declarations("fair/SchoolAdmission-v0")
    given = {"standin_seed": 3, "params": standin_params(None)}
    with pytest.raises(SettingError, match=r"^env_config\.standin_seed: 3 is invalid together"):
        check_values(settings, rules, given, defaults, prefix="env_config.")
    check_values(settings, rules, {"params": given["params"]}, defaults, prefix="env_config.")
    assert set(PYTHON_ONLY_RULES) == {("fair/SchoolAdmission-v0", "one_population")}


def test_the_walk_covers_every_declaration():
    """Every declared setting and rule is in the walk (or listed with its reason)."""
    walked = {(p.values[0], p.values[2]) for p in ALGORITHM_CASES}
    for run in ALGORITHMS:
        assert {(run, n) for n in collect(get_config_class(run))[0]} <= walked
    assert {("PPO", s.name) for s in RLLIB_SETTINGS} <= walked
    env_walked = {(p.values[0], p.values[1]) for p in ENV_CASES}
    for env_id in ENV_IDS:
        settings, rules, defaults = env_declarations(env_id)
        assert {(env_id, n) for n in settings} <= env_walked
        # every constructor argument is declared, and nothing else is
        assert set(defaults) <= set(settings), env_id
    rules_walked = {
        (p.values[1] if p.values[0] == "config" else p.values[2], p.values[3].name)
        for p in RULE_CASES
    }
    for run in ALGORITHMS:
        assert {(run, r.name) for r in collect(get_config_class(run))[1]} <= rules_walked
    for env_id in ENV_IDS:
        for rule in env_declarations(env_id)[1]:
            assert (env_id, rule.name) in rules_walked or (env_id, rule.name) in PYTHON_ONLY_RULES
    assert len(walked) >= 500 and len(env_walked) >= 150


def test_every_algorithm_field_is_declared():
    """Each attribute a config class adds over its RLlib base is declared (or shared RLlib)."""
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

    rllib_names = {s.name for s in RLLIB_SETTINGS}
    for run in ALGORITHMS:
        cls = get_config_class(run)
        base = next(k for k in cls.__mro__ if k.__module__.startswith("ray.rllib"))
        assert issubclass(base, AlgorithmConfig)
        own = set(vars(cls())) - set(vars(base())) - {"_user_callbacks"}
        declared = set(collect(cls)[0]) | rllib_names
        assert own <= declared, f"{run}: undeclared {sorted(own - declared)}"


def test_declared_checks_only_read():
    """validate()'s declared checks convert and fill in nothing (a list stays that list)."""
    cfg = get_config_class("SELLF")().environment("fair/LendingFICO-v0")
    hidden = [8, 8]
    cfg.predictor_hiddens = hidden
    before = {k: v for k, v in vars(cfg).items() if k in collect(type(cfg))[0]}
    from rllib_fair.settings import check_object

    check_object(cfg)
    assert cfg.predictor_hiddens is hidden
    assert {k: v for k, v in vars(cfg).items() if k in before} == before


@pytest.mark.parametrize("run", list(ALGORITHMS))
def test_validate_only_checks_and_freeze_sets_what_is_derived(run):
    """validate() sets none of the config's settings (RLlib's own validate() sets
    simple_optimizer); freeze() sets what the config derives for RLlib."""
    import copy

    from rllib_fair.rllib.env_runner import FairEnvRunner

    cfg = get_config_class(run)().environment(ALGORITHMS[run].smoke_env)
    before = copy.deepcopy({k: v for k, v in vars(cfg).items() if not callable(v)})
    cfg.validate()
    after = {k: v for k, v in vars(cfg).items() if not callable(v)}
    assert [k for k in before if before[k] != after[k]] in ([], ["simple_optimizer"])
    cfg.freeze()
    assert issubclass(cfg.env_runner_cls, FairEnvRunner)  # the lean loop: its subclass


def test_setting_messages_are_exact():
    """The wording of the declared errors (one line: key, bad value, what is valid)."""
    from rllib_fair.settings import SettingError, choice, integer, number, probabilities

    cases = [
        (integer("n", "", 1), 0, "n: 0 is invalid; valid: an integer >= 1"),
        (integer("n", "", 1), 1.5, "n: 1.5 is invalid; valid: an integer >= 1"),
        (integer("n", "", 1), True, "n: True is invalid; valid: an integer >= 1"),
        (number("x", "", 0, low_open=True), 0, "x: 0 is invalid; valid: a finite number > 0"),
        (
            number("x", "", 0, 1, low_open=True, high_open=True),
            1.0,
            "x: 1.0 is invalid; valid: a number in (0, 1)",
        ),
        (number("x", "", 0), float("inf"), "x: inf is invalid; valid: a finite number >= 0"),
        (
            choice("c", ("a", "b"), "", none=True, none_means="auto"),
            "z",
            "c: 'z' is invalid; valid choices: a, b, null (auto)",
        ),
        (
            Setting("f", "bool", also=("auto",)),
            "yes",
            "f: 'yes' is invalid; valid choices: auto, true, false",
        ),
        (
            probabilities("p", "", length=2),
            [0.5, 0.6],
            "p: [0.5, 0.6] is invalid; valid: a list of 2 numbers in [0, 1] summing to 1",
        ),
        (
            probabilities("p", "", length=2),
            [0.5, 1.5],
            "p[1]: 1.5 is invalid; valid: a number in [0, 1]",
        ),
        (
            integer("w", "", 1, none=True, none_means="all"),
            -5,
            "w: -5 is invalid; valid: an integer >= 1 or null (all)",
        ),
    ]
    for setting, value, message in cases:
        with pytest.raises(SettingError) as err:
            setting.check(value)
        assert str(err.value) == message
    assert integer("n", "", 1).accepts(3) and not integer("n", "", 1).accepts(None)
    assert probabilities("p", "", length=2).accepts([0.25, 0.75])


# --------------------------------------------------------------------------------------
# Bad inputs the declarations do not cover, each caught before Ray starts with one line.


def _run_main(argv: list[str], capsys) -> str:
    """``main(argv)`` exits 2 (return or SystemExit) with one stderr line; returns it."""
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("rllib-fair: error: "), err
    return err.rstrip("\n")


def _write(folder, spec: dict):
    path = folder / "exp.yaml"
    path.write_text(yaml.safe_dump({"exp": spec}, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("run", "config"),
    [("PPO", {}), ("PPO", {"fairness_notion": "equal_opportunity"}), ("SELLF", {})],
)
def test_a_gymnasium_env_that_is_not_fair_is_refused(run, config, guarded, capsys):
    """CartPole has no groups: refused at once instead of failing in a connector."""
    path = _write(guarded.parent, _spec(run, "CartPole-v1", config=config))
    line = _run_main(["train", str(path), "--storage-path", str(guarded)], capsys)
    assert line.startswith("rllib-fair: error: env: 'CartPole-v1' is not a fair environment")
    assert f"which {run} needs for fairness_columns" in line and "fair/Lending-v0" in line
    assert not guarded.exists()


def test_a_non_fair_env_is_fine_where_nothing_reads_groups(guarded):
    """TD3 on Pendulum (no fairness columns, no notion) and a fair env registered from Python."""
    import gymnasium as gym

    from rllib_fair.envs.lending import LendingEnv

    validate_experiment("exp", _spec("TD3", "Pendulum-v1"), storage_path=str(guarded))
    if "test/MyLending-v0" not in gym.registry:
        gym.register(id="test/MyLending-v0", entry_point=LendingEnv)
    spec = _spec("PPO", "test/MyLending-v0", config={"fairness_notion": "equal_opportunity"})
    validate_experiment("exp", spec, storage_path=str(guarded))
    with pytest.raises(ExperimentError, match=r"^env: 'Pendulum-v1' is not a fair environment"):
        spec = _spec("TD3", "Pendulum-v1", config={"fairness_notion": "demographic_parity"})
        validate_experiment("exp", spec, storage_path=str(guarded))


@pytest.mark.parametrize(
    ("run", "setting", "value", "message"),
    [
        (
            "ELBERTPO",
            "episode_length",
            -5,
            "config.episode_length: -5 is invalid; valid: an integer >= 1 or null "
            "(the env's max_steps)",
        ),
        (
            "SELLF",
            "fairness_disparity_window",
            -5,
            "config.fairness_disparity_window: -5 is invalid; valid: an integer >= 1 or null "
            "(the running gap since the episode start)",
        ),
        ("Uncertainty", "n_epochs", -3, "config.n_epochs: -3 is invalid; valid: an integer >= 0"),
        (
            "SELLF",
            "predictor_batch_size",
            -1,
            "config.predictor_batch_size: -1 is invalid; valid: an integer >= 1 or null "
            "(the whole memory)",
        ),
        (
            "LUCBFair",
            "horizon",
            0,
            "config.horizon: 0 is invalid; valid: an integer >= 1 or null (the env's max_steps)",
        ),
    ],
)
def test_negative_lengths_and_windows_are_refused(run, setting, value, message, guarded, capsys):
    """Settings that trained silently (or failed inside a trial) with a negative length."""
    spec = _spec(run, ALGORITHMS[run].smoke_env, config={setting: value})
    line = _run_main(
        ["train", str(_write(guarded.parent, spec)), "--storage-path", str(guarded)], capsys
    )
    assert line == f"rllib-fair: error: {message}"


def test_a_per_group_list_of_the_wrong_length_is_refused(guarded, capsys):
    spec = _spec("PPO", "fair/Attention-v0", env_config={"incident_rates": [1.0, 2.0]})
    line = _run_main(
        ["train", str(_write(guarded.parent, spec)), "--storage-path", str(guarded)], capsys
    )
    assert line == (
        "rllib-fair: error: env_config.incident_rates: [1.0, 2.0] is invalid; valid: a list "
        "of 5 numbers in [0, 1e+15]"
    )
    spec = _spec("PPO", "fair/Attention-v0", env_config={"decrease_rates": [0.1, 0.1]})
    line = _run_main(
        ["train", str(_write(guarded.parent, spec)), "--storage-path", str(guarded)], capsys
    )
    assert "env_config.decrease_rates: [0.1, 0.1] is invalid" in line and "5 numbers" in line


@pytest.mark.skipif(
    not __import__("pathlib").Path("/proc/self/mounts").is_file(), reason="no Linux mount table"
)
@pytest.mark.parametrize(
    ("path", "fstype"), [("/proc/rllib-fair", "proc"), ("/sys/rllib-fair", "sysfs")]
)
def test_storage_on_a_kernel_filesystem_is_refused(path, fstype, guarded, capsys):
    """/proc and /sys accept os.access for root, but no folder can be created there."""
    spec = _spec("PPO", "fair/Lending-v0")
    line = _run_main(["train", str(_write(guarded.parent, spec)), "--storage-path", path], capsys)
    assert line.startswith(f"rllib-fair: error: --storage-path: {path!r} is invalid")
    assert f"on the {fstype} filesystem" in line


def test_filesystem_type_reads_the_longest_mount_point(tmp_path):
    from pathlib import Path

    from rllib_fair.cli.experiment import PSEUDO_FILESYSTEMS, _filesystem_type

    mounts = tmp_path / "mounts"
    mounts.write_text(
        "overlay / overlay rw 0 0\nproc /proc proc rw 0 0\nsysfs /sys sysfs rw 0 0\n"
        "tmpfs /sys/fs/cgroup tmpfs rw 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
        "tmpfs /my\\040disk tmpfs rw 0 0\n"
    )
    got = {
        p: _filesystem_type(Path(p), str(mounts))
        for p in (
            "/",
            "/proc",
            "/proc/1",
            "/sys/x",
            "/sys/fs/cgroup/a",
            "/sys/fs/cgroup/unified/b",
            "/my disk/r",
            "/procx",
        )
    }
    assert got == {
        "/": "overlay",
        "/proc": "proc",
        "/proc/1": "proc",
        "/sys/x": "sysfs",
        "/sys/fs/cgroup/a": "tmpfs",
        "/sys/fs/cgroup/unified/b": "cgroup2",
        "/my disk/r": "tmpfs",
        "/procx": "overlay",
    }
    assert {"proc", "sysfs", "cgroup2"} <= PSEUDO_FILESYSTEMS and "tmpfs" not in PSEUDO_FILESYSTEMS
    assert _filesystem_type(Path("/"), str(tmp_path / "none")) is None


@pytest.mark.parametrize(
    ("run", "section", "key", "needles"),
    [
        (
            "PPO",
            "stop",
            "env_runners/episode_reward_mean",
            [
                "PPO on fair/Lending-v0 never reports this key",
                "did you mean env_runners/episode_return_mean",
            ],
        ),
        (
            "PPO",
            "pass_criteria",
            "learners/default_policy/policy_los",
            ["did you mean learners/default_policy/policy_loss"],
        ),
        (
            "Myopic",
            "pass_criteria",
            "learners/default_policy/policy_loss",
            ["Myopic on fair/Replicator-v0 never reports"],
        ),
        ("PPO", "pass_criteria", "perf/cpu_util", ["did you mean perf/cpu_util_percent"]),
        (
            "PPO",
            "pass_criteria",
            "evaluation/env_runners/episode_return_mean",
            ["no evaluation is configured"],
        ),
        ("PPO", "pass_criteria", "custom_metrics/my_metric", ["never reports this key"]),
        (
            "TD3",
            "pass_criteria",
            "env_runners/lucbfair/loss_mean_smoothed",
            ["TD3 on fair/ReplicatorAdult-v0 never reports"],
        ),
    ],
)
def test_result_keys_the_run_never_reports_are_refused(run, section, key, needles, guarded, capsys):
    stop = {"training_iteration": 4}
    spec = _spec(run, ALGORITHMS[run].smoke_env)
    spec["stop"] = stop
    if section == "stop":
        spec["stop"] = {**stop, key: 1.0}
    else:
        spec["pass_criteria"] = {"training_iteration": {"min": 4}, key: {"max": 1e9}}
    line = _run_main(
        ["train", str(_write(guarded.parent, spec)), "--storage-path", str(guarded)], capsys
    )
    assert line.startswith(f"rllib-fair: error: {section}.{key}: "), line
    for needle in needles:
        assert needle in line, line


@pytest.mark.parametrize(
    ("run", "key", "config"),
    [
        ("PPO", "episode_reward_mean", {}),  # RLlib's old name, translated
        ("PPO", "learners/default_policy/vf_explained_var", {}),
        ("PPO", "env_runners/agent_episode_return_mean/default_agent", {}),
        ("SELLF", "learners/default_policy/renyi_loss", {}),
        ("PPOC", "learners/default_policy/ppoc/lambda", {}),
        ("Uncertainty", "uncertainty/cumulative_utility", {}),
        ("LUCBFair", "lucbfair/regret_cum", {}),
        ("LUCBFair", "env_runners/replicator/q_mean", {}),
        ("PPO", "evaluation/env_runners/episode_return_mean", {"evaluation_interval": 1}),
    ],
)
def test_result_keys_the_run_reports_are_accepted(run, key, config, guarded):
    spec = _spec(run, ALGORITHMS[run].smoke_env, config=config)
    spec["stop"] = {"training_iteration": 4}
    spec["pass_criteria"] = {"training_iteration": {"min": 4}, key: {"max": 1e9}}
    exp = validate_experiment("exp", spec, storage_path=str(guarded))
    assert [c.metric for c in exp.pass_criteria][1] == (
        "env_runners/episode_return_mean" if key == "episode_reward_mean" else key
    )


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["train", "x.yaml", "--seed", "abc"], "--seed: 'abc' is invalid; valid: an integer"),
        (
            ["train", "x.yaml", "--num-env-runners", "x"],
            "--num-env-runners: 'x' is invalid; valid: an integer",
        ),
        (
            ["train", "x.yaml", "--num-cpus", "1.5"],
            "--num-cpus: '1.5' is invalid; valid: an integer",
        ),
        (["evaluate", "ckpt", "--steps", "x"], "--steps: 'x' is invalid; valid: an integer"),
        (["evaluate", "ckpt", "--seeds", "ten"], "--seeds: 'ten' is invalid; valid: an integer"),
        (["evaluate", "ckpt", "--window", "1e3"], "--window: '1e3' is invalid; valid: an integer"),
        (["compare", "a", "--last", "y"], "--last: 'y' is invalid; valid: an integer"),
        (
            ["train"],
            "train: the following arguments are required: file (usage: rllib-fair train --help)",
        ),
        (
            ["evaluate"],
            "evaluate: the following arguments are required: checkpoint (usage: rllib-fair "
            "evaluate --help)",
        ),
        (
            ["train", "x.yaml", "--seed"],
            "train: --seed: expected one argument (usage: rllib-fair train --help)",
        ),
        (["envs", "--bogus"], "unrecognized arguments: --bogus (usage: rllib-fair --help)"),
        (
            ["fly"],
            "command: invalid choice: 'fly'; valid choices: train, evaluate, compare, "
            "reproduce, envs, algos, examples",
        ),
    ],
)
def test_argument_errors_are_one_line(argv, line, capsys):
    """argparse's multi-line usage replaced by one line, exit code 2, for every subcommand."""
    assert _run_main(argv, capsys) == f"rllib-fair: error: {line}"


def test_help_is_still_printed(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "--help"])
    assert exc.value.code == 0
    assert "usage: rllib-fair train" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.parametrize("run", sorted(n for n, s in ALGORITHMS.items() if s.variant_of is None))
def test_declared_result_keys_cover_what_a_run_reports(run, ray_session):
    """One iteration of every base algorithm on its smoke env: every key it reports under
    env_runners/, learners/, perf/ and its own namespace is declared (so no valid key is
    refused)."""
    from rllib_fair.cli.config_build import build_config
    from rllib_fair.cli.metric_keys import reported_patterns
    from rllib_fair.settings import matches

    spec = ALGORITHMS[run]
    cfg = build_config(run, spec.smoke_env, {}, {})
    algo = cfg.build_algo()
    try:
        result = algo.train()
    finally:
        algo.stop()

    def flat(d, prefix=""):
        for k, v in d.items():
            if isinstance(v, dict) and k != "config":
                yield from flat(v, f"{prefix}{k}/")
            else:
                yield f"{prefix}{k}"

    patterns = reported_patterns(cfg)
    checked = [
        k
        for k in flat(result)
        if k.split("/")[0] in ("env_runners", "learners", "perf", "lucbfair", "uncertainty")
    ]
    assert checked
    assert [k for k in checked if not matches(k, patterns)] == []


def test_the_settings_reference_is_generated_from_the_declarations():
    """docs/settings.md is exactly what the declarations give (regenerate it with
    ``python -m rllib_fair.cli.settings_doc --write``)."""
    from rllib_fair.cli.settings_doc import DOC_PATH, render

    text = render()
    assert DOC_PATH.read_text() == text
    for run in ALGORITHMS:
        assert f"\n### {run}\n" in text
    for env_id in ENV_IDS:
        assert f"\n### {env_id}\n" in text
    assert "| `policy_samples` | int | an integer >= 1 | 10 |" in text
    assert "- `samples_fit_store` (`policy_samples`, `policy_store_size`)" in text
