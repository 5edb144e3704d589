"""Shared fixtures: one local Ray instance per session, one torch thread."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    try:
        import torch
    except ImportError:  # the fairness and env tiers do not need torch
        return
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def ray_session():
    """A private local Ray instance (never attaches to a running cluster)."""
    import ray

    if not ray.is_initialized():
        ray.init(
            address="local",
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="ERROR",
        )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def ray_session_gpu(ray_session):
    """The session's Ray instance, for tests that need a CUDA device (skipped without)."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return ray_session
