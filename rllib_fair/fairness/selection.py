"""Selection rules over hyper-parameter configurations, SELLF's Alg. 2 among them.

Each configuration is scored by a disparity and a reward (means over its seeds). Alg. 2
(Valdrighi et al., App. E): ``|Delta|^clip = max(|Delta| - omega, 0)``; among the
configurations whose clipped disparity is minimal (every one within omega, or the least
unfair one when none is), the one with the highest reward. The paper's pseudo-code
scores the non-minimal configurations 0 instead of excluding them, which would pick a
non-minimal one whenever every minimal one has a negative reward; the rule as the text
states it excludes them, and so do we.

Used by the tuned-example sweeps (:mod:`rllib_fair.cli.sweep`, on training metrics) and
by the reproduction plans' grids (:mod:`rllib_fair.reproduce.merge`, on evaluation
metrics).
"""

from __future__ import annotations

DEFAULT_OMEGA = 0.05
#: Selection rules over configurations (scores are means over a configuration's seeds).
RULES = {
    "sellf": "SELLF Alg. 2: highest reward among the minimal max(|Delta| - omega, 0)",
    "max_reward": "highest reward",
    "min_disparity": "lowest |Delta| (ties: highest reward)",
}


def select_by_rule(scores: list[dict], rule: str, omega: float) -> int | None:
    """The index ``rule`` (one of :data:`RULES`) picks among ``scores``, or None."""
    if rule == "sellf":
        return select(scores, omega)
    valid = [
        i
        for i, s in enumerate(scores)
        if s.get("disparity") is not None and s.get("reward") is not None
    ]
    if not valid:
        return None
    if rule == "max_reward":
        return max(valid, key=lambda i: scores[i]["reward"])
    return min(valid, key=lambda i: (abs(scores[i]["disparity"]), -scores[i]["reward"]))


def select(scores: list[dict], omega: float) -> int | None:
    """Alg. 2 over ``[{"disparity": |Delta|, "reward": R}, ...]``; returns the index.

    ``|Delta|^clip = max(|Delta| - omega, 0)``; the highest reward among the entries
    whose clipped disparity is minimal. Entries missing a value cannot be selected; None
    when no entry has both.
    """
    valid = [
        i
        for i, s in enumerate(scores)
        if s.get("disparity") is not None and s.get("reward") is not None
    ]
    if not valid:
        return None
    clipped = {i: max(abs(scores[i]["disparity"]) - omega, 0.0) for i in valid}
    best = min(clipped.values())
    minimal = [i for i in valid if clipped[i] == best]
    return max(minimal, key=lambda i: scores[i]["reward"])
