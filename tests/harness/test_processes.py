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


def test_a_picked_port_is_below_the_ephemeral_range_free_and_not_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ray_serve_npu.fake_npu import processes

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held_port = held.getsockname()[1]
        listed = processes.PICKED_PORTS[0]
        # The picker's draws: a port another socket holds, one the caller has taken, then
        # one in the range that is free.
        draws = iter([held_port, listed, listed + 1])
        monkeypatch.setattr(processes.random, "choice", lambda ports: next(draws))
        assert processes.free_port(taken={listed}) == listed + 1
    # Below the kernel's ephemeral range, where a listener on port 0 can't take it first.
    ephemeral_low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    assert processes.PICKED_PORTS.stop <= ephemeral_low
    assert processes.PAGES_PORT not in processes.PICKED_PORTS
