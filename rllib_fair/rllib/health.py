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


# ---------------------------------------------------------------------------- env errors
# The lines travel through Ray's key-value store (rllib_fair.accel.internal_kv).


def report_env_error(env_runner, error: BaseException, what: str, steps: int) -> str:
    """Records one env error as one line the driver prints; returns that line."""
    import time

    config = getattr(env_runner, "config", None)
    env_id = getattr(config, "env", "?")
    index = getattr(env_runner, "worker_index", "?")
    text = " ".join(str(error).split()) or type(error).__name__
    line = (
        f"env runner {index} ({env_id}): {type(error).__name__}: {text[:300]} "
        f"(in env.{what}, after {steps} env steps on this runner)"
    )
    trial = getattr(env_runner, "tune_trial_id", None) or "no-trial"
    try:
        from rllib_fair.accel import internal_kv

        internal_kv.put(f"env_error/{trial}/{index}/{time.time_ns()}", line.encode())
    except Exception:  # (reporting must never mask the env's own error)
        pass
    return line


def guard_env(env_runner, env) -> None:
    """Makes ``env.step`` / ``env.reset`` report an exception before it propagates.

    RLlib then fails (and restarts) the runner as usual; the report lets the driver
    print one line naming the env, the runner, the error and the step.
    """
    if getattr(env, "_rllib_fair_guarded", False):
        return
    step, reset = env.step, env.reset
    count = [0]

    def guarded_step(actions):
        try:
            out = step(actions)
        except Exception as e:
            report_env_error(env_runner, e, "step", count[0])
            raise
        count[0] += 1
        return out

    def guarded_reset(*args, **kwargs):
        try:
            return reset(*args, **kwargs)
        except Exception as e:
            report_env_error(env_runner, e, "reset", count[0])
            raise

    env.step, env.reset = guarded_step, guarded_reset
    env._rllib_fair_guarded = True


def drain_env_errors(trial_id: str) -> list[str]:
    """The env-error lines reported for a trial since the last call (oldest first).

    RLlib 2.60 creates the env runners of a Tune trial before the trial id is known to
    the algorithm (they see ``"default"``), so lines from runners without a trial id
    are returned to whichever trial asks first.
    """
    try:
        from rllib_fair.accel import internal_kv

        found = internal_kv.pop_prefix(
            [f"env_error/{owner}/" for owner in (trial_id, "default", "no-trial")]
        )
        found.sort(key=lambda item: int(item[0].rsplit("/", 1)[-1]))
        return [value.decode() for _, value in found]
    except Exception:  # (a missing internal API only loses the extra detail)
        return []
