"""Which parts of a ``get_state`` call's answer the caller asked for."""

from __future__ import annotations

from ray.rllib.utils import force_list


def component_wanted(name: str, components, not_components) -> bool:
    """Whether ``get_state(components, not_components=...)`` asks for ``name``.

    RLlib's rule for its ``Checkpointable`` components: every component when
    ``components`` is None, else those named (or with a named sub-component
    ``name/...``); never those in ``not_components``. Weight syncs name ``rl_module``
    only, so large extra state (an env's, a replay memory) stays out of them.
    """
    wanted = components is None or any(
        c == name or c.startswith(name + "/") for c in force_list(components)
    )
    return wanted and (not_components is None or name not in force_list(not_components))
