"""The experiment file's error type and the result keys its blocks may name.

The lowest module of the command line: the modules that check an experiment file
(``experiment`` and the modules it uses, ``sweep`` and ``tuning``) all read it, so none
of them needs another to check a result key or to raise the file's error.
"""

from __future__ import annotations


class ExperimentError(ValueError):
    """A bad experiment file or override; the message is one line."""


def first_line(e: BaseException) -> str:
    """The first line of an exception's message (its type name when it has none)."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


# Old result keys people still write in stop / pass_criteria blocks.
LEGACY_RESULT_KEYS = {
    "episode_reward_mean": "env_runners/episode_return_mean",
    "episode_return_mean": "env_runners/episode_return_mean",
    "timesteps_total": "num_env_steps_sampled_lifetime",
    "time_total_s": "time_total_s",
    "training_iteration": "training_iteration",
}
BUDGET_KEYS = ("training_iteration", "num_env_steps_sampled_lifetime", "time_total_s")
RESULT_PREFIXES = ("env_runners/", "fairness/", "evaluation/", "learners/", "perf/")


def result_key(section: str, key: str) -> str:
    """The result key a stop, pass-criteria or selection block names (old names mapped).

    Raises:
        ExperimentError: one line, for a key that cannot be a result key.
    """
    if not isinstance(key, str):
        raise ExperimentError(f"{section}: key {key!r} is invalid; valid: a result key (a string)")
    key = LEGACY_RESULT_KEYS.get(key, key)
    if key in BUDGET_KEYS or key.startswith(RESULT_PREFIXES):
        return key
    if "/" in key and all(key.split("/")):
        # an algorithm's own namespace (lucbfair/..., uncertainty/...) or a typo:
        # checked against the keys the configured algorithm reports (metric_keys.check_metric_key)
        return key
    valid = ", ".join(sorted(set(LEGACY_RESULT_KEYS.values())))
    raise ExperimentError(
        f"{section}.{key}: unknown result key {key!r}; valid: {valid}, or a key under "
        f"{', '.join(RESULT_PREFIXES)}"
    )
