"""Where a run's actors are and how healthy its env runners are, for every result.

:func:`placement` reports the Ray node of every remote env runner and learner (a count
per node id under ``result["placement"]``), so a user, or a test, can check that work
went where the cluster configuration said. :func:`fault_summary` turns RLlib's
fault-tolerance counters into the numbers the runner prints: healthy runners,
restarts, env-step failures and the in-progress episodes lost with failed runners.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

PLACEMENT = "placement"


def _node_id(_actor=None) -> str:
    import ray

    return ray.get_runtime_context().get_node_id()


def placement(algorithm) -> dict[str, dict[str, int]]:
    """``{"env_runner_nodes": {node id: n}, "learner_nodes": {...}}`` of remote actors."""
    out: dict[str, dict[str, int]] = {}
    group = getattr(algorithm, "env_runner_group", None)
    if group is not None and group.num_remote_env_runners() > 0:
        ids = group.foreach_env_runner(
            _node_id, local_env_runner=False, healthy_only=True, timeout_seconds=10
        )
        out["env_runner_nodes"] = dict(Counter(i for i in ids if isinstance(i, str)))
    learners = getattr(algorithm, "learner_group", None)
    if learners is not None and not learners.is_local:
        ids = [r.get() if hasattr(r, "get") else r for r in learners.foreach_learner(_node_id)]
        out["learner_nodes"] = dict(Counter(i for i in ids if isinstance(i, str)))
    return out


def fault_summary(flat: dict[str, Any], num_env_runners: int, envs_per_runner: int) -> dict:
    """Fault-tolerance numbers of one flattened result.

    Returns:
        ``healthy`` and ``total`` remote env runners, ``restarts`` (RLlib restarted a
        failed runner), ``failures`` (restarts plus runners still down), ``step_failures``
        (env steps that raised, counted by the runners: with
        ``restart_failed_sub_environments`` the env is rebuilt in place) and
        ``episodes_lost`` (episodes in progress on a runner when it failed: one per
        sub-environment and failure).
    """

    def num(key: str) -> int:
        v = flat.get(key)
        try:
            return int(v) if v is not None and v == v else 0
        except (TypeError, ValueError):
            return 0

    healthy = num("fault_tolerance/num_healthy_workers") if num_env_runners else 0
    restarts = num("fault_tolerance/num_remote_worker_restarts")
    down = max(num_env_runners - healthy, 0) if num_env_runners else 0
    failures = restarts + down
    return {
        "healthy": healthy,
        "total": num_env_runners,
        "restarts": restarts,
        "failures": failures,
        "step_failures": num("env_runners/num_env_step_failures"),
        "episodes_lost": failures * max(envs_per_runner, 1),
    }
