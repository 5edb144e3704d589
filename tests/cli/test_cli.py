"""CLI tier: ``rllib-fair train FILE.yaml``, ``rllib-fair envs``, ``rllib-fair algos``.

Bad input is checked in-process with Ray forbidden: exit code 2, exactly one line on
stderr naming the key, the bad value and the valid choices, and an existing results
folder left byte for byte as it was. The end-to-end runs share one local Ray instance
(the ``ray_session`` fixture) and stay at one or two tiny PPO iterations each.
"""

from __future__ import annotations

import copy
import csv
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rllib_fair.cli import main
from rllib_fair.envs import env_info

ENV_ID = "fair/Lending-v0"
FICO_ID = "fair/LendingFICO-v0"
NOTION = "equal_opportunity"
BIAS_KEY = f"fairness/{NOTION}/bias"
RETURN_KEY = "env_runners/episode_return_mean"
STEPS_KEY = "num_env_steps_sampled_lifetime"
ITER_KEY = "training_iteration"
TB_BIAS_TAG = f"ray/tune/{BIAS_KEY}"
BATCH = 400  # env steps per iteration of the tiny spec

PROGRESS_RE = re.compile(
    r"^\[(?P<exp>\S+) (?P<trial>\S+)\] iter +(?P<iter>\d+)"
    r" \| env steps +(?P<steps>\d+)(?:/(?P<target>\d+))?(?: \| iter target \d+)?"
    r"(?: \( *(?P<pct>\d+)%, ETA (?P<eta>-|\d+m\d\ds)\))?"
    r" \| return +(?P<ret>-|-?\d+\.\d{3})"
    r" \| gap (?P<gap>-|\d+\.\d{4})"
    r" \| (?P<sps>-|\d+) steps/s(?P<health> \| runners .*)?$"
)

DELETE = object()


def tiny_spec() -> dict:
    """PPO on the lending env, 400 env steps per iteration, 2 iterations."""
    return {
        "run": "PPO",
        "env": ENV_ID,
        "env_config": {"max_steps": 200},
        "stop": {"training_iteration": 2},
        "config": {
            "fairness_notion": NOTION,
            "train_batch_size_per_learner": BATCH,
            "minibatch_size": 100,
            "num_epochs": 1,
            "model_config": {"fcnet_hiddens": [16]},
        },
        "pass_criteria": {BIAS_KEY: {"max": 1.0}, STEPS_KEY: {"min": 1}, ITER_KEY: {"min": 2}},
        "checkpoint_config": {"checkpoint_at_end": True},
    }


def changed(*edits: tuple[tuple[str, ...], object]) -> dict:
    """The tiny spec with ``(path, value)`` edits applied (``DELETE`` removes the key)."""
    spec = copy.deepcopy(tiny_spec())
    for path, value in edits:
        node = spec
        for key in path[:-1]:
            node = node[key]
        if value is DELETE:
            del node[path[-1]]
        else:
            node[path[-1]] = value
    return spec


def write_yaml(path: Path, content: dict | str, name: str = "exp") -> Path:
    text = content if isinstance(content, str) else yaml.safe_dump({name: content}, sort_keys=False)
    path.write_text(text)
    return path


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (recursively) with its bytes (None for folders)."""
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


# --------------------------------------------------------------------------- bad input


@pytest.fixture
def results(tmp_path) -> Path:
    """An existing results folder holding one marker file."""
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "marker.txt").write_text("written before the test\n")
    return folder


@pytest.fixture
def no_ray(monkeypatch):
    """Makes starting Ray or Tune an error: bad input must be rejected before."""
    import ray

    from rllib_fair.cli import runner

    def forbidden(*args, **kwargs):
        raise AssertionError("bad input must be rejected before Ray or Tune start")

    monkeypatch.setattr(ray, "init", forbidden)
    monkeypatch.setattr(runner, "run_experiment", forbidden)


def run_bad(argv: list[str], results: Path, capsys) -> str:
    """Runs ``main`` on bad input; checks the common contract; returns the error line."""
    before = snapshot(results)
    assert before == {"marker.txt": b"written before the test\n"}
    rc = main([*argv, "--storage-path", str(results)])
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert err.endswith("\n")
    assert lines[0].startswith("rllib-fair: error: ")
    assert snapshot(results) == before
    return lines[0]


def _algorithms() -> list[str]:
    from rllib_fair.algorithms import list_algorithms

    return list_algorithms()


def _notions() -> list[str]:
    from rllib_fair.fairness.notions import list_notions

    return list_notions()


BAD_INPUT = [
    pytest.param(
        "exp:\n  run: [PPO\n  env: fair/Lending-v0\n",
        [],
        ["FILE", "exp.yaml", "not valid YAML", "line 3"],
        id="malformed-yaml",
    ),
    pytest.param("", [], ["FILE", "exp.yaml", "NoneType"], id="empty-file"),
    pytest.param(
        changed((("run",), "PPX")),
        [],
        ["run", "'PPX'", "valid choices: " + ", ".join(_algorithms())],
        id="unknown-run",
    ),
    pytest.param(
        changed((("env",), "fair/Nope-v0")),
        [],
        ["env", "'fair/Nope-v0'", ENV_ID, FICO_ID],
        id="unknown-env",
    ),
    pytest.param(
        changed((("config", "fairness_notion"), "equal_opp")),
        [],
        ["fairness_notion", "'equal_opp'", "valid choices: " + ", ".join(_notions())],
        id="unknown-notion",
    ),
    pytest.param(
        changed((("config", "fairness_log_notions"), ["fairness"])),
        [],
        ["fairness_log_notions", "'fairness'", "valid choices: " + ", ".join(_notions())],
        id="unknown-log-notion",
    ),
    pytest.param(
        changed((("config", "lrr"), 0.001)),
        [],
        ["config.lrr", "unknown setting", "did you mean lr"],
        id="typo-config-key",
    ),
    pytest.param(
        changed((("config", "num_sgd_iter"), 3)),
        [],
        ["config.num_sgd_iter", "use num_epochs"],
        id="dead-old-stack-key",
    ),
    pytest.param(
        changed((("config", "sgd_minibatch_size"), 64)),
        [],
        ["config.sgd_minibatch_size", "use minibatch_size"],
        id="renamed-key",
    ),
    pytest.param(
        changed((("config",), ["lr", 0.1])),
        [],
        ["config", "mapping", "['lr', 0.1]"],
        id="config-not-a-mapping",
    ),
    pytest.param(
        changed((("stop", "training_iteration"), -2)),
        [],
        ["stop.training_iteration", "-2", "> 0"],
        id="negative-budget-in-file",
    ),
    pytest.param(
        tiny_spec(),
        ["--stop", "num_env_steps_sampled_lifetime=-5"],
        ["stop.num_env_steps_sampled_lifetime", "-5", "> 0"],
        id="negative-budget-via-stop",
    ),
    pytest.param(
        tiny_spec(),
        ["--stop", "episode_len=3"],
        ["stop.episode_len", "'episode_len'", RETURN_KEY, STEPS_KEY],
        id="unknown-stop-key",
    ),
    pytest.param(
        changed((("stop",), DELETE)),
        [],
        ["stop", "no budget", "training_iteration", STEPS_KEY],
        id="no-budget",
    ),
    pytest.param(
        tiny_spec(),
        ["--config", "lr"],
        ["--config", "'lr'", "key=value"],
        id="config-override-without-equals",
    ),
    pytest.param(
        tiny_spec(),
        ["--config", "lr=fast"],
        ["lr", "fast"],
        id="config-override-bad-value",
    ),
    pytest.param(
        changed((("env_config", "max_steps"), -3)),
        [],
        ["env_config", "max_steps", "-3", ">= 1"],
        id="bad-env-config-value",
    ),
    pytest.param(
        changed((("env_config", "max_stepz"), 10)),
        [],
        ["env_config", "max_stepz"],
        id="unknown-env-config-key",
    ),
    pytest.param(
        changed((("env_config",), 5)),
        [],
        ["env_config", "mapping", "got 5"],
        id="env-config-not-a-mapping",
    ),
    pytest.param(
        changed((("stopp",), {"training_iteration": 1})),
        [],
        ["exp.stopp", "unknown key", "valid keys: run, env, env_config, stop"],
        id="unknown-top-level-key",
    ),
    pytest.param(
        changed((("pass_criteria", BIAS_KEY), {"below": 1})),
        [],
        [f"pass_criteria.{BIAS_KEY}", "'below'", "{min: x}, {max: x}"],
        id="bad-criterion-bound",
    ),
    pytest.param(
        changed((("checkpoint_config", "every"), 2)),
        [],
        [
            "checkpoint_config.every",
            "checkpoint_at_end, checkpoint_every_minutes, checkpoint_frequency, num_to_keep",
        ],
        id="unknown-checkpoint-key",
    ),
    pytest.param(
        changed((("pass_criteria",), DELETE)),
        ["--as-test"],
        ["pass_criteria", "--as-test", "'exp'"],
        id="as-test-without-pass-criteria",
    ),
    pytest.param(
        changed((("config", "lr"), {"grid_search": [0.001, "fast"]})),
        [],
        ["config.lr.grid_search", "'fast'"],
        id="bad-grid-value",
    ),
    pytest.param(
        changed((("config", "lr"), {"grid_search": []})),
        [],
        ["config.lr.grid_search", "[]", "non-empty list"],
        id="empty-grid",
    ),
    pytest.param(
        changed((("config", "lr"), {"grid_search": [0.1], "extra": 1})),
        [],
        ["config.lr", "'extra'", "{grid_search: [v1, v2, ...]}"],
        id="grid-with-extra-key",
    ),
    pytest.param(
        changed((("config", "fairness_notion"), {"grid_search": [NOTION, "demographic_parity"]})),
        [],
        ["config.fairness_notion", "grid_search is not supported"],
        id="grid-over-the-notion",
    ),
    pytest.param(
        changed((("selection",), {"omega": -0.1})),
        [],
        ["selection.omega", "-0.1", ">= 0"],
        id="negative-selection-omega",
    ),
    pytest.param(
        changed((("selection",), {"disparty": BIAS_KEY})),
        [],
        ["selection.disparty", "unknown key", "disparity, reward, omega, last_iterations"],
        id="unknown-selection-key",
    ),
    pytest.param(
        changed((("selection",), {"reward": "episode_len"})),
        [],
        ["selection.episode_len", "'episode_len'", RETURN_KEY],
        id="unknown-selection-metric",
    ),
    pytest.param(tiny_spec(), ["--seed", "-1"], ["--seed", "-1", ">= 0"], id="negative-seed"),
    pytest.param(
        tiny_spec(),
        ["--num-env-runners", "-1"],
        ["--num-env-runners", "-1", ">= 0"],
        id="negative-num-env-runners",
    ),
]


@pytest.mark.parametrize(("content", "extra", "needles"), BAD_INPUT)
def test_bad_input_is_one_line_exit_2_nothing_written(
    content, extra, needles, tmp_path, results, capsys, no_ray
):
    path = write_yaml(tmp_path / "exp.yaml", content)
    line = run_bad(["train", str(path), *extra], results, capsys)
    for needle in needles:
        assert needle in line, f"{needle!r} missing from: {line}"


def test_bad_input_missing_file(tmp_path, results, capsys, no_ray):
    line = run_bad(["train", str(tmp_path / "nope.yaml")], results, capsys)
    assert "FILE" in line and "nope.yaml" in line


def test_notion_the_env_does_not_support(tmp_path, results, capsys, no_ray, monkeypatch):
    from rllib_fair.envs import env_info
    from rllib_fair.envs.lending import LendingEnv

    assert "demographic_parity" in env_info(ENV_ID)["supported_notions"]
    monkeypatch.setattr(LendingEnv, "SUPPORTED_NOTIONS", ("equal_opportunity", "equalized_odds"))
    # env_info reads the class attribute, so the CLI sees the smaller tuple.
    assert env_info(ENV_ID)["supported_notions"] == ("equal_opportunity", "equalized_odds")
    path = write_yaml(
        tmp_path / "exp.yaml", changed((("config", "fairness_notion"), "demographic_parity"))
    )
    line = run_bad(["train", str(path)], results, capsys)
    assert "fairness_notion" in line
    assert "'demographic_parity'" in line
    assert ENV_ID in line
    assert "valid choices: equal_opportunity, equalized_odds" in line


def test_bad_input_cases_differ_from_a_valid_file(tmp_path, results, capsys, no_ray):
    """Control: the unedited tiny spec passes validation and reaches the runner."""
    path = write_yaml(tmp_path / "exp.yaml", tiny_spec())
    with pytest.raises(AssertionError, match="before Ray or Tune start"):
        main(["train", str(path), "--as-test", "--storage-path", str(results)])
    assert capsys.readouterr().err == ""
    # Another notion: its own gap is the fairness criterion (the old one is not reported).
    path = write_yaml(
        tmp_path / "exp.yaml",
        changed(
            (("config", "fairness_notion"), "demographic_parity"),
            (("pass_criteria", BIAS_KEY), DELETE),
            (("pass_criteria", "fairness/demographic_parity/bias"), {"max": 1.0}),
        ),
    )
    with pytest.raises(AssertionError, match="before Ray or Tune start"):
        main(["train", str(path), "--storage-path", str(results)])


def test_console_script_bad_input_prints_exactly_one_line(tmp_path, results):
    """The real entry point in a fresh process: no RLlib log line next to the error."""
    path = write_yaml(tmp_path / "exp.yaml", changed((("config", "fairness_notion"), "equal_opp")))
    script = Path(sys.executable).with_name("rllib-fair")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "rllib_fair.cli"]
    before = snapshot(results)
    proc = subprocess.run(
        [*cmd, "train", str(path), "--storage-path", str(results)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RAY_ADDRESS": ""},
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "rllib-fair: error: config.fairness_notion: 'equal_opp' is invalid; valid choices: "
        + ", ".join(_notions())
        + ", null (the env's default notion)"
    ]
    assert snapshot(results) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.yaml", "results"]


@pytest.fixture
def token_gcs():
    """A local gRPC server answering Ray's GCS ``GetClusterId`` like a cluster started
    with ``RAY_AUTH_MODE=token``: only the token ``"the-cluster-token"`` is accepted."""
    from concurrent import futures

    import grpc
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    class NodeInfo(gcs_service_pb2_grpc.NodeInfoGcsServiceServicer):
        def GetClusterId(self, request, context):
            if dict(context.invocation_metadata()).get("authorization") != (
                "Bearer the-cluster-token"
            ):
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "InvalidAuthToken")
            return gcs_service_pb2.GetClusterIdReply()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    gcs_service_pb2_grpc.add_NodeInfoGcsServiceServicer_to_server(NodeInfo(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}"
    server.stop(None)


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        (
            {"RAY_AUTH_MODE": "disabled"},
            "uses token authentication and this machine sends no token",
        ),
        ({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "stale"}, "rejected this machine's token"),
    ],
)
def test_address_of_a_token_cluster_without_its_token_is_one_line(
    env, needle, tmp_path, results, capsys, no_ray, token_gcs, monkeypatch
):
    """Without the cluster's token, ray.init retries for ~20 s printing one auth error per
    second; the CLI asks the GCS once and says what to set, before Ray starts."""
    from ray._raylet import AuthenticationTokenLoader

    for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    AuthenticationTokenLoader.instance().reset_cache()
    path = write_yaml(tmp_path / "exp.yaml", tiny_spec())
    try:
        err = run_bad(["train", str(path), "--address", token_gcs], results, capsys)
    finally:
        AuthenticationTokenLoader.instance().reset_cache()
    assert err.startswith(f"rllib-fair: error: --address: the Ray cluster at '{token_gcs}' ")
    assert needle in err and "RAY_AUTH_MODE=token" in err and "ray get-auth-token" in err


def test_address_check_accepts_the_clusters_token(token_gcs, monkeypatch):
    from ray._raylet import AuthenticationTokenLoader

    from rllib_fair.cli.connect import auth_problem

    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", "the-cluster-token")
    AuthenticationTokenLoader.instance().reset_cache()
    try:
        assert auth_problem(token_gcs) is None
        assert auth_problem("ray://example:10001") is None  # Ray Client: not probed
    finally:
        monkeypatch.delenv("RAY_AUTH_TOKEN")
        AuthenticationTokenLoader.instance().reset_cache()


def test_help_states_each_default_once(capsys):
    for command in ("train", "evaluate", "compare"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "(default: None)" not in text and "(default: False)" not in text
        for option in re.split(r"\s(?=--?[a-z])", text):
            assert option.count("default") <= 1, option
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    assert "(default: 10000)" in capsys.readouterr().out


def test_algos_columns_line_up(capsys):
    assert main(["algos"]) == 0
    lines = capsys.readouterr().out.splitlines()
    starts = set()
    for line in lines:
        if line.startswith(" "):  # the paper line, under the class path
            starts.add(len(line) - len(line.lstrip()))
        else:
            name, path = line.split()
            starts.add(line.index(path))
    assert len(starts) == 1, starts


def test_yaml_scientific_notation_and_legacy_keys_are_understood(tmp_path):
    """``5e-5`` is a float (PyYAML alone reads it as a string); old keys are translated."""
    from rllib_fair.cli.experiment import validate_experiment
    from rllib_fair.cli.experiment_file import load_experiments, parse_overrides

    text = yaml.safe_dump({"exp": changed((("pass_criteria",), DELETE))}, sort_keys=False)
    text += "  pass_criteria:\n    episode_reward_mean: {min: 1e9}\n    training_iteration: 2\n"
    text = text.replace("num_epochs: 1", "num_epochs: 1\n    lr: 5e-5\n    lambda: 0.9")
    path = write_yaml(tmp_path / "exp.yaml", text)
    specs = load_experiments(path)
    exp = validate_experiment(
        "exp",
        specs["exp"],
        stop_overrides=parse_overrides(["timesteps_total=8e2"], "--stop"),
        config_overrides=parse_overrides(["gamma=9.5e-1", "num_workers=0"], "--config"),
        seed=7,
    )
    assert exp.config.lr == pytest.approx(5e-5)
    assert exp.config.lambda_ == pytest.approx(0.9)
    assert exp.config.gamma == pytest.approx(0.95)
    assert exp.config.seed == 7
    assert exp.config.num_env_runners == 0
    assert exp.stop == {"training_iteration": 2.0, STEPS_KEY: 800.0}
    crit, budget = exp.pass_criteria
    assert (crit.metric, crit.minimum, crit.maximum) == (RETURN_KEY, 1e9, None)
    assert (budget.metric, budget.minimum, budget.maximum) == (ITER_KEY, 2.0, None)


def _summary_table(run: str, env: str, trial: dict, config: dict | None = None) -> str:
    """``print_table`` of one made-up finished trial of ``run`` on ``env`` (no Ray)."""
    import io

    from rllib_fair.cli.experiment import validate_experiment
    from rllib_fair.cli.report import print_table

    spec = {"run": run, "env": env, "stop": {ITER_KEY: 1}, "config": config or {}}
    exp = validate_experiment("exp", spec)
    base = {"trial": f"{run}_x", "iterations": 1, "env_steps": 500, "steps_per_s": 100.0}
    base |= {"error": None, "rates": {}, "checkpoint": None, "return": None, "gap": None}
    buf = io.StringIO()
    print_table(exp, {"wall_s": 1.0, "storage": "/r", "trials": [base | trial]}, file=buf)
    return buf.getvalue()


def _table_cells(out: str, names: list[str]) -> dict[str, str]:
    """``names`` (the header's columns after ``trial``, in order) -> the trial row's values.

    Columns are right-aligned: a value ends where its header name ends.
    """
    lines = out.splitlines()
    head = next(ln for ln in lines if ln.startswith("trial "))
    row = lines[lines.index(head) + 2]
    assert head.rstrip().endswith(names[-1]), head
    cells, end = {}, head.index(" iters")
    for name in names:
        stop = head.index(name, end) + len(name)
        cells[name] = row[end:stop].strip()
        end = stop
    assert end == len(head.rstrip()), f"columns other than {names}: {head}"
    return cells


def test_summary_shows_ppoc_qualification_gain_gap_next_to_the_default_gap():
    out = _summary_table(
        "PPOC",
        "fair/LendingDrift-v0",
        {
            "return": 12.0,
            "env_return": 12.0,
            "gap": 0.14,
            "targets": {"fairness/qualification_gain/gain_gap_abs": 5.96},
        },
        {"fairness_notion": "equal_opportunity"},
    )
    names = ["return", "gap (equal_opportunity)", "qualification-gain gap", "steps/s"]
    cells = _table_cells(out, ["iters", "env steps", *names])
    assert cells["return"] == "12.000"
    assert cells["gap (equal_opportunity)"] == "0.1400"
    assert cells["qualification-gain gap"] == "5.9600"
    assert "PPOC's own target, the qualification-gain gap column: |G_0 - G_1|" in out
    assert "(fairness/qualification_gain/gain_gap_abs)" in out
    assert "gap (equal_opportunity) = max - min over groups of the true positive rate" in out


def test_summary_names_rtd3_relaxed_return_and_the_env_return():
    trial = {
        "return": 145.65,
        "env_return": 142.35,
        "objective": 145.65,
        "gap": 0.02,
        "targets": {"env_runners/replicator/disparity_mean": 0.0032},
    }
    out = _summary_table("RTD3", "fair/ReplicatorAdult-v0", trial)
    names = ["env return", "relaxed return", "gap (demographic_parity)", "squared disparity D"]
    cells = _table_cells(out, ["iters", "env steps", *names, "steps/s"])
    assert cells["env return"] == "142.350"
    assert cells["relaxed return"] == "145.650"
    assert cells["squared disparity D"] == "0.0032"
    assert "relaxed return (RTD3's objective): the relaxed reward" in out
    assert "env return: the env's own reward r = 1 - L" in out


def test_summary_of_a_baseline_says_it_has_no_own_target():
    out = _summary_table("PPO", "fair/Lending-v0", {"return": 3.0, "env_return": 3.0, "gap": 0.1})
    names = ["iters", "env steps", "return", "gap (equal_opportunity)", "steps/s"]
    assert _table_cells(out, names)["return"] == "3.000"
    assert "PPO's own target: none (unconstrained: maximises the env's reward only)" in out


# ----------------------------------------------------------------------------- listings


def _blocks(out: str) -> dict[str, list[str]]:
    """Unindented lines start an entry; indented lines belong to it."""
    blocks: dict[str, list[str]] = {}
    current = None
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            current = line.strip()
            blocks[current] = []
        else:
            assert current is not None, out
            blocks[current].append(line.strip())
    return blocks


def _field(lines: list[str], name: str) -> list[str]:
    (line,) = [ln for ln in lines if ln.startswith(name + ":")]
    return [x.strip() for x in line.split(":", 1)[1].split(",")]


def test_envs_lists_registered_environments(capsys):
    assert main(["envs"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    from rllib_fair.envs import ENV_IDS, env_info

    blocks = _blocks(out)
    assert list(blocks) == list(ENV_IDS)
    assert {ENV_ID, FICO_ID} <= set(blocks)
    assert _field(blocks[ENV_ID], "groups") == ["group_0", "group_1"]
    assert _field(blocks[FICO_ID], "groups") == ["Black", "white"]
    for env_id in ENV_IDS:
        info = env_info(env_id)
        assert len(blocks[env_id]) == 3  # groups, notions, description
        assert _field(blocks[env_id], "groups") == list(info["group_names"])
        notions = _field(blocks[env_id], "notions")
        assert notions == [
            n + (" (default)" if n == info["default_notion"] else "")
            for n in info["supported_notions"]
        ]
        assert blocks[env_id][2] == info["description"]
    for env_id in (ENV_ID, FICO_ID):
        notions = _field(blocks[env_id], "notions")
        assert "equal_opportunity (default)" in notions
        assert "demographic_parity" in notions


def test_envs_listing_follows_the_class_attributes(capsys, monkeypatch):
    from rllib_fair.envs.lending import LendingEnv

    monkeypatch.setattr(LendingEnv, "SUPPORTED_NOTIONS", ("demographic_parity",))
    monkeypatch.setattr(LendingEnv, "DEFAULT_NOTION", "demographic_parity")
    assert main(["envs"]) == 0
    blocks = _blocks(capsys.readouterr().out)
    assert _field(blocks[ENV_ID], "notions") == ["demographic_parity (default)"]
    fico = [n.split(" ")[0] for n in _field(blocks[FICO_ID], "notions")]
    assert fico == list(env_info(FICO_ID)["supported_notions"])


def test_algos_lists_ppo_with_its_paper(capsys):
    from rllib_fair.algorithms import ALGORITHMS

    assert main(["algos"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    blocks = _blocks(out)
    assert len(blocks) == len(ALGORITHMS)
    (ppo_line,) = [line for line in blocks if line.split()[0] == "PPO"]
    assert ppo_line.split()[1] == "rllib_fair.algorithms.ppo.ppo.FairPPO"
    assert blocks[ppo_line] == [ALGORITHMS["PPO"].paper]
    assert "PPO (Schulman et al. 2017)" in blocks[ppo_line][0]


def test_unknown_subcommand_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["fly"])
    assert exc.value.code == 2
    assert "invalid choice: 'fly'" in capsys.readouterr().err


# --------------------------------------------------------------------------- end to end


def train(argv: list[str], capsys) -> tuple[int, str, str]:
    rc = main(["train", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def progress(out: str) -> list[re.Match]:
    """The progress lines of ``out``; every line that looks like one must parse."""
    lines = [line for line in out.splitlines() if " | env steps " in line]
    matches = [PROGRESS_RE.match(line) for line in lines]
    assert all(matches), lines
    return matches


def trial_dir(storage: Path, name: str = "exp") -> Path:
    (trial,) = [p for p in (storage / name).iterdir() if p.is_dir() and p.name.startswith("Fair")]
    return trial


def result_lines(trial: Path) -> list[dict]:
    text = (trial / "result.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


@pytest.mark.ray
def test_train_as_test_end_to_end(tmp_path, ray_session, capsys):
    # The steps criterion first holds on iteration 2, so --as-test cannot stop early.
    spec = changed((("pass_criteria", STEPS_KEY), {"min": 2 * BATCH}))
    path = write_yaml(tmp_path / "exp.yaml", spec)
    storage = tmp_path / "results"
    argv = [str(path), "--as-test", "--storage-path", str(storage), "--seed", "3"]
    rc, out, err = train(argv, capsys)
    assert rc == 0, out + err

    # One progress line per iteration.
    lines = progress(out)
    assert [int(m["iter"]) for m in lines] == [1, 2]
    assert [int(m["steps"]) for m in lines] == [BATCH, 2 * BATCH]
    assert {m["exp"] for m in lines} == {"exp"}
    for m in lines:
        assert m["ret"] != "-" and m["sps"] != "-"
        assert 0.0 <= float(m["gap"]) <= 1.0

    # Final table.
    out_lines = out.splitlines()
    assert f"== exp: PPO on {ENV_ID} (" in out
    (header,) = [line for line in out_lines if line.startswith("trial ")]
    for column in ("iters", "env steps", "return", f"gap ({NOTION})", "steps/s"):
        assert column in header
    (row,) = [line for line in out_lines if line.startswith("FairPPO_")]
    fields = row.split()
    assert fields[1:3] == ["2", str(2 * BATCH)]
    assert fields[4] == lines[-1]["gap"]
    assert f"results: {storage.resolve()}/exp" in out_lines
    # TensorBoard: the storage path that stays, not Ray's temporary staging copy
    assert f"TensorBoard: tensorboard --logdir {storage.resolve()}" in out
    assert "To visualize your results with TensorBoard" not in out + err
    assert "/tmp/ray/" not in out
    assert row.startswith(f"{trial_dir(storage).name} ")  # the whole trial name
    (passed,) = [line for line in out_lines if "PASSED" in line]
    assert passed.startswith("exp: PASSED (")
    assert f"{BIAS_KEY} <= 1 AND {STEPS_KEY} >= 800" in passed
    assert passed.endswith("at iteration(s) 2")
    assert "FAILED" not in out + err

    # result.json: every line carries the fairness metrics, finite.
    trial = trial_dir(storage)
    results = result_lines(trial)
    assert [r["training_iteration"] for r in results] == [1, 2]
    for r in results:
        fair = r["fairness"][NOTION]
        assert finite(fair["bias"]) and 0.0 <= fair["bias"] <= 1.0
        for group in ("group_0", "group_1"):
            assert finite(fair["rate"][group]) and 0.0 <= fair["rate"][group] <= 1.0
            assert finite(fair["supply"][group]) and fair["supply"][group] >= 0
            assert finite(fair["demand"][group]) and fair["demand"][group] > 0
        rates = [fair["rate"]["group_0"], fair["rate"]["group_1"]]
        assert fair["bias"] == pytest.approx(max(rates) - min(rates))
        assert r["config"]["seed"] == 3
    biases = [r["fairness"][NOTION]["bias"] for r in results]
    assert [float(m["gap"]) for m in lines] == pytest.approx(biases, abs=5e-5)

    # progress.csv has the flattened column.
    with open(trial / "progress.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    assert [float(row[BIAS_KEY]) for row in rows] == pytest.approx(biases)
    assert f"fairness/{NOTION}/rate/group_1" in rows[0]

    # TensorBoard scalars.
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    assert list(trial.glob("events.out.tfevents.*"))
    acc = EventAccumulator(str(trial))
    acc.Reload()
    assert TB_BIAS_TAG in acc.Tags()["scalars"]
    events = acc.Scalars(TB_BIAS_TAG)
    assert [e.value for e in events] == pytest.approx(biases, rel=1e-5)

    # Checkpoint at the end and the seed in params.json.
    checkpoints = [p for p in trial.glob("checkpoint_*") if p.is_dir()]
    assert len(checkpoints) == 1
    assert any(p.is_file() for p in checkpoints[0].rglob("*"))
    params = json.loads((trial / "params.json").read_text())
    assert params["seed"] == 3
    assert params["fairness_notion"] == NOTION


@pytest.mark.ray
def test_train_overrides_take_effect(tmp_path, ray_session, capsys):
    path = write_yaml(tmp_path / "exp.yaml", changed((("config", "lr"), 0.0003)))
    storage = tmp_path / "results"
    argv = [str(path), "--storage-path", str(storage), "--config", "lr=0.001"]
    rc, out, err = train([*argv, "--stop", "training_iteration=1"], capsys)
    assert rc == 0, out + err
    assert [int(m["iter"]) for m in progress(out)] == [1]
    assert "PASSED" not in out and "FAILED" not in out + err  # no --as-test
    trial = trial_dir(storage)
    assert [r["training_iteration"] for r in result_lines(trial)] == [1]
    params = json.loads((trial / "params.json").read_text())
    assert params["lr"] == pytest.approx(0.001)
    assert params["num_epochs"] == 1


@pytest.mark.ray
def test_as_test_failure_reports_best_values(tmp_path, ray_session, capsys):
    spec = changed(
        (("pass_criteria",), {RETURN_KEY: {"min": 1e9}, BIAS_KEY: {"max": 1.0}, ITER_KEY: 2}),
        (("checkpoint_config", "checkpoint_at_end"), False),
    )
    path = write_yaml(tmp_path / "exp.yaml", spec)
    storage = tmp_path / "results"
    rc, out, err = train([str(path), "--as-test", "--storage-path", str(storage)], capsys)
    assert rc == 1, out + err
    # Tune was given the budget: exactly two iterations, not stopped earlier or later.
    assert [int(m["iter"]) for m in progress(out)] == [1, 2]
    results = result_lines(trial_dir(storage))
    assert [r["training_iteration"] for r in results] == [1, 2]
    # checkpoint_config reaches Tune (its default for a class trainable is to save at the end).
    assert not list(trial_dir(storage).glob("checkpoint_*"))

    best_return = max(r["env_runners"]["episode_return_mean"] for r in results)
    best_bias = min(r["fairness"][NOTION]["bias"] for r in results)
    (failed,) = [line for line in err.splitlines() if "FAILED" in line]
    assert failed.startswith("exp: FAILED: ")
    assert "never met all criteria on one iteration" in failed
    assert f"{RETURN_KEY} best {best_return:.4g} (needs >= 1e+09)" in failed
    assert f"{BIAS_KEY} best {best_bias:.4g} (needs <= 1)" in failed
    assert "PASSED" not in out + err


@pytest.mark.ray
def test_as_test_passes_only_within_the_budget(tmp_path, ray_session, capsys):
    """Criteria that hold from iteration 1 do not pass before the budget entry holds.

    Budget 5 iterations, budget entry training_iteration >= 4 (80%): the trial runs
    iterations 1-4 and stops at 4, the first iteration where every criterion holds,
    which the verdict names and which is the trial's last row.
    """
    spec = changed(
        (("stop", ITER_KEY), 5),
        (("pass_criteria", ITER_KEY), {"min": 4}),
        (("checkpoint_config",), DELETE),
    )
    path = write_yaml(tmp_path / "exp.yaml", spec)
    storage = tmp_path / "results"
    rc, out, err = train([str(path), "--as-test", "--storage-path", str(storage)], capsys)
    assert rc == 0, out + err
    results = result_lines(trial_dir(storage))
    # the other criteria already held on iteration 1
    assert results[0]["fairness"][NOTION]["bias"] <= 1.0
    assert results[0][STEPS_KEY] >= 1
    assert [int(m["iter"]) for m in progress(out)] == [1, 2, 3, 4]
    assert [r["training_iteration"] for r in results] == [1, 2, 3, 4]
    (passed,) = [line for line in out.splitlines() if "PASSED" in line]
    assert f"{ITER_KEY} >= 4" in passed and passed.endswith("at iteration(s) 4")


def test_runner_refuses_as_test_without_the_budget_entry(tmp_path, monkeypatch):
    """An Experiment built without validation cannot pass --as-test on an early iteration."""
    import dataclasses

    from ray import tune

    from rllib_fair.cli.experiment import ExperimentError, validate_experiment
    from rllib_fair.cli.runner import run_experiment

    def forbidden(*args, **kwargs):
        raise AssertionError("Tune must not start")

    monkeypatch.setattr(tune, "Tuner", forbidden)
    exp = validate_experiment("exp", tiny_spec())
    early = [c for c in exp.pass_criteria if c.metric != ITER_KEY]
    exp = dataclasses.replace(exp, pass_criteria=early)
    with pytest.raises(ExperimentError) as err:
        run_experiment(exp, as_test=True, storage_path=str(tmp_path))
    msg = str(err.value)
    assert msg.startswith(f"pass_criteria.{ITER_KEY}: missing in experiment 'exp'")
    assert f"{ITER_KEY}: {{min: v}} with 1.6 <= v <= 2 (80% to 100% of stop.{ITER_KEY}: 2)" in msg
    assert "\n" not in msg


@pytest.mark.ray
def test_train_with_a_remote_env_runner(tmp_path, ray_session, capsys):
    spec = changed((("checkpoint_config",), DELETE))
    path = write_yaml(tmp_path / "exp.yaml", spec)
    storage = tmp_path / "results"
    argv = [str(path), "--num-env-runners", "1", "--stop", "training_iteration=1"]
    rc, out, err = train([*argv, "--storage-path", str(storage)], capsys)
    assert rc == 0, out + err
    (line,) = progress(out)
    assert int(line["steps"]) == BATCH and line["gap"] != "-"
    trial = trial_dir(storage)
    assert json.loads((trial / "params.json").read_text())["num_env_runners"] == 1
    (result,) = result_lines(trial)
    assert result["env_runners"]["num_env_steps_sampled"] == BATCH
    fair = result["fairness"][NOTION]
    assert finite(fair["bias"])
    assert fair["num_steps"] == BATCH
    for group in ("group_0", "group_1"):
        assert finite(fair["rate"][group]) and fair["demand"][group] > 0


@pytest.mark.ray
def test_grid_search_runs_every_point_and_selects_by_alg_2(tmp_path, ray_session, capsys):
    """A two-value grid runs two trials; selection.json is Alg. 2 over their results."""
    from rllib_fair.cli.results import flatten
    from rllib_fair.cli.sweep import trailing_mean
    from rllib_fair.fairness.selection import select

    spec = changed(
        (("config", "lr"), {"grid_search": [0.001, 0.0003]}),
        (("checkpoint_config",), DELETE),
        (("selection",), {"disparity": BIAS_KEY, "omega": 0.02, "last_iterations": 2}),
    )
    path = write_yaml(tmp_path / "exp.yaml", spec)
    storage = tmp_path / "results"
    rc, out, err = train([str(path), "--storage-path", str(storage)], capsys)
    assert rc == 0, out + err
    trials = sorted(p for p in (storage / "exp").iterdir() if p.is_dir())
    assert len(trials) == 2
    lrs = sorted(json.loads((t / "params.json").read_text())["lr"] for t in trials)
    assert lrs == [0.0003, 0.001]
    selection = json.loads((storage / "exp" / "selection.json").read_text())
    assert selection["disparity_key"] == BIAS_KEY and selection["omega"] == 0.02
    expected = []
    for t in trials:
        rows = [flatten(r) for r in result_lines(t)]
        lr = json.loads((t / "params.json").read_text())["lr"]
        expected.append(
            {
                "lr": lr,
                "disparity": trailing_mean(rows, BIAS_KEY, 2),
                "reward": trailing_mean(rows, RETURN_KEY, 2),
            }
        )
    assert all(e["disparity"] is not None and e["reward"] is not None for e in expected)
    by_lr = {s["params"]["lr"]: s for s in selection["scores"]}
    for e in expected:
        assert by_lr[e["lr"]]["disparity"] == pytest.approx(e["disparity"], rel=1e-12)
        assert by_lr[e["lr"]]["reward"] == pytest.approx(e["reward"], rel=1e-12)
    want = expected[select(expected, 0.02)]["lr"]
    assert selection["selected"]["params"] == {"lr": want}
    assert f"selected (Alg. 2, omega 0.02, {BIAS_KEY}" in out and f"lr={want}" in out


SELECTIVE_EXAMPLES = [
    "ppo/lending_fico-ppo.yaml",
    "pocar/lending_fico-pocar.yaml",
    "pocar/lending_fico-pocar_oracle.yaml",
    "sellf/lending_fico-sellf.yaml",
    "sellf/school_admission-sellf.yaml",
]


@pytest.mark.ray
@pytest.mark.parametrize(
    ("example", "runners"),
    [(e, 1) for e in SELECTIVE_EXAMPLES] + [("sellf/lending_fico-sellf.yaml", 0)],
)
def test_selective_label_examples_train_from_yaml(example, runners, tmp_path, ray_session, capsys):
    """SELLF and its baselines train from their YAML files, locally and remotely."""
    root = Path(__file__).resolve().parents[2] / "tuned_examples"
    storage = tmp_path / "results"
    argv = [
        str(root / example),
        "--num-env-runners",
        str(runners),
        "--stop",
        "training_iteration=1",
        "--config",
        "train_batch_size_per_learner=500",
        "--config",
        "minibatch_size=250",
        "--storage-path",
        str(storage),
    ]
    rc, out, err = train(argv, capsys)
    assert rc == 0, out + err
    (trial,) = [p for p in next(storage.iterdir()).iterdir() if p.is_dir()]
    assert json.loads((trial / "params.json").read_text())["num_env_runners"] == runners
    (result,) = result_lines(trial)
    notion = next(iter(result["fairness"]))
    fair = result["fairness"][notion]
    assert fair["num_steps"] == 500 and finite(fair["bias"])
    assert finite(fair["selective"]["true_disparity_mean"])
    assert finite(result["learners"]["default_policy"]["policy_loss"])
