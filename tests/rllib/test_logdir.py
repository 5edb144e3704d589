"""An Algorithm built outside Tune leaves no empty folder in ~/ray_results."""

from __future__ import annotations

import pytest
import torch

from rllib_fair.algorithms import get_config_class

torch.set_num_threads(1)


@pytest.mark.ray
def test_build_algo_then_stop_leaves_no_empty_folder(ray_session, tmp_path, monkeypatch):
    import ray.train.constants
    import ray.tune.trainable.trainable

    ray_results = tmp_path / "ray_results"
    for module in (ray.train.constants, ray.tune.trainable.trainable):
        monkeypatch.setattr(module, "DEFAULT_STORAGE_PATH", str(ray_results))
    cfg = (
        get_config_class("PPO")()
        .environment("fair/Lending-v0", env_config={"max_steps": 50})
        .env_runners(num_env_runners=0)
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    algo = cfg.build_algo()
    made = [p for p in ray_results.iterdir()]
    assert len(made) == 1 and made[0].is_dir()  # Ray's folder exists while it runs
    kept = ray_results / "kept"
    kept.mkdir()
    (kept / "note.txt").write_text("not empty\n")
    algo.stop()
    assert [p.name for p in ray_results.iterdir()] == ["kept"]  # only Ray's empty one went
