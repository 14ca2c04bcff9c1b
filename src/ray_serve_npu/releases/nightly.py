"""The single-node runs of vLLM-Ascend's nightly hardware CI at each release, as data.

``nightly/<tag>/*.yaml`` are vLLM-Ascend's own
``tests/e2e/nightly/single_node/models/configs/*.yaml`` at that release, copied
unchanged (``nightly/README.md`` says from where). Each test case of one is a run: a
model, its environment and the words after ``vllm serve MODEL``, which this module reads
as that release's vLLM reads them (:mod:`ray_serve_npu.vllm_flags`), with the file and
line it comes from.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from ray_serve_npu.releases.loader import DATA_DIR, release
from ray_serve_npu.vllm_flags import read_flags, stored_flags

#: Where the copies live, one folder per release tag.
NIGHTLY_DIR = DATA_DIR / "nightly"
#: Where the files are in vLLM-Ascend's repository.
UPSTREAM_DIR = "tests/e2e/nightly/single_node/models/configs"
#: The CI fills a port whose value is DEFAULT_PORT with a free one
#: (tests/e2e/nightly/single_node/models/scripts/GUIDE_AND_TEMPLATE.md:157 at v0.25.1rc1).
A_FREE_PORT = "8000"
#: Each release's copy of its nightly CI's schedule, in the release's folder: which
#: runner, and so which node kind, runs each config.
SCHEDULE_FILE = Path("schedule") / "nightly_config.yaml"
#: The schedule's sections by node kind. A3-560T is A3 hardware of another cluster that
#: runs the -a3 images (the schedule's own header says so).
_SCHEDULE_NODE_KINDS = {"a2": "A2", "a3": "A3", "a3-560t": "A3"}
#: Sections of the schedule that name no node kind this project serves, and why.
_SCHEDULE_NOT_SERVED = {"310p": "Atlas 300I Duo inference cards, which this project does not serve"}
#: A node kind's sections whose configs run on one node; the others list multi-node
#: configs, which live in another folder, and accuracy groups.
_ONE_NODE_SECTIONS = ("single_node", "multi_card")
#: The devices in a runner's label: ``linux-aarch64-a2b3-4``,
#: ``linux-aarch64-nightly-a3-16``, ``linux-aarch64-a3-16-cn12-001``.
_RUNNER_DEVICES = re.compile(r"-(?:a2b3|a3)-(\d+)(?:-|$)")
#: PyYAML's safe loader, in C where PyYAML was built with libyaml: the same documents, read
#: several times faster (the checker reads every config of a release).
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: A node kind the file or the case names at its end: ``...-A3.yaml``, ``...-a2``.
_NODE_KIND = re.compile(r"[-_](A2|A3)$", re.IGNORECASE)


class Scheduled(BaseModel):
    """Where the nightly CI's schedule runs a config: on which node kind and runner."""

    node_kind: str
    #: The schedule's section: ``a2``, ``a3`` or ``a3-560t``.
    section: str
    runner: str
    #: The NPUs the runner's label gives.
    devices: int
    #: The line of the config's entry in the schedule.
    line: int


class NightlyRun(BaseModel):
    """One test case of vLLM-Ascend's nightly CI: what it serves, and how."""

    release: str
    #: The file's path in vLLM-Ascend's repository, and the line of the case in it.
    path: str
    line: int
    name: str
    model: str
    #: A2 or A3 where the file's or the case's name ends in it, else None.
    node_kind: str | None
    envs: dict[str, str]
    #: The words after ``vllm serve MODEL``: server_cmd, then server_cmd_extra
    #: (single_node_config.py:165-167 at v0.25.1rc1), with ``$NAME`` filled from envs.
    argv: list[str]
    tensor_parallel: int
    data_parallel: int
    pipeline_parallel: int
    expert_parallel: bool
    max_model_len: int | None
    quantization: str | None
    #: Its speculative decoding's method (``mtp``) and number of tokens, else None.
    speculative_method: str | None
    speculative_tokens: int | None
    #: Where the release's schedule runs the run's config; empty where it doesn't, or
    #: where the release keeps no schedule.
    schedule: tuple[Scheduled, ...] = ()

    @property
    def node_kinds(self) -> tuple[str, ...]:
        """The node kinds the run is for: the one its name gives, else the schedule's."""
        if self.node_kind:
            return (self.node_kind,)
        return tuple(sorted({entry.node_kind for entry in self.schedule}))

    @property
    def npus(self) -> int:
        """The NPUs the run's engine uses: tensor × data × pipeline parallel."""
        return self.tensor_parallel * self.data_parallel * self.pipeline_parallel


def _argv(case: dict[str, Any]) -> list[str]:
    envs = {k: A_FREE_PORT if v == "DEFAULT_PORT" else str(v) for k, v in case["envs"].items()}
    words = [str(w) for w in [*case["server_cmd"], *case.get("server_cmd_extra", [])]]
    return [re.sub(r"\$(\w+)", lambda m: envs.get(m[1], m[0]), word) for word in words]


def _engine(argv: list[str], vllm: str) -> Any:
    """The engine arguments of ``argv`` as vLLM ``vllm`` parses them."""
    words = [word for flag in read_flags(argv) for word in flag.argv()]
    return stored_flags(vllm).parser().parse_args(words)


@cache
def schedule(tag: str) -> dict[str, tuple[Scheduled, ...]]:
    """Where the release's nightly CI runs each single-node config, by the config's file
    name; empty where the release keeps no schedule (before v0.23.0 it had none)."""
    path = NIGHTLY_DIR / tag / SCHEDULE_FILE
    if not path.is_file():
        return {}
    root = yaml.compose(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)
    found: dict[str, list[Scheduled]] = {}
    for section_key, sections in root.value:
        section = section_key.value
        if section in _SCHEDULE_NOT_SERVED:
            continue
        if section not in _SCHEDULE_NODE_KINDS:
            raise ValueError(
                f"{path}:{section_key.start_mark.line + 1}: the schedule has a section "
                f"{section!r} that names no node kind; add it to _SCHEDULE_NODE_KINDS or "
                "_SCHEDULE_NOT_SERVED in ray_serve_npu/releases/nightly.py, with why"
            )
        for kind_key, body in sections.value:
            if kind_key.value not in _ONE_NODE_SECTIONS:
                continue
            (configs,) = [v for k, v in body.value if k.value == "test_config"]
            for entry in configs.value:
                fields = {k.value: v.value for k, v in entry.value}
                if "config_file_path" not in fields:
                    continue  # a pytest file, not a config
                devices = _RUNNER_DEVICES.search(fields["os"])
                if devices is None:
                    raise ValueError(
                        f"{path}:{entry.start_mark.line + 1}: runner {fields['os']!r} names "
                        "no device count; extend _RUNNER_DEVICES in nightly.py"
                    )
                found.setdefault(fields["config_file_path"], []).append(
                    Scheduled(
                        node_kind=_SCHEDULE_NODE_KINDS[section],
                        section=section,
                        runner=fields["os"],
                        devices=int(devices[1]),
                        line=entry.start_mark.line + 1,
                    )
                )
    return {name: tuple(entries) for name, entries in found.items()}


def _run(tag: str, path: Path, case: dict[str, Any], line: int) -> NightlyRun:
    argv = _argv(case)
    engine = _engine(argv, release(tag).vllm)
    named = _NODE_KIND.search(path.stem) or _NODE_KIND.search(case["name"])
    speculative = engine.speculative_config or {}
    return NightlyRun(
        release=tag,
        path=f"{UPSTREAM_DIR}/{path.name}",
        line=line,
        name=case["name"],
        model=case["model"],
        node_kind=named[1].upper() if named else None,
        envs={k: str(v) for k, v in case["envs"].items()},
        argv=argv,
        tensor_parallel=engine.tensor_parallel_size or 1,
        data_parallel=engine.data_parallel_size or 1,
        pipeline_parallel=engine.pipeline_parallel_size or 1,
        expert_parallel=bool(engine.enable_expert_parallel),
        max_model_len=engine.max_model_len,
        quantization=engine.quantization,
        speculative_method=speculative.get("method"),
        speculative_tokens=speculative.get("num_speculative_tokens"),
        schedule=schedule(tag).get(path.name, ()),
    )


@cache
def nightly_runs(tag: str) -> tuple[NightlyRun, ...]:
    """Every ``vllm serve`` run of the release's nightly single-node CI, file by file."""
    folder = NIGHTLY_DIR / tag
    if not folder.is_dir():
        held = ", ".join(sorted(p.name for p in NIGHTLY_DIR.iterdir() if p.is_dir()))
        raise LookupError(f"no nightly CI configs are stored for {tag}; they are for {held}")
    runs = []
    for path in sorted(folder.glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        # PyYAML, as vLLM-Ascend's runner reads them: the files repeat `<<` in one
        # mapping, which YAML 1.2 readers refuse.
        cases = yaml.load(text, Loader=_SAFE_LOADER)["test_cases"]
        (case_nodes,) = [
            v for k, v in yaml.compose(text, Loader=_SAFE_LOADER).value if k.value == "test_cases"
        ]
        for case, node in zip(cases, case_nodes.value, strict=True):
            if case.get("service_mode", "openai") == "openai":
                runs.append(_run(tag, path, case, node.start_mark.line + 1))
    return tuple(runs)
