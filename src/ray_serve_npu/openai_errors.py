"""The error object of the OpenAI API, as the plugin's answers carry it.

The ingress's 401 (:mod:`ray_serve_npu.ingress`) and the stream guard's 500, 503 and
error events (:mod:`ray_serve_npu.streams`) share it; standard library only.
"""

from __future__ import annotations

from typing import Any


def openai_error(message: str, error_type: str, code: int) -> dict[str, Any]:
    """The error object OpenAI clients parse (``{"error": {...}}``)."""
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}
