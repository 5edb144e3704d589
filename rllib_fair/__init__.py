"""rllib-fair: long-term fairness in sequential decision-making on Ray RLlib.

Importing the package registers every environment as a gymnasium id ``fair/<Name>-v<N>``
(idempotently), so ``gymnasium.make("fair/Lending-v0")`` works in this process. The same
ids are registered as RLlib env names in Ray Tune's registry, which every process of a
Ray job shares, so any RLlib algorithm (stock PPO, APPO, DQN, SAC, IMPALA or ours) can
name them locally, on remote env runners and in Tune trials, with ``import rllib_fair``
in the driver as the only set-up (:mod:`rllib_fair.envs.rllib_registry`). Importing the
package imports neither ray nor torch: the Tune registration runs once ray's
``ray.tune.registry`` is imported (at once if it already is) and again after every
``ray.init``. Ray and torch are only imported when an algorithm is resolved
(:func:`rllib_fair.algorithms.get_algorithm_class`).
"""

from rllib_fair.envs import register_envs
from rllib_fair.envs.rllib_registry import install_rllib_registration

__version__ = "0.1.0"

register_envs()
install_rllib_registration()

__all__ = ["__version__", "register_envs"]
