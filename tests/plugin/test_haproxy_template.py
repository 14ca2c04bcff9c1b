"""HAProxy's statistics, metrics and admin socket, as the config Serve writes has them.

With ``RAY_SERVE_ENABLE_HA_PROXY=1`` (direct streaming runs behind it), Serve renders
its HAProxy template into a config file on each node. Ray's template binds the
statistics page and the Prometheus exporter to every interface and gives every user
of the node the admin socket; the plugin's patch of the template
(:mod:`ray_serve_npu.patches.haproxy_templates`) keeps them local. These tests render
the config with Serve's own code at the installed Ray, which the compat tier runs at
each tested Ray.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest
from ray.serve._private import constants as serve_constants
from ray.serve._private.haproxy import HAProxyApi, HAProxyConfig
from ray.serve.config import HTTPOptions

from ray_serve_npu.patches.haproxy_templates import (
    HAPROXY_MODULE,
    TEMPLATE_LINES,
    HAProxyTemplateChangedError,
    keep_haproxy_side_ports_local,
)


def rendered_config(tmp_path: Path, host: str) -> str:
    """The HAProxy config Serve writes for an HTTP host of ``host`` and no app yet."""
    config_file = tmp_path / "haproxy.cfg"
    api = HAProxyApi(
        cfg=HAProxyConfig(
            http_options=HTTPOptions(host=host, port=8000),
            socket_path=str(tmp_path / "admin.sock"),
        ),
        config_file_path=str(config_file),
    )
    api._generate_config_file_internal()
    return config_file.read_text()


def binds(config: str) -> dict[str, str]:
    """Each section that listens, and the address it binds."""
    found: dict[str, str] = {}
    section = ""
    for line in config.splitlines():
        if line and not line[0].isspace():
            section = line.strip()
        elif match := re.fullmatch(r"\s+bind (\S+)(?: .*)?", line):
            found[section] = match.group(1)
    return found


@pytest.mark.parametrize("host", ["0.0.0.0", "127.0.0.1"])
def test_haproxy_statistics_and_metrics_listen_on_loopback_whatever_serve_s_host(
    tmp_path: Path, host: str
) -> None:
    config = rendered_config(tmp_path, host)
    listening = binds(config)
    assert listening["listen stats"] == f"127.0.0.1:{serve_constants.RAY_SERVE_HAPROXY_STATS_PORT}"
    assert listening["frontend prometheus"] == (
        f"127.0.0.1:{serve_constants.RAY_SERVE_HAPROXY_METRICS_PORT}"
    )
    # The endpoint itself listens where Serve's HTTP host says: that is the point of it.
    assert listening["frontend http_frontend"] == (
        "*:8000" if host == "0.0.0.0" else f"{host}:8000"
    )


def test_haproxy_admin_socket_is_its_owner_s(tmp_path: Path) -> None:
    config = rendered_config(tmp_path, "0.0.0.0")
    socket_lines = [line.strip() for line in config.splitlines() if "stats socket" in line]
    assert socket_lines == [
        f"stats socket {tmp_path / 'admin.sock'} mode 600 level admin expose-fd listeners"
    ]


def _template_module(template: str) -> types.ModuleType:
    module = types.ModuleType("haproxy_templates")
    module.HAPROXY_CONFIG_TEMPLATE = template  # type: ignore[attr-defined]
    return module


def _ray_template_without(line: str) -> str:
    return "\n".join(["global", *(ray for ray in TEMPLATE_LINES if ray != line), "defaults"])


def test_a_template_without_a_patched_line_fails_where_haproxy_is_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stats_line = "  bind *:{{ config.stats_port }}"
    module = _template_module(_ray_template_without(stats_line))
    monkeypatch.setattr(serve_constants, "RAY_SERVE_ENABLE_HA_PROXY", True)
    with pytest.raises(HAProxyTemplateChangedError) as raised:
        keep_haproxy_side_ports_local(module)
    message = str(raised.value)
    assert repr(stats_line) in message
    assert "Fix: install a Ray that ray-serve-npu is tested with (2.56.1," in message
    assert "or unset RAY_SERVE_ENABLE_HA_PROXY" in message


def test_a_template_without_a_patched_line_is_left_alone_where_haproxy_is_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    template = _ray_template_without("    bind :{{ config.metrics_port }}")
    module = _template_module(template)
    monkeypatch.setattr(serve_constants, "RAY_SERVE_ENABLE_HA_PROXY", False)
    keep_haproxy_side_ports_local(module)
    assert module.HAPROXY_CONFIG_TEMPLATE == template


def test_every_line_the_patch_writes_is_one_it_found() -> None:
    module = _template_module("\n".join(["global", *TEMPLATE_LINES, "defaults"]))
    keep_haproxy_side_ports_local(module)
    assert module.HAPROXY_CONFIG_TEMPLATE.split("\n")[1:-1] == list(TEMPLATE_LINES.values())


def test_a_haproxy_manager_imported_before_the_patch_renders_the_patched_template(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As where activate() runs after Serve's HAProxy manager was imported: the manager
    # holds its own reference to Ray's template.
    manager = types.ModuleType(HAPROXY_MODULE)
    manager.HAPROXY_CONFIG_TEMPLATE = "\n".join(TEMPLATE_LINES)
    monkeypatch.setitem(sys.modules, HAPROXY_MODULE, manager)
    keep_haproxy_side_ports_local(_template_module(manager.HAPROXY_CONFIG_TEMPLATE))
    assert manager.HAPROXY_CONFIG_TEMPLATE.split("\n") == list(TEMPLATE_LINES.values())
