"""Run in a subprocess: execute a recipe as a module and print its LLMConfigs as JSON.

A recipe puts ``serve.run`` under ``if __name__ == "__main__":``, so running it
under another name builds the configs without serving anything.
"""

from __future__ import annotations

import json
import runpy
import sys

MARKER = "__ray_serve_npu_check__"
FIELDS = {"model_loading_config", "engine_kwargs", "runtime_env", "accelerator_type"}


def probe(path: str) -> list[dict[str, object]]:
    from ray.serve.llm import LLMConfig

    namespace = runpy.run_path(path, run_name=MARKER)
    found = []
    for name, value in namespace.items():
        items = value if isinstance(value, list | tuple) else [value]
        for index, item in enumerate(items):
            if isinstance(item, LLMConfig):
                config = item.model_dump(include=FIELDS, exclude_none=True)
                found.append({"name": name, "index": index, "config": config})
    return found


if __name__ == "__main__":
    print(MARKER + json.dumps(probe(sys.argv[1]), default=str))
