"""Patches ``ray.serve._private.haproxy_templates``: HAProxy's side doors closed to other hosts.

Why: with ``RAY_SERVE_ENABLE_HA_PROXY=1``, the HAProxy that Serve runs on each node
binds its statistics page and its Prometheus exporter to every interface, whatever
Serve's HTTP host, with no password, and opens its admin socket to every user of the
node at ``level admin``, from which any of them can reconfigure it or take its
listening sockets. Direct streaming, the fastest request path of Ray Serve LLM, runs
behind this HAProxy.
Upstream: none yet.
Goes: when Serve's HAProxy template binds its statistics and metrics to a host it is
given, and keeps its admin socket to its owner.
"""

from __future__ import annotations

import sys
from types import ModuleType

#: Serve's HAProxy manager, which renders the template.
HAPROXY_MODULE = "ray.serve._private.haproxy"
#: The statistics page and the metrics exporter listen here.
LOOPBACK = "127.0.0.1"

#: Each line of Ray's ``HAPROXY_CONFIG_TEMPLATE`` that the patch changes, and the
#: plugin's for it. The same lines at every supported Ray: ``haproxy_templates.py``
#: lines 23, 83 and 222 at 2.56.1; 65, 137 and 436 at 2.57.1; 65, 137 and 446 at
#: 2.58.1 and 2.59.0; 65, 137 and 440 at 2.60.0.
TEMPLATE_LINES: dict[str, str] = {
    # Serve's proxy actor and HAProxy run as one user; no other user needs the socket.
    "    stats socket {{ config.socket_path }} mode 666 level admin expose-fd listeners": (
        "    stats socket {{ config.socket_path }} mode 600 level admin expose-fd listeners"
    ),
    "    bind :{{ config.metrics_port }}": f"    bind {LOOPBACK}:{{{{ config.metrics_port }}}}",
    "  bind *:{{ config.stats_port }}": f"  bind {LOOPBACK}:{{{{ config.stats_port }}}}",
}


class HAProxyTemplateChangedError(RuntimeError):
    """Serve's HAProxy template lacks a line that the plugin changes."""


def keep_haproxy_side_ports_local(module: ModuleType) -> None:
    """Bind HAProxy's statistics and metrics to loopback; make its admin socket owner-only.

    Serve imports this template in every controller, with or without HAProxy. A Ray
    whose template lacks one of :data:`TEMPLATE_LINES` fails here only where HAProxy
    is on (the ports would stay open); elsewhere the template is never rendered.
    """
    lines = module.HAPROXY_CONFIG_TEMPLATE.split("\n")
    missing = [line for line in TEMPLATE_LINES if line not in lines]
    if missing:
        from ray.serve._private import constants

        if constants.RAY_SERVE_ENABLE_HA_PROXY:
            import ray

            from ray_serve_npu.compat import TESTED_RAY

            raise HAProxyTemplateChangedError(
                f"ray-serve-npu keeps HAProxy's statistics and metrics ports on {LOOPBACK} "
                f"and its admin socket to its owner, but Ray {ray.__version__}'s HAProxy "
                f"template (ray/serve/_private/haproxy_templates.py) has no line {missing[0]!r}. "
                f"Fix: install a Ray that ray-serve-npu is tested with ({', '.join(TESTED_RAY)}), "
                "or unset RAY_SERVE_ENABLE_HA_PROXY."
            )
        return
    patched = "\n".join(TEMPLATE_LINES.get(line, line) for line in lines)
    module.HAPROXY_CONFIG_TEMPLATE = patched
    # Serve's HAProxy manager takes its own reference to the template when it is
    # imported: one imported before this patch (activate() called late) still renders
    # Ray's, unless it gets the patched one too.
    if (haproxy := sys.modules.get(HAPROXY_MODULE)) is not None:
        haproxy.HAPROXY_CONFIG_TEMPLATE = patched
