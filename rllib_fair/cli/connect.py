"""A quick check, before ``ray.init``, that this machine may join the cluster at ``--address``.

A Ray cluster started with token authentication (``RAY_AUTH_MODE=token``) refuses a
driver that sends no token or another token. ``ray.init`` then retries for about
20 seconds, logging one authentication error per second, and ends with a bare "cannot
connect". :func:`auth_problem` asks the cluster's GCS once (one gRPC call, a few
milliseconds) whether it accepts the token this driver would send, and returns one
actionable line if it does not.
"""

from __future__ import annotations

import os

#: seconds the probe waits for the GCS; an unreachable address is left to ``ray.init``
PROBE_TIMEOUT_S = 5.0

FIX = (
    "on this machine set RAY_AUTH_MODE=token and the cluster's token (RAY_AUTH_TOKEN=<token>, "
    "RAY_AUTH_TOKEN_PATH=<file> or ~/.ray/auth_token; print it on the head node with "
    "`ray get-auth-token`)"
)


def gcs_address(address: str) -> str | None:
    """``HOST:PORT`` of the GCS that ``address`` names, or None if it cannot be resolved.

    ``auto`` is resolved as ``ray.init`` does (the cluster started with ``ray start`` on
    this machine); Ray Client addresses (``ray://...``) and ``local`` are not probed.
    """
    if address in ("local", "") or address.startswith("ray://"):
        return None
    if address == "auto":
        try:
            from ray._private.services import canonicalize_bootstrap_address

            resolved = canonicalize_bootstrap_address("auto")
        except Exception:  # noqa: BLE001 - no running cluster: ray.init says so
            return None
        return resolved or None
    host, sep, port = address.rpartition(":")
    return address if sep and host and port.isdigit() else None


def _probe(target: str, token: str | None) -> str:
    """The gRPC status name of one ``GetClusterId`` call (``OK`` when accepted)."""
    import grpc
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    metadata = [("authorization", f"Bearer {token}")] if token else None
    with grpc.insecure_channel(target) as channel:
        stub = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel)
        try:
            stub.GetClusterId(
                gcs_service_pb2.GetClusterIdRequest(),
                timeout=PROBE_TIMEOUT_S,
                metadata=metadata,
            )
        except grpc.RpcError as e:
            return e.code().name
    return "OK"


def driver_token() -> tuple[str | None, str]:
    """The token ``ray.init`` will send from this machine, and where it comes from.

    Follows Ray's rule: with ``RAY_AUTH_MODE=token`` the configured token; with
    ``RAY_AUTH_MODE`` unset a token found on this machine (Ray then enables token mode
    by itself); with any other mode none.
    """
    from ray._raylet import AuthenticationTokenLoader

    mode = os.environ.get("RAY_AUTH_MODE")
    if mode is not None and mode.lower() != "token":
        return None, f"RAY_AUTH_MODE={mode}"
    loader = AuthenticationTokenLoader.instance()
    if not loader.has_token(ignore_auth_mode=True):
        return None, "no token on this machine"
    if "RAY_AUTH_TOKEN" in os.environ:
        source = "RAY_AUTH_TOKEN"
    elif "RAY_AUTH_TOKEN_PATH" in os.environ:
        source = f"RAY_AUTH_TOKEN_PATH={os.environ['RAY_AUTH_TOKEN_PATH']}"
    else:
        source = "~/.ray/auth_token"
    token = loader.get_raw_token(ignore_auth_mode=True)
    return (token or None), source


def auth_problem(address: str) -> str | None:
    """One line saying why the cluster at ``address`` will refuse this driver, or None.

    None also when the address cannot be resolved or reached (``ray.init`` reports
    that) or when the cluster accepts the driver's token or needs none.
    """
    target = gcs_address(address)
    if target is None:
        return None
    try:
        if _probe(target, None) != "UNAUTHENTICATED":
            return None  # no token needed, or unreachable: ray.init reports it
        token, source = driver_token()
        if token is None:
            return (
                f"--address: the Ray cluster at {address!r} uses token authentication and "
                f"this machine sends no token ({source}); {FIX}"
            )
        if _probe(target, token) == "UNAUTHENTICATED":
            return (
                f"--address: the Ray cluster at {address!r} rejected this machine's token "
                f"(from {source}); {FIX}"
            )
    except Exception:  # noqa: BLE001 - the probe is advisory; ray.init has the last word
        return None
    return None
