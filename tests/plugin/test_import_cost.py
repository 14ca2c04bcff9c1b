"""Importing the plugin must not import vLLM.

vLLM loads its platform plugins, the fake tier's among them
(``ray_serve_npu.testing.vllm_plugins``), while it is itself being imported;
a package that imports vLLM at module level then fails with a circular import,
and the engine falls back to the CPU platform, which Ray can't run.
"""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_plugin_imports_no_vllm() -> None:
    code = (
        "import sys, ray_serve_npu; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'vllm'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )

    assert done.stdout.strip() == "[]", done.stdout
