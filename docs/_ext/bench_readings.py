"""The ``bench-readings`` directive: what a committed run says, one sentence an arm.

``{bench-readings} _static/bench/levers/levers.json`` reads the run's JSON with
:func:`ray_serve_npu_tooling.bench.readings.readings` and writes, for each arm and
concurrency, its figures against the reference arm of the same rounds: the median, the
range over the rounds, whether every round leaned one way, and, against direct vLLM,
whether the median met the request path's target and in how many rounds. No figure
and no verdict is typed on a page, so a new run is a new reading.

Options: ``:against: default`` (each lever against Ray's defaults, the default) or
``direct`` (each arm against direct vLLM); ``:paced:`` for a run whose engines had
NPU-paced steps, which sets the targets. As in ``release_matrix``, the fixed words are
in the build's language and the nodes carry no source, so the gettext builder
extracts none of them.
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from editions import edition_texts, inline_code
from ray_serve_npu_tooling.bench.compare import DEFAULT, DIRECT, Comparison
from ray_serve_npu_tooling.bench.readings import Lean, Reading, readings
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

#: Every fixed text of a reading, per language; ``code`` in backticks. The Chinese
#: references carry the spaces that set Latin text apart from Chinese.
TEXTS: dict[str, dict[str, str]] = {
    "en": {
        DEFAULT: "Ray's defaults",
        DIRECT: "direct vLLM",
        "head": "`{arm}` at concurrency {level}: ",
        "throughput-ratio": "output throughput {median:.2f} times that of {reference}",
        "ttft-ratio": "time to first token {median:.2f} times that of {reference}",
        "ttft-added": "time to first token {median:+.1f} ms against {reference}",
        "range": " ({low} to {high} over {rounds} rounds)",
        "range-short": " ({low} to {high})",
        Lean.HIGHER.value: "higher in every round",
        Lean.LOWER.value: "lower in every round",
        Lean.NOISE.value: "within noise",
        "target": "the median {meets} the target of {target} ({count} of {rounds} rounds do)",
        "meets": "meets",
        "misses": "misses",
        "comma": ", ",
        "join": "; ",
        "end": ".",
    },
    "zh_CN": {
        DEFAULT: " Ray 的默认设置",
        DIRECT: "直接运行的 vLLM ",
        "head": "`{arm}`，并发 {level}：",
        "throughput-ratio": "输出吞吐量是{reference}的 {median:.2f} 倍",
        "ttft-ratio": "首 token 时间是{reference}的 {median:.2f} 倍",
        "ttft-added": "首 token 时间比{reference}多出 {median:+.1f} ms",
        "range": "（{rounds} 轮中从 {low} 到 {high}）",
        "range-short": "（从 {low} 到 {high}）",
        Lean.HIGHER.value: "每一轮都更高",
        Lean.LOWER.value: "每一轮都更低",
        Lean.NOISE.value: "在噪声范围内",
        "target": "中位数{meets} {target} 的目标（{rounds} 轮中有 {count} 轮达到）",
        "meets": "达到了",
        "misses": "未达到",
        "comma": "，",
        "join": "；",
        "end": "。",
    },
}


def sentence(reading: Reading, words: dict[str, str]) -> str:
    """``reading`` as one sentence in ``words``' language (a value of :data:`TEXTS`)."""
    reference = words.get(reading.reference, reading.reference)
    parts = []
    for number, figure in enumerate(reading.figures):
        shown = "{:.2f}" if figure.kind == "ratio" else "{:+.1f}"
        spread = words["range" if number == 0 else "range-short"].format(
            low=shown.format(min(figure.values)),
            high=shown.format(max(figure.values)),
            rounds=reading.rounds,
        )
        what = words[f"{figure.name}-{figure.kind}"].format(
            median=figure.median, reference=reference
        )
        said = what + spread + words["comma"] + words[figure.lean.value]
        if figure.target is not None:
            target = f"{figure.target:g}" + (" ms" if figure.kind == "added" else "")
            meets = words["meets" if figure.meets(figure.median) else "misses"]
            said += words["comma"] + words["target"].format(
                meets=meets, target=target, count=figure.rounds_meeting, rounds=reading.rounds
            )
        parts.append(said)
    head = words["head"].format(arm=reading.arm, level=reading.concurrency)
    return head + words["join"].join(parts) + words["end"]


def reading_list(found: list[Reading], words: dict[str, str]) -> nodes.bullet_list:
    """The readings as a bulleted list, one sentence an item."""
    items = nodes.bullet_list(classes=["bench-readings"])
    for reading in found:
        item = nodes.list_item()
        item += nodes.paragraph("", "", *inline_code(sentence(reading, words)))
        items += item
    return items


class BenchReadings(SphinxDirective):
    """``{bench-readings} PATH``: a committed lever run's readings, PATH from docs/."""

    required_arguments = 1
    option_spec = {"against": lambda arg: directives.choice(arg, (DEFAULT, DIRECT)),
                   "paced": directives.flag}  # fmt: skip

    def run(self) -> list[nodes.Node]:
        path = Path(self.env.srcdir) / self.arguments[0]
        if not path.is_file():
            raise self.error(
                f"bench-readings: {self.arguments[0]} is not a file below docs/; name a "
                "run's levers.json (nox -s bench -- --levers ... writes one)"
            )
        self.env.note_dependency(str(path))
        comparisons = [Comparison.model_validate(c) for c in json.loads(path.read_text())]
        against = self.options.get("against", DEFAULT)
        try:
            found = readings(comparisons, against, paced="paced" in self.options)
        except ValueError as problem:
            raise self.error(f"bench-readings: {self.arguments[0]}: {problem}") from None
        return [reading_list(found, edition_texts(TEXTS, self.config.language))]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("bench-readings", BenchReadings)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
