"""The ``model-compose-file`` directive: the Compose file that ``python serve_model.py
--compose RUN`` prints for a run of the pinned release, as a YAML block. The page shows
what the command prints, from the same builder (:mod:`ray_serve_npu.model_compose`)."""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from ray_serve_npu import compat
from ray_serve_npu.model_compose import compose_for
from ray_serve_npu.model_recipes import find_run


class ModelComposeFile(SphinxDirective):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        text = compose_for(find_run(self.arguments[0], compat.VLLM_ASCEND.tag)).text()
        block = nodes.literal_block(text, text)
        block["language"] = "yaml"
        return [block]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("model-compose-file", ModelComposeFile)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
