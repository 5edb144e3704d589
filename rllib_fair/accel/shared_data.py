"""RLlib's private connector ``shared_data`` keys that the package reads: one place.

A learner connector pipeline passes one ``shared_data`` dict from piece to piece. RLlib
2.60's ``AddOneTsToEpisodesAndTruncate`` (the piece in front of GAE) marks in it that it
appended one artificial bootstrap step to every episode chunk, under a private key. The
fairness and qualification columns need that fact on every Ray version (not only where
the speed layer runs), so this module is not behind :func:`~rllib_fair.accel.gate.accel_active`;
it is the one place to change when a Ray release renames the key
(``tests/rllib/test_connectors_bootstrap_key.py`` checks that RLlib still sets it).
"""

from __future__ import annotations

#: Set to True by ``AddOneTsToEpisodesAndTruncate`` once it padded the chunks (Ray 2.60).
BOOTSTRAP_STEP_KEY = "_added_loss_mask_for_valid_episode_ts"


def bootstrap_step_added(shared_data: dict | None) -> bool:
    """Whether the last step of every episode chunk is RLlib's artificial bootstrap step."""
    return bool((shared_data or {}).get(BOOTSTRAP_STEP_KEY))
