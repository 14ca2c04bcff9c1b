"""Deploy apps of Ray Serve LLM from this process: the one in-process way the tests and
the benchmark harness serve a recipe's (adapted) configs on a fake cluster.

A reader's recipe runs as its page runs it (:meth:`ray_serve_npu.fake_npu.fake_tier.
FakeNPUTier.serve`); this is for configs a test or the harness changed first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def run_apps(
    apps: Mapping[str, Mapping[str, Any]], *, host: str, port: int, prefixed: bool = True
) -> dict[str, str]:
    """Start Serve's HTTP proxy on ``host:port`` and run each app, built by the plugin.

    Each app is ``build_openai_app``'s argument, under ``/<name>``; with ``prefixed``
    false, the one app is at ``/``. The driver must be connected to the cluster.
    Returns each app's base URL.
    """
    from ray import serve

    from ray_serve_npu import build_openai_app

    if not prefixed and len(apps) != 1:
        raise ValueError(f"prefixed=False serves one app at /, not {len(apps)}")
    serve.start(http_options={"host": host, "port": port})
    urls = {}
    for name, args in apps.items():
        route = f"/{name}" if prefixed else "/"
        serve.run(build_openai_app(dict(args)), name=name, route_prefix=route, blocking=False)
        urls[name] = f"http://{host}:{port}{route.rstrip('/')}"
    return urls
