"""Deployment evaluation of a trained checkpoint (SELLF's protocol, Sec. 5 and App. E).

The trained policy is deployed in a fresh environment for ``steps`` steps (one episode,
ended early only by the environment's own termination) on each of ``seeds`` seeds; per
seed we record the cumulative reward, the mean over time of the true per-step disparity
(|Delta_t| over the last ``window`` decisions, true labels) and the final long-term gap;
the report gives mean +- std over seeds, with each group's long-term rate of the notion
at the end of the deployment.

Which checkpoint: a checkpoint folder as given; a trial folder's newest checkpoint; in a
sweep's experiment folder, the trial its ``selection.json`` chose (the report says which
trial and by which rule), else the newest checkpoint of any trial (the report says so).

Each deployment runs through an RLlib ``SingleAgentEnvRunner`` built from the
checkpoint's config, so observations and actions pass the module's own connectors
(observation preprocessing, action unsquashing and clipping for continuous actions)
exactly as in training. Actions are greedy (the mode of the policy's action
distribution) unless ``explore`` is set, in which case they are sampled as in training,
with randomness seeded by the deployment seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rllib_fair.fairness import Ledger, WindowedDisparity

GREEDY_NOTE = (
    "greedy (the most likely action); training metrics come from sampled actions, so a "
    "policy whose fairness lives in its action probabilities can look less fair here: "
    "pass --explore to deploy it as it was trained"
)
EXPLORE_NOTE = "sampled from the policy as in training (--explore), seeded per deployment"


class DeployError(ValueError):
    """A checkpoint, notion or path that cannot be deployed; the message is one line."""


@dataclass
class DeployResult:
    """One deployment run."""

    seed: int
    steps: int
    cumulative_reward: float
    mean_disparity: float
    final_gap: float
    #: |Delta_t| per step (only with ``deploy_algorithm(..., series=True)``)
    disparity_series: np.ndarray | None = None
    #: long-term rate per pair and group at the end (``{pair: {group: rate}}``; NaN
    #: where undefined, e.g. no qualified applicant of that group was seen)
    rates: dict | None = None


def find_checkpoint(path: str | Path) -> Path:
    """The algorithm checkpoint a path names; see :func:`locate_checkpoint`."""
    return locate_checkpoint(path)[0]


def _checkpoints(folder: Path, pattern: str) -> list[Path]:
    """Checkpoint folders under ``folder``, without those whose write never finished.

    A checkpoint the runner never confirmed (no manifest) and that is not structurally
    whole is what a run killed during the write leaves: it is skipped, never deployed.
    """
    from rllib_fair.cli.storage import check_checkpoint

    return [
        c
        for c in folder.glob(pattern)
        if c.is_dir()
        and (c / "algorithm_state.pkl").exists()
        and check_checkpoint(c).state != "incomplete"
    ]


def _intact(checkpoint: Path) -> Path:
    """The checkpoint itself, or a one-line DeployError naming its damaged file."""
    from rllib_fair.cli.storage import check_checkpoint

    status = check_checkpoint(checkpoint)
    if not status.usable:
        what = "was never completed" if status.state == "incomplete" else "is corrupted"
        raise DeployError(
            f"CHECKPOINT: {str(checkpoint)!r} {what}: {status.problem}; valid: an intact "
            "checkpoint (pass an older checkpoint_* folder of the same trial)"
        )
    return checkpoint


def _newest(found: list[Path]) -> Path:
    return max(found, key=lambda c: (c.stat().st_mtime, c.name))


def locate_checkpoint(path: str | Path) -> tuple[Path, str]:
    """The algorithm checkpoint a path names (checked intact), and why that one.

    See :func:`_locate`; the checkpoint chosen is then checked against the manifest
    the runner wrote with it (or, without one, for whole files).

    Raises:
        DeployError: one line naming the path (or the damaged file) and what was expected.
    """
    checkpoint, why = _locate(path)
    return _intact(checkpoint), why


def _locate(path: str | Path) -> tuple[Path, str]:
    """The algorithm checkpoint a path names, and why that one (one line).

    Accepts a checkpoint folder, a trial folder (its newest ``checkpoint_*``) or an
    experiment folder: for a sweep with a ``selection.json`` the newest checkpoint of
    the trial the selection rule chose, otherwise the newest checkpoint of any trial.
    Relative paths are resolved against the current directory.

    Raises:
        DeployError: one line naming the path and what was expected.
    """
    p = Path(path).expanduser().resolve()
    if not p.is_dir():
        raise DeployError(f"CHECKPOINT: {str(path)!r} is not a folder")
    if (p / "algorithm_state.pkl").exists() or (p / "rllib_checkpoint.json").exists():
        return p, "the checkpoint folder given"
    own = _checkpoints(p, "checkpoint_*")
    if own:
        return _newest(own), f"the newest of {len(own)} checkpoint(s) of trial {p.name}"
    selection = p / "selection.json"
    if selection.is_file():
        return _selected_checkpoint(p, selection)
    found = _checkpoints(p, "*/checkpoint_*")
    if not found:
        raise DeployError(
            f"CHECKPOINT: no algorithm checkpoint in or under {str(path)!r}; valid: a "
            "checkpoint folder, a trial folder with checkpoint_* folders, or an experiment "
            "folder (run with checkpoint_config: {checkpoint_at_end: true})"
        )
    chosen = _newest(found)
    trials = sorted({c.parent.name for c in found})
    why = f"the newest checkpoint of trial {chosen.parent.name}"
    if len(trials) > 1:
        why += (
            f", the most recently written of {len(trials)} trials (no selection.json); pass "
            "a trial folder to deploy another"
        )
    return chosen, why


def _selected_checkpoint(experiment: Path, selection: Path) -> tuple[Path, str]:
    """The newest checkpoint of the trial ``selection.json`` chose, and why."""
    import json

    try:
        data = json.loads(selection.read_text())
        chosen = data.get("selected")
    except (OSError, ValueError, AttributeError) as e:
        raise DeployError(f"CHECKPOINT: {str(selection)!r} cannot be read ({e})") from e
    trials = sorted(c.parent.name for c in _checkpoints(experiment, "*/checkpoint_*"))
    valid = ", ".join(sorted(set(trials))) or "none with checkpoints"
    if not isinstance(chosen, dict) or not chosen.get("trial"):
        raise DeployError(
            f"CHECKPOINT: {str(selection)!r} selected no trial (none reported both "
            f"{data.get('disparity_key')} and {data.get('reward_key')}); pass one trial "
            f"folder of {str(experiment)!r}: {valid}"
        )
    trial = experiment / str(chosen["trial"])
    found = _checkpoints(trial, "checkpoint_*") if trial.is_dir() else []
    if not found:
        raise DeployError(
            f"CHECKPOINT: the trial selection.json chose, {chosen['trial']!r}, has no "
            f"checkpoint under {str(experiment)!r}; valid trial folders: {valid}"
        )

    def num(key: str, spec: str) -> str:
        v = chosen.get(key)
        return "-" if not isinstance(v, (int, float)) else format(v, spec)

    params = ", ".join(f"{k}={v}" for k, v in (chosen.get("params") or {}).items())
    why = (
        f"trial {trial.name} ({params or 'no swept values'}), chosen in selection.json by "
        f"{data.get('rule')}: {data.get('disparity_key')} {num('disparity', '.4f')}, "
        f"{data.get('reward_key')} {num('reward', '.3f')} (mean of the last "
        f"{data.get('last_iterations')} iterations)"
    )
    return _newest(found), why


def deploy(
    checkpoint: str,
    *,
    steps: int = 10_000,
    seeds: int = 10,
    window: int | None = None,
    notion: str | None = None,
    explore: bool = False,
) -> tuple[list[DeployResult], dict]:
    """Deploys the checkpoint's policy; returns the runs and a mean +- std summary."""
    from ray.rllib.algorithms.algorithm import Algorithm

    from rllib_fair.rllib.logdir import remove_empty_logdir

    algo = Algorithm.from_checkpoint(str(find_checkpoint(checkpoint)))
    try:
        return deploy_algorithm(
            algo, steps=steps, seeds=seeds, window=window, notion=notion, explore=explore
        )
    finally:
        algo.stop()
        remove_empty_logdir(algo)  # the folder Ray made in ~/ray_results for it


def check_notion(env_id: str, notion: str) -> None:
    """Raises DeployError if the env cannot measure ``notion``."""
    from rllib_fair.envs import env_meta

    meta = env_meta(env_id)
    if meta is not None and notion not in meta["supported_notions"]:
        raise DeployError(
            f"--notion: {notion!r} cannot be measured on {env_id!r}; valid choices: "
            f"{', '.join(meta['supported_notions'])}"
        )


def deploy_algorithm(
    algo,
    *,
    steps: int = 10_000,
    seeds: int = 10,
    window: int | None = None,
    notion: str | None = None,
    explore: bool = False,
    series: bool = False,
) -> tuple[list[DeployResult], dict]:
    """Deploys a built (trained or restored) algorithm's policy; see :func:`deploy`.

    With ``series`` every :class:`DeployResult` also carries the per-step disparity
    (the curve the SELLF paper plots over deployment time).
    """
    cfg = algo.config
    notion = notion or cfg.resolved_fairness_notion()
    check_notion(cfg.env, notion)
    window = window if window is not None else getattr(cfg, "fairness_disparity_window", None)
    weights = algo.learner_group.get_state(components=["learner/rl_module"], inference_only=True)[
        "learner"
    ]["rl_module"]
    from rllib_fair.envs import env_meta

    meta = env_meta(cfg.env)
    group_names = list(meta["group_names"]) if meta is not None else None
    runs = []
    for seed in range(seeds):
        runner = _deployment_runner(cfg, seed=seed, steps=steps)
        try:
            runner.set_state({"rl_module": weights})
            (episode,) = runner.sample(num_episodes=1, explore=explore, force_reset=True)[:1]
        finally:
            runner.stop()
        infos = episode.get_infos()[1:]
        if not infos or "fairness" not in infos[0]:
            raise DeployError(
                f"CHECKPOINT: env {cfg.env!r} puts no 'fairness' counts into info; nothing "
                "to measure"
            )
        n_groups = infos[0]["fairness"].shape[-1]
        if group_names is not None and len(group_names) != n_groups:
            group_names = None
        ledger = Ledger(notion, n_groups)
        disparity = WindowedDisparity(notion, n_groups, window=window)
        gaps = []
        for info in infos:
            ledger.update(info["fairness"])
            gaps.append(disparity.update(info["fairness"]))
        total = float(np.sum(episode.get_rewards()))
        rates = {
            pair: {g: (v["rate"] if v["defined"] else math.nan) for g, v in groups.items()}
            for pair, groups in ledger.by_group(group_names).items()
        }
        runs.append(
            DeployResult(
                seed,
                len(episode),
                total,
                float(np.mean(gaps)),
                ledger.bias(),
                np.asarray(gaps, dtype=np.float64) if series else None,
                rates,
            )
        )
    summary = {}
    for key in ("cumulative_reward", "mean_disparity", "final_gap", "steps"):
        values = np.array([getattr(r, key) for r in runs], dtype=np.float64)
        summary[key] = {"mean": float(values.mean()), "std": float(values.std())}
    summary["rates"] = {
        pair: {g: _mean_std([r.rates[pair][g] for r in runs]) for g in runs[0].rates[pair]}
        for pair in (runs[0].rates if runs else {})
    }
    summary["notion"] = notion
    summary["window"] = window
    summary["seeds"] = seeds
    summary["actions"] = "sampled" if explore else "greedy"
    return runs, summary


def _mean_std(values: list[float]) -> dict:
    """Mean and std over the seeds where the value is defined (``n``: how many)."""
    v = np.array([x for x in values if math.isfinite(x)], dtype=np.float64)
    if not len(v):
        return {"mean": math.nan, "std": math.nan, "n": 0}
    return {"mean": float(v.mean()), "std": float(v.std()), "n": int(len(v))}


def _deployment_runner(cfg, *, seed: int, steps: int):
    """A local env runner of the checkpoint's config: one env, ``steps`` long, seeded."""
    from ray.rllib.callbacks.callbacks import RLlibCallback
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    c = cfg.copy(copy_frozen=False)
    env_config = dict(c.env_config or {})
    env_config["max_steps"] = steps
    c.environment(env_config=env_config)
    c.env_runners(num_env_runners=0, num_envs_per_env_runner=1)
    c.debugging(seed=seed)
    # Deployment measures with true labels and needs no training-time callbacks (they
    # would remove the labels of rejected applicants from the infos).
    c.callbacks_class = RLlibCallback
    return SingleAgentEnvRunner(config=c)


def format_summary(summary: dict) -> str:
    """The report printed by ``rllib-fair evaluate``."""

    def pm(key: str) -> str:
        m, s = summary[key]["mean"], summary[key]["std"]
        return f"{m:.4f} +- {s:.4f}" if math.isfinite(m) else "-"

    note = EXPLORE_NOTE if summary.get("actions") == "sampled" else GREEDY_NOTE
    rates = []
    for pair, groups in (summary.get("rates") or {}).items():
        parts = []
        for g, v in groups.items():
            if v["n"] == 0:
                parts.append(f"{g} undefined")
                continue
            text = f"{g} {v['mean']:.4f} +- {v['std']:.4f}"
            if v["n"] < summary["seeds"]:
                text += f" (defined on {v['n']} of {summary['seeds']} seeds)"
            parts.append(text)
        rates.append(f"  rates per group ({pair}): {', '.join(parts)}")
    return "\n".join(
        [
            f"deployment over {summary['seeds']} seeds ({summary['notion']}, window "
            f"{summary['window']}):",
            f"  actions: {note}",
            f"  cumulative reward      {pm('cumulative_reward')}",
            f"  mean true disparity    {pm('mean_disparity')}",
            f"  final long-term gap    {pm('final_gap')}",
            f"  steps                  {pm('steps')}",
            *rates,
            f"  (rates: each group's long-term {summary['notion']} rate at the end of the "
            "deployment; the gap is max - min over groups)",
        ]
    )
