"""The Ray-version gate of the speed layer.

The speed layer (:mod:`rllib_fair.accel`) re-implements parts of RLlib's sampling and
update loops and reads RLlib's private attributes, which any Ray release may change. It
runs only on the Ray versions its bit-identity tests ran on (:data:`TESTED_RAY_VERSIONS`);
on any other version RLlib's own path runs, and the process logs one line saying so
(once per process: the driver, each env runner, each learner).
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

#: ``major.minor`` of the Ray releases the speed layer is tested on (every patch release
#: of one of them counts). Add a version here only after ``tests/rllib/test_env_runner.py``,
#: ``tests/rllib/test_lean.py``, ``tests/rllib/test_lean_learner.py`` and
#: ``tests/algorithms/test_td3.py`` passed on it.
TESTED_RAY_VERSIONS: tuple[str, ...] = ("2.60",)

_logged_untested = False


def ray_version() -> str:
    """The installed Ray's version string (``ray.__version__``)."""
    import ray

    return str(ray.__version__)


def version_tested(version: str | None = None) -> bool:
    """Whether ``version`` (default: the installed Ray's) is one the layer is tested on."""
    version = ray_version() if version is None else version
    minor = ".".join(version.split(".")[:2])
    return minor in TESTED_RAY_VERSIONS


def accel_active(config) -> bool:
    """Whether the speed layer runs for ``config``: its ``use_accel`` and a tested Ray.

    Where ``use_accel`` is True and the installed Ray is not a tested one, logs (once per
    process) that RLlib's own path runs instead, and returns False.
    """
    if not getattr(config, "use_accel", False):
        return False
    if version_tested():
        return True
    _log_untested()
    return False


def _log_untested() -> None:
    global _logged_untested
    if _logged_untested:
        return
    _logged_untested = True
    logger.warning(
        "rllib-fair: the speed layer (rllib_fair.accel) is tested on Ray %s only; "
        "Ray %s runs RLlib's own sampling and update path instead (same results, slower)",
        ", ".join(f"{v}.x" for v in TESTED_RAY_VERSIONS),
        ray_version(),
    )
