"""The empty folder Ray makes in ``~/ray_results`` for an Algorithm built outside Tune.

Ray's ``Trainable`` gives every Algorithm built without Tune (``config.build_algo()``,
``Algorithm.from_checkpoint(...)``) a fresh ``~/ray_results/<date><random>`` folder,
which the new API stack never writes to. These helpers remove it once the algorithm is
stopped, if it is still empty; a folder that holds anything is kept.
"""

from __future__ import annotations

from pathlib import Path


def remove_empty_logdir(algo) -> None:
    """Removes ``algo``'s log folder if it lies directly in ``~/ray_results`` and is empty."""
    from ray.train.constants import DEFAULT_STORAGE_PATH

    logdir = getattr(algo, "logdir", None)
    if not logdir:
        return
    folder = Path(logdir)
    try:
        if folder.parent.resolve() == Path(DEFAULT_STORAGE_PATH).resolve() and not any(
            folder.iterdir()
        ):
            folder.rmdir()
    except OSError:
        pass  # already gone, or written to meanwhile


def tidy_logdir_on_stop(algo) -> None:
    """Makes ``algo.stop()`` also call :func:`remove_empty_logdir` (this instance only)."""
    stop = algo.stop

    def stop_and_tidy(*args, **kwargs):
        try:
            return stop(*args, **kwargs)
        finally:
            remove_empty_logdir(algo)

    algo.stop = stop_and_tidy
