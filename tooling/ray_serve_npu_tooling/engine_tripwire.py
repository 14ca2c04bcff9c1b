"""A vLLM general plugin that records every engine core started while the fast tier runs.

``nox -s tests`` promises that no vLLM engine starts in it: engines belong to the
fake-NPU tier (``nox -s recipes``). vLLM loads its general plugins in each engine
core's constructor (``vllm/v1/engine/core.py``, ``EngineCore.__init__``), once per
process: a spawned engine core loads them there, while one forked from a process that
already loaded them (``vllm serve``'s API server) does not load them again. So the
plugin records the engine core that called it, and otherwise wraps the constructor,
which a forked child inherits. With :data:`ENGINE_TRIPWIRE_ENV_VAR` naming a directory,
a process that builds an engine core writes one JSON file there; :mod:`.tiers` fails
the run that finds one. Unset, the plugin does nothing and changes nothing.

Runs inside vLLM's processes: nothing at import.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from types import FrameType
from typing import Any

#: The directory engine cores record themselves in; the fast tier sets it for its run.
ENGINE_TRIPWIRE_ENV_VAR = "RAY_SERVE_NPU_ENGINE_TRIPWIRE"
#: The file and function of vLLM's engine core constructor, which loads the plugins.
ENGINE_CORE_FILE = os.path.join("vllm", "v1", "engine", "core.py")
ENGINE_CORE_FUNCTION = "__init__"


def called_by_engine_core(frame: FrameType | None) -> bool:
    """Whether ``frame`` or one of its callers is an engine core's constructor."""
    while frame is not None:
        code = frame.f_code
        if code.co_filename.endswith(ENGINE_CORE_FILE) and code.co_name == ENGINE_CORE_FUNCTION:
            return True
        frame = frame.f_back
    return False


def record_engine_start() -> None:
    """``vllm.general_plugins`` entry point: record every engine core this process builds."""
    directory = os.environ.get(ENGINE_TRIPWIRE_ENV_VAR)
    if not directory:
        return
    if called_by_engine_core(sys._getframe(1)):
        write_record(Path(directory))
        return
    from vllm.v1.engine import core

    build = core.EngineCore.__init__

    @functools.wraps(build)
    def build_recorded(*args: Any, **kwargs: Any) -> None:
        write_record(Path(directory))
        build(*args, **kwargs)

    core.EngineCore.__init__ = build_recorded  # type: ignore[method-assign]


def write_record(directory: Path) -> None:
    """One file per process that builds an engine core: its pid, argv and test."""
    record = {
        "pid": os.getpid(),
        "argv": sys.argv,
        # The test whose process (or whose cluster's workers) started the engine, where
        # the variable reached it: pytest sets it in the test process only.
        "test": os.environ.get("PYTEST_CURRENT_TEST", ""),
    }
    (directory / f"engine-{os.getpid()}.json").write_text(json.dumps(record))
