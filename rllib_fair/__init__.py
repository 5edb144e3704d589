"""rllib-fair: long-term fairness in sequential decision-making on Ray RLlib.

Importing the package registers every environment as a gymnasium id ``fair/<Name>-v<N>``
(idempotently), so YAML files, remote env runners and Tune trials can name them
without further set-up. Ray and torch are only imported when an algorithm is resolved
(:func:`rllib_fair.algorithms.get_algorithm_class`).
"""

from rllib_fair.envs import register_envs

__version__ = "0.1.0"

register_envs()

__all__ = ["__version__", "register_envs"]
