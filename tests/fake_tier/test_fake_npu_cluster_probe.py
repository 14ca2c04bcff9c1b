"""The fake cluster's probe of its nodes gives up by itself: no cluster starts here.

The probe polls the GCS for the nodes the cluster waits for; the cluster kills it when
its wait ends. A waiter killed first (a test run stopped with SIGKILL) must not leave
it polling a GCS that will never answer.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from ray_serve_npu.fake_npu.cluster import _ALIVE_NODES_PROBE

#: The probe's own start (Python and Ray's imports) and one unanswered call to the GCS.
GIVES_UP_WITHIN_S = 30
#: Ray waits 30 s for an absent GCS's cluster ID and 5 s for each connection by default;
#: the probe's logic is the same with shorter waits.
QUICK_GCS_TIMEOUTS = {
    "RAY_py_gcs_connect_timeout_s": "2",
    "RAY_gcs_rpc_server_connect_timeout_s": "1",
}


def _unanswered_address() -> str:
    """A loopback address with nothing listening."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{closed.getsockname()[1]}"


def _probe(deadline_s: float, parent: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            _ALIVE_NODES_PROBE,
            '["127.0.0.9"]',
            "[]",
            str(deadline_s),
            str(parent),
        ],
        env={**os.environ, **QUICK_GCS_TIMEOUTS, "RAY_ADDRESS": _unanswered_address()},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_the_node_probe_gives_up_after_its_deadline_and_when_its_parent_is_gone() -> None:
    # One probe past its deadline, one whose parent (as it knows it) is not its parent.
    probes = {
        "deadline": _probe(deadline_s=0, parent=os.getpid()),
        "orphaned": _probe(deadline_s=3600, parent=os.getpid() + 1_000_000),
    }
    started = time.monotonic()
    try:
        for name, probe in probes.items():
            _, errors = probe.communicate(timeout=GIVES_UP_WITHIN_S)
            assert probe.returncode != 0, name
            assert "gave up: alive [], wanted ['127.0.0.9']" in errors, (name, errors[-2000:])
            assert "the GCS did not answer" in errors, (name, errors[-2000:])
    finally:
        for probe in probes.values():
            probe.kill()
    assert time.monotonic() - started < GIVES_UP_WITHIN_S
