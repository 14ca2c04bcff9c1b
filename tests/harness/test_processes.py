"""Process-group servers shared by both tiers."""

from __future__ import annotations

import socket

import pytest

from ray_serve_npu.fake_npu.processes import ensure_port_free


def test_a_taken_port_is_refused_with_the_reason() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(
            RuntimeError,
            match=f"port {port} on 127.0.0.1 is still taken by another server after 2 s",
        ):
            ensure_port_free(port, wait_s=2)
    ensure_port_free(port)  # closed again: free
