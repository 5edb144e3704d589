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
with randomness seeded by the deployment seed. The deployment itself lives in
:mod:`rllib_fair.rllib.deployment` (the reproduction plans' ``deployment`` evaluator runs
it too); this module finds the checkpoint and formats the report.
"""

from __future__ import annotations

import math
from pathlib import Path

from rllib_fair.rllib.deployment import DeployError, DeployResult, deploy_algorithm

__all__ = [
    "DeployError",
    "DeployResult",
    "deploy",
    "deploy_algorithm",
    "format_summary",
    "locate_checkpoint",
]

GREEDY_NOTE = (
    "greedy (the most likely action); training metrics come from sampled actions, so a "
    "policy whose fairness lives in its action probabilities can look less fair here: "
    "pass --explore to deploy it as it was trained"
)
EXPLORE_NOTE = "sampled from the policy as in training (--explore), seeded per deployment"


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
            f"  mean observed disparity {pm('mean_observed_disparity')} "
            f"({summary['observed_source']}: what the algorithm sees)",
            f"  final long-term gap    {pm('final_gap')}",
            f"  steps                  {pm('steps')}",
            *rates,
            f"  (rates: each group's long-term {summary['notion']} rate at the end of the "
            "deployment; the gap is max - min over groups)",
        ]
    )
