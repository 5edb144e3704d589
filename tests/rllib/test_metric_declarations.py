"""Fairness metrics by declaration: the callback runs what envs and configs declare.

No Ray instance is started: a real MetricsLogger and hand-built episodes are used.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

import rllib_fair  # noqa: F401  (registers the envs)
from rllib_fair.algorithms import ALGORITHMS, get_config_class
from rllib_fair.envs import ENTRY_POINTS, FairEnvMixin, env_class, env_class_of
from rllib_fair.fairness.blocks import Annotator, LabelHiding, MetricBlock
from rllib_fair.fairness.counts import DECIDED, NUM_FIELDS, SELECTED
from rllib_fair.rllib import callbacks
from rllib_fair.rllib.callbacks import FairnessMetricsCallback

CALLBACKS_SOURCE = Path(callbacks.__file__).read_text()


def _forbidden_names() -> set[str]:
    """Every registered env (class, module, id name) and algorithm (names, classes, module)."""
    names: set[str] = set()
    for env_id, entry in ENTRY_POINTS.items():
        module, _, cls = entry.partition(":")
        names |= {cls, module.rsplit(".", 1)[1], env_id.split("/", 1)[1].split("-v")[0]}
    for spec in ALGORITHMS.values():
        names |= {spec.name, spec.algo_class, spec.config_class}
        names |= set(spec.module.split(".")[2:])  # rllib_fair.algorithms.<folder>.<module>
    return names


def _mentions(source: str, names: set[str]) -> list[str]:
    """The names written in ``source`` as whole words (any case)."""
    word = r"(?<![A-Za-z0-9_]){}(?![A-Za-z0-9_])"
    return sorted(n for n in names if re.search(word.format(re.escape(n)), source, re.I))


def test_callbacks_name_no_env_and_no_algorithm():
    names = _forbidden_names()
    assert {"LendingDriftEnv", "replicator", "quarterly_lending", "SELLF", "ppoc"} <= names
    # the scan finds a name where one is written ...
    assert _mentions("from rllib_fair.envs.lending_drift import LendingDriftEnv", names) == [
        "LendingDriftEnv",
        "lending_drift",
    ]
    assert "SELLF" in _mentions("if config.run == 'SELLF': ...", names)
    # ... and callbacks.py writes none, nor reads an algorithm's flags
    assert _mentions(CALLBACKS_SOURCE, names) == []
    assert "needs_" not in CALLBACKS_SOURCE
    assert "rllib_fair.algorithms" not in CALLBACKS_SOURCE


# ------------------------------------------------------------------ a new env and block


class AcceptRateBlock(MetricBlock):
    """The share of accepted individuals and an episode-length mean (a custom block)."""

    raw_key = "accept_raw"

    def observe(self, chunk, ctx, carry, sink):
        steps = chunk.steps
        sink.add((self.raw_key, "steps"), len(steps["decision"]))
        sink.add((self.raw_key, "accepted"), int((steps["decision"] == 1).sum()))
        length = (carry or 0) + len(steps["decision"])
        if chunk.done:
            sink.log_mean(("accept", "episode_length"), float(length))
            return None
        return length

    def summarize(self, raw, out, ctx):
        out["accept"] = {"rate": raw["accepted"] / raw["steps"], "groups": list(ctx.groups(-1))}


class DropSecret(LabelHiding):
    """Removes ``info["secret"]`` (what this env's decision-maker never observes)."""

    def hide_info(self, info):
        return 1 if info.pop("secret", None) is not None else 0


class CoinFairEnv(FairEnvMixin, gym.Env):
    """One individual per step, group and label from the env's generator, 6 steps."""

    GROUP_NAMES: ClassVar[tuple[str, ...]] = ("heads", "tails")
    METRIC_BLOCKS: ClassVar[tuple] = (*FairEnvMixin.METRIC_BLOCKS, AcceptRateBlock())
    LABEL_HIDING: ClassVar[LabelHiding] = DropSecret()

    def __init__(self, max_steps: int = 6):
        self.observation_space = spaces.Box(0.0, 1.0, (2,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.max_steps = max_steps

    def _show(self):
        self._group = int(self.np_random.integers(2))
        self._label = int(self.np_random.integers(2))
        return np.array([self._group, 0.5], np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        counts = np.zeros((NUM_FIELDS, 2))
        return self._show(), {"fairness": counts, "group": -1, "label": -1, "decision": -1}

    def step(self, action):
        counts = np.zeros((NUM_FIELDS, 2))
        counts[DECIDED, self._group] = 1.0
        counts[SELECTED, self._group] = float(action)
        info = self._decision_info(counts, self._group, self._label, int(action))
        info["secret"] = self._label
        self._t += 1
        return self._show(), float(action), False, self._t >= self.max_steps, info


def _episode(seed: int, actions) -> SingleAgentEpisode:
    env = CoinFairEnv()
    obs, info = env.reset(seed=seed)
    ep = SingleAgentEpisode(observations=[obs], infos=[info], len_lookback_buffer=0)
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        ep.add_env_step(obs, a, r, infos=info, terminated=term, truncated=trunc)
    return ep


def _config(**fairness):
    cfg = get_config_class("PPO")().environment(CoinFairEnv)
    return cfg.fairness(notion="demographic_parity", **fairness)


def test_env_class_of_resolves_classes_registered_and_gymnasium_ids():
    assert env_class_of(CoinFairEnv) is CoinFairEnv
    assert env_class_of("fair/LendingDrift-v0") is env_class("fair/LendingDrift-v0")
    gym.register("test/CoinFair-v0", entry_point=CoinFairEnv)
    try:
        assert env_class_of("test/CoinFair-v0") is CoinFairEnv
    finally:
        gym.registry.pop("test/CoinFair-v0")
    assert env_class_of("no/Such-v0") is None and env_class_of(None) is None


def test_a_new_env_declaring_a_block_gets_its_metric_reported():
    cfg = _config()
    runner = SimpleNamespace(config=cfg)
    done = _episode(1, [1, 0, 1, 1, 0, 1])  # 4 of 6 accepted, finished
    running = _episode(2, [0, 0, 1])  # 1 of 3, still running
    assert done.is_done and not running.is_done
    ml = MetricsLogger()
    cb = FairnessMetricsCallback()
    cb.on_sample_end(
        env_runner=runner, metrics_logger=ml, samples=[done, running.slice(slice(0, 2))]
    )
    cb.on_sample_end(env_runner=runner, metrics_logger=ml, samples=[running.slice(slice(2, 3))])
    assert ml.peek(("accept", "episode_length")) == 6.0  # one finished episode
    result = {"env_runners": {"accept_raw": ml.peek("accept_raw")}}
    cb.on_evaluate_end(algorithm=SimpleNamespace(config=cfg), evaluation_metrics=result)
    assert result["fairness"]["accept"] == {"rate": 5 / 9, "groups": ["heads", "tails"]}
    assert "accept_raw" not in result["env_runners"]
    # the default block of FairEnvMixin still reports the notion, with the env's group names
    supply = ml.peek(("fairness_raw", "demographic_parity", "supply", "selection_rate"))
    assert set(supply) == {"heads", "tails"}
    # the running episode's length is carried (by the block and the notion's Delta_t)
    assert {k[0] for k in cb._carries} == {running.id_}


@pytest.mark.parametrize("access", ["observed", "oracle"])
def test_the_env_declares_how_its_unobserved_labels_are_hidden(access):
    ep = _episode(3, [1, 0, 1])
    cb = FairnessMetricsCallback()
    cb.on_sample_end(
        env_runner=SimpleNamespace(config=_config(label_access=access)),
        metrics_logger=MetricsLogger(),
        samples=[ep],
    )
    secrets = ["secret" in info for info in ep.get_infos()[1:]]
    assert secrets == ([False] * 3 if access == "observed" else [True] * 3)


# ------------------------------------------------------------------ config annotators


class StepIndex(Annotator):
    """Writes each step's index within its episode (carried across chunks)."""

    def annotate(self, chunk, ctx, carry):
        start = carry or 0
        for t, info in enumerate(chunk.infos[1:]):
            info["step_index"] = start + t
        return start + len(chunk.infos) - 1


class IndexedPPOConfig(get_config_class("PPO")):
    ENV_RUNNER_ANNOTATORS = (StepIndex(),)


def test_declared_annotators_run_on_every_chunk_even_without_metrics():
    cfg = IndexedPPOConfig().environment(CoinFairEnv).fairness(notion="demographic_parity")
    cfg.fairness(metrics=False)
    assert FairnessMetricsCallback in cfg.callbacks_class  # an annotator needs the callback
    assert cfg.declares_annotator(StepIndex) and not cfg.needs_step_disparity
    ep = _episode(4, [1, 1, 0, 0, 1, 1])
    ml = MetricsLogger()
    cb = FairnessMetricsCallback()
    for lo, hi in [(0, 4), (4, 6)]:
        cb.on_sample_end(
            env_runner=SimpleNamespace(config=cfg),
            metrics_logger=ml,
            samples=[ep.slice(slice(lo, hi))],
        )
    assert [info["step_index"] for info in ep.get_infos()[1:]] == list(range(6))
    assert "fairness_raw" not in ml.peek() and "accept" not in ml.peek()  # no block ran
    assert not cb._carries  # the episode finished


def test_algorithms_declare_annotators_not_flags():
    from rllib_fair.rllib.annotators import StepDisparity

    for name in ("POCAR", "RPPO", "SELLF", "FPPOL"):
        assert get_config_class(name)().declares_annotator(StepDisparity), name
    for name in ("PPO", "PPOC", "ELBERTPO"):
        assert not get_config_class(name)().needs_step_disparity, name
