"""The ``fair/*`` ids as RLlib env names: the same names on remote env runners and in Tune.

A gymnasium id exists only in the processes that registered it, and Ray's remote env
runners and Tune trial actors never import this package on their own, so stock RLlib
(``PPOConfig().environment("fair/Lending-v0")`` with ``num_env_runners >= 1``, or
``tune.Tuner("PPO", ...)``) could not find the ids there. RLlib resolves an env name
through Tune's registry first (``ray.tune.registry.register_env``), which lives in the
Ray cluster's key-value store and so is shared by every process of a job. This module
registers one :class:`FairEnvCreator` per id there. A creator is pickled by reference,
so a worker that loads one imports ``rllib_fair``, which registers the gymnasium ids in
that process too.

When the registration happens (``import rllib_fair`` must not import ray):

* if ``ray.tune.registry`` is already imported, at once;
* otherwise a one-shot import hook (:class:`_AfterImport` on ``sys.meta_path``) registers
  right after ``ray.tune.registry`` is first imported (RLlib imports it with any
  algorithm or env runner);
* and again after every ``ray.init`` (Ray's own post-init hooks, the mechanism the Tune
  registry uses to flush values registered before ``ray.init``): a new local Ray
  instance starts with an empty store, so ``ray.shutdown()`` then ``ray.init()`` in one
  process keeps the names.

A name someone already registered in Tune's registry is kept (never overwritten).

RLlib registers every env it builds from a Tune name under one private gymnasium id
(``rllib-single-agent-env-v0``) again for each env runner, so gymnasium warns "Overriding
environment rllib-single-agent-env-v0 already in registry" from the second runner of a
process on. That warning says nothing about the user's set-up, so loading a creator from
the registry (which RLlib does right before) adds a filter that ignores exactly it
(:data:`RLLIB_REREGISTER_WARNING`; re-added each time, as test runners reset filters).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import threading
import warnings
from typing import Any

from rllib_fair.envs import ENTRY_POINTS, ENV_IDS, VECTOR_ENTRY_POINTS, env_class

#: The module whose import triggers the registration.
TUNE_REGISTRY_MODULE = "ray.tune.registry"

#: The gymnasium warning ignored once the names are registered (regular expression).
RLLIB_REREGISTER_WARNING = r".*Overriding environment rllib-single-agent-env-v0 already in registry"

_lock = threading.RLock()
_state = {"hook_installed": False, "post_init_added": False}


class FairEnvCreator:
    """Builds the env of one ``fair/*`` id from an RLlib env context.

    RLlib calls the creator with its ``EnvContext`` (a dict of ``env_config`` items):
    the items are passed as constructor keyword arguments, as
    ``gymnasium.make(env_id, **env_config)`` passes them. When the context holds
    ``num_envs`` (RLlib asks for a vector env: ``gym_env_vectorize_mode=
    "vector_entry_point"``), the env's native vector class of
    :data:`rllib_fair.envs.VECTOR_ENTRY_POINTS` is built with ``num_envs`` copies.

    The single env is returned unwrapped: RLlib makes it through ``gymnasium.make`` on
    its own id, which adds gymnasium's standard wrappers (as for the plain id).
    """

    def __init__(self, env_id: str):
        if env_id not in ENTRY_POINTS:
            raise ValueError(f"env_id={env_id!r}: unknown, expected one of {list(ENV_IDS)}")
        self.env_id = env_id

    def __call__(self, env_ctx: Any = None):
        """The env (or, with ``num_envs`` in ``env_ctx``, its native vector version)."""
        kwargs = dict(env_ctx or {})
        if "num_envs" not in kwargs:
            return env_class(self.env_id)(**kwargs)
        num_envs = kwargs.pop("num_envs")
        if self.env_id not in VECTOR_ENTRY_POINTS:
            raise ValueError(
                f"gym_env_vectorize_mode='vector_entry_point': {self.env_id} has no native "
                f"vector version (only {sorted(VECTOR_ENTRY_POINTS)} have one); "
                "valid for it: 'sync' or 'async'"
            )
        module_name, _, class_name = VECTOR_ENTRY_POINTS[self.env_id].partition(":")
        cls = getattr(importlib.import_module(module_name), class_name)
        return cls(num_envs=num_envs, **kwargs)

    def __setstate__(self, state: dict) -> None:
        # unpickled by RLlib's make_env just before it re-registers its private id
        self.__dict__.update(state)
        warnings.filterwarnings("ignore", message=RLLIB_REREGISTER_WARNING, category=UserWarning)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.env_id == self.env_id

    def __hash__(self) -> int:
        return hash((type(self), self.env_id))

    def __repr__(self) -> str:
        return f"FairEnvCreator({self.env_id!r})"


def register_rllib_envs() -> list[str]:
    """Registers every id of :data:`ENV_IDS` in Tune's registry; returns the ids added.

    Imports ray. Ids already in the registry (ours or someone else's creator) are kept.
    Before ``ray.init`` the values wait in the driver and reach the cluster at
    ``ray.init``; afterwards they are written at once. Also arranges, once per process,
    that every later ``ray.init`` registers them again.
    """
    from ray.tune.registry import ENV_CREATOR, _global_registry, register_env

    _add_post_init_hook()
    added = []
    with _lock:
        for env_id in ENV_IDS:
            if not _global_registry.contains(ENV_CREATOR, env_id):
                register_env(env_id, FairEnvCreator(env_id))
                added.append(env_id)
    return added


def _add_post_init_hook() -> None:
    """Adds :func:`register_rllib_envs` to Ray's post-``ray.init`` hooks (once)."""
    if _state["post_init_added"]:
        return
    import ray._private.worker as ray_worker

    hooks = getattr(ray_worker, "_post_init_hooks", None)
    if hooks is None:  # a Ray without the hook list: registrations then last one session
        warnings.warn(
            "rllib_fair: ray._private.worker._post_init_hooks not found; the fair/* env "
            "names are registered in Tune only for the current Ray session",
            stacklevel=2,
        )
    else:
        hooks.append(_register_after_init)
    _state["post_init_added"] = True


def _register_after_init() -> None:
    register_rllib_envs()


def install_rllib_registration() -> None:
    """Registers the ids in Tune's registry now if it is imported, else once it is.

    Called by ``import rllib_fair``; imports nothing of ray itself. Safe to call again.
    """
    if TUNE_REGISTRY_MODULE in sys.modules:
        _register_from_hook()
        return
    with _lock:
        if _state["hook_installed"]:
            return
        sys.meta_path.insert(0, _AfterImport(TUNE_REGISTRY_MODULE, _register_from_hook))
        _state["hook_installed"] = True


def _register_from_hook() -> None:
    try:
        register_rllib_envs()
    except Exception as err:  # never break the import of Ray itself
        warnings.warn(
            "rllib_fair: registering the fair/* env names in Tune's registry failed "
            f"({type(err).__name__}: {err}); remote env runners and Tune trials will not "
            "find them",
            stacklevel=2,
        )


class _AfterImport(importlib.abc.MetaPathFinder):
    """One-shot import hook: runs ``callback`` right after module ``name`` is executed.

    It finds the module's real spec through the other finders and wraps its loader only
    for that one execution (the module keeps its own loader afterwards).
    """

    def __init__(self, name: str, callback):
        self.name = name
        self.callback = callback

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            return None
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _RunThenCall(spec.loader, self.callback)
        return spec


class _RunThenCall(importlib.abc.Loader):
    def __init__(self, loader, callback):
        self.loader = loader
        self.callback = callback

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        # the module's own loader from here on (tracebacks, reloads, get_source)
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        self.callback()
