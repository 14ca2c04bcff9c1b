"""A block's output against the page's expected output, with what varies run to run masked.

Masked on both sides: ids, timestamps, token counts and generated text. Beyond that the
expected output may write ``...`` for any text (as doctest's ELLIPSIS), and an expected
JSON object may leave keys out (the page shows what matters; the server may add more).
"""

from __future__ import annotations

import difflib
import json
import re

MASK = "<masked>"
#: JSON keys whose values vary: ids, times, token counts, generated text, the served weights.
MASKED_KEYS = {
    "id", "created", "created_at", "system_fingerprint",
    "prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details",
    "content", "text", "reasoning_content", "logprobs", "finish_reason",
    "root", "max_model_len",
}  # fmt: skip
_STRING = r'"(?:[^"\\]|\\.)*"'
#: The same masks for text that is not one JSON document (streamed ``data: {...}`` lines, logs).
_TEXT_MASKS = [
    (re.compile(rf'"(?P<key>{"|".join(sorted(MASKED_KEYS))})"\s*:\s*(?:{_STRING}|[\w.+-]+|null)'),
     rf'"\g<key>": "{MASK}"'),
    (re.compile(r"\b(?:chatcmpl|cmpl|req|chat)-[\w-]+"), MASK),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), MASK),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"),
     MASK),
]  # fmt: skip
ELLIPSIS = "..."


def mask_json(value: object) -> object:
    if isinstance(value, dict):
        return {k: MASK if k in MASKED_KEYS else mask_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_json(v) for v in value]
    return value


def mask_text(text: str) -> str:
    lines = [line.rstrip() for line in text.strip("\n").splitlines()]
    masked = "\n".join(lines).strip()
    for pattern, replacement in _TEXT_MASKS:
        masked = pattern.sub(replacement, masked)
    return masked


def _json_contains(actual: object, expected: object) -> bool:
    """Whether ``expected`` is ``actual`` with some object keys left out."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and _json_contains(actual[k], v) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(map(_json_contains, actual, expected))
        )
    return actual == expected or expected == ELLIPSIS


def _ellipsis_match(expected: str, actual: str) -> bool:
    pattern = ".*?".join(re.escape(part) for part in expected.split(ELLIPSIS))
    return re.fullmatch(pattern, actual, re.DOTALL) is not None


def _parse_json(text: str) -> object | None:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def compare_output(expected: str, actual: str) -> str | None:
    """None if ``actual`` matches ``expected``; else a diff of the two, masked."""
    expected_json, actual_json = _parse_json(expected), _parse_json(actual)
    if expected_json is not None and actual_json is not None:
        masked_expected, masked_actual = mask_json(expected_json), mask_json(actual_json)
        if _json_contains(masked_actual, masked_expected):
            return None
        expected_shown = json.dumps(masked_expected, indent=2, sort_keys=True)
        actual_shown = json.dumps(masked_actual, indent=2, sort_keys=True)
    else:
        expected_shown, actual_shown = mask_text(expected), mask_text(actual)
        if _ellipsis_match(expected_shown, actual_shown):
            return None
    diff = difflib.unified_diff(
        expected_shown.splitlines(),
        actual_shown.splitlines(),
        "expected (masked)",
        "actual (masked)",
        lineterm="",
    )
    return "\n".join(diff)
