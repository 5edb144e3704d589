"""Ray's internal key-value store, as the channel that carries env errors to the driver.

An env runner that hits an env exception writes one line under a key of
:data:`NAMESPACE`; the driver lists, reads and deletes them (:mod:`rllib_fair.rllib.health`).
The store lives in Ray's GCS, so it reaches the driver from any node; Ray has no public
key-value API that does this without an extra actor. The functions are defensive: where
the store is missing or not initialised they do nothing (the error is then only logged
by RLlib). This channel is not part of the speed switch: it carries no training data.
"""

from __future__ import annotations

#: Namespace of the entries.
NAMESPACE = "rllib_fair"


def _kv():
    from ray.experimental import internal_kv

    return internal_kv if internal_kv._internal_kv_initialized() else None


def put(key: str, value: bytes) -> bool:
    """Stores ``value`` under ``key``; False where the store is not available."""
    kv = _kv()
    if kv is None:
        return False
    kv._internal_kv_put(key, value, namespace=NAMESPACE)
    return True


def pop_prefix(prefixes) -> list[tuple[str, bytes]]:
    """Every ``(key, value)`` whose key starts with one of ``prefixes``, deleted as read."""
    kv = _kv()
    if kv is None:
        return []
    out = []
    for prefix in prefixes:
        for key in kv._internal_kv_list(prefix, namespace=NAMESPACE):
            value = kv._internal_kv_get(key, namespace=NAMESPACE)
            kv._internal_kv_del(key, namespace=NAMESPACE)
            name = key.decode() if isinstance(key, bytes) else key
            if value:
                out.append((name, value))
    return out
