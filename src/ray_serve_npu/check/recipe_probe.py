"""Run in a subprocess: execute a recipe as a module and write its LLMConfigs as JSON.

``python -m ray_serve_npu.check.recipe_probe RECIPE RESULT_FILE``. A recipe puts
``serve.run`` under ``if __name__ == "__main__":``, so running it under another
name builds the configs without serving anything. The result goes to
``RESULT_FILE``, not to stdout, where the recipe's own prints land.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

from ray_serve_npu.check.llm_config import FIELDS

_RUN_NAME = "__ray_serve_npu_check__"


def probe(path: str) -> list[dict[str, object]]:
    from ray.serve.llm import LLMConfig

    namespace = runpy.run_path(path, run_name=_RUN_NAME)
    found = []
    for name, value in namespace.items():
        items = value if isinstance(value, list | tuple) else [value]
        for index, item in enumerate(items):
            if isinstance(item, LLMConfig):
                config = item.model_dump(include=set(FIELDS), exclude_none=True)
                found.append({"name": name, "index": index, "config": config})
    return found


if __name__ == "__main__":
    recipe, result_file = sys.argv[1:3]
    Path(result_file).write_text(json.dumps(probe(recipe), default=str))
