"""The runs of vLLM-Ascend's nightly hardware CI at each release, as data.

``nightly/<tag>/*.yaml`` are vLLM-Ascend's own
``tests/e2e/nightly/single_node/models/configs/*.yaml`` at that release, and
``nightly/<tag>/multi_node/`` its ``tests/e2e/nightly/multi_node/*/config/*.yaml``,
copied unchanged (``nightly/README.md`` says from where). Each single-node test case is
a run: a model, its environment and the words after ``vllm serve MODEL``, which this
module reads as that release's vLLM reads them (:mod:`ray_serve_npu.vllm_flags`), with
the file and line it comes from. A multi-node config of one engine whose data-parallel
ranks span its nodes is a run too, read from its first node's command. The other
multi-node configs (prefill/decode separation, external data parallelism), and the
configs the release's CI schedule runs only on hardware this project does not serve
(Atlas 300I Duo cards, Atlas 950DT nodes), are set aside, each with what it runs, so
that a reader sees them listed, not dropped.
"""

from __future__ import annotations

import re
import shlex
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel

from ray_serve_npu.releases.loader import DATA_DIR, release
from ray_serve_npu.vllm_flags import ParseError, read_flags, stored_flags

#: Where the copies live, one folder per release tag.
NIGHTLY_DIR = DATA_DIR / "nightly"
#: Where the files are in vLLM-Ascend's repository: the single-node configs, and the
#: folder whose tree ``nightly/<tag>/multi_node/`` copies.
UPSTREAM_DIR = "tests/e2e/nightly/single_node/models/configs"
UPSTREAM_NIGHTLY = "tests/e2e/nightly"
#: The multi-node configs of one engine over several nodes, and of one server per rank.
INTERNAL_DP_DIR = "multi_node/internal_dp/config"
EXTERNAL_DP_DIR = "multi_node/external_dp/config"
#: Engine settings each node of a multi-node run sets for itself: its data-parallel
#: ranks and where they meet, and whether it serves the API. A config whose nodes
#: differ in anything else is set aside: one LLMConfig sets every rank alike.
PER_NODE_SETTINGS = frozenset(
    {"headless", "data_parallel_start_rank", "data_parallel_address", "port", "host"}
)
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
_SCHEDULE_NOT_SERVED = {
    "310p": "Atlas 300I Duo inference cards, which this project does not serve",
    # From v0.27.1rc1: the schedule's a5 section runs on linux-aarch64-a5-* runners with
    # the -a5 images (.github/workflows/schedule_nightly_test_a5.yaml), which the release
    # data gives Atlas 950DT.
    "a5": "Atlas 950DT (A5) nodes, which this project does not serve (ray_serve_npu.hardware "
    "knows A2 and A3 only)",
}
#: A node kind's sections whose configs run on one node, and those whose configs run on
#: several (each entry's ``size``); the others list accuracy groups.
_ONE_NODE_SECTIONS = ("single_node", "multi_card")
_MULTI_NODE_SECTIONS = ("multi_node", "double_node")
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
    #: The runner's label; None for a multi-node entry, which names its nodes' count.
    runner: str | None
    #: The NPUs the runner's label gives; None for a multi-node entry.
    devices: int | None
    #: The nodes the entry runs the config on.
    nodes: int = 1
    #: The line of the config's entry in the schedule.
    line: int


class ServeRun(BaseModel):
    """One deployment that vLLM-Ascend gives at a release, what it serves and how: a test
    case of its nightly CI, or a command of a model's tutorial
    (:mod:`ray_serve_npu.releases.tutorials`)."""

    release: str
    #: The file's path in vLLM-Ascend's repository, and the line of the case in it.
    path: str
    line: int
    name: str
    model: str
    #: A2 or A3 where the file's or the case's name ends in it (a tutorial: the tab the
    #: command sits in names it), else None.
    node_kind: str | None
    envs: dict[str, str]
    #: The words after ``vllm serve MODEL``: server_cmd, then server_cmd_extra
    #: (single_node_config.py:165-167 at v0.25.1rc1), with ``$NAME`` filled from envs.
    argv: list[str]
    #: Each setting ``argv`` gives, by its engine keyword, as the release's vLLM parses
    #: it: only what the words give, never a default.
    settings: dict[str, Any]
    #: Where the release's schedule runs the run's config; empty where it doesn't, or
    #: where the release keeps no schedule.
    schedule: tuple[Scheduled, ...] = ()
    #: The nodes the run spans: 1, or a multi-node config's ``num_nodes``.
    nodes: int = 1
    #: The words of each further node (``--headless``, its own start rank), for checks
    #: that read every command line the CI runs.
    other_nodes_argv: tuple[tuple[str, ...], ...] = ()

    @property
    def node_kinds(self) -> tuple[str, ...]:
        """The node kinds the run is for: the one its name gives, else the schedule's."""
        if self.node_kind:
            return (self.node_kind,)
        return tuple(sorted({entry.node_kind for entry in self.schedule}))

    @property
    def weights_folder(self) -> str:
        """The folder name of the run's weights: its model's repository name
        (``Qwen3-32B-W8A8`` for ``vllm-ascend/Qwen3-32B-W8A8``)."""
        return self.model.rsplit("/", 1)[-1]

    @property
    def served_name(self) -> str:
        """The name the recipes serve the model as: its folder name in lower case."""
        return self.weights_folder.lower()

    @property
    def tensor_parallel(self) -> int:
        return self.settings.get("tensor_parallel_size") or 1

    @property
    def data_parallel(self) -> int:
        return self.settings.get("data_parallel_size") or 1

    @property
    def pipeline_parallel(self) -> int:
        return self.settings.get("pipeline_parallel_size") or 1

    @property
    def expert_parallel(self) -> bool:
        return bool(self.settings.get("enable_expert_parallel"))

    @property
    def max_model_len(self) -> int | None:
        return self.settings.get("max_model_len")

    @property
    def quantization(self) -> str | None:
        return self.settings.get("quantization")

    @property
    def speculative_method(self) -> str | None:
        """Its speculative decoding's method (``mtp``), else None."""
        return (self.settings.get("speculative_config") or {}).get("method")

    @property
    def speculative_tokens(self) -> int | None:
        """The number of tokens its speculative decoding proposes, else None."""
        return (self.settings.get("speculative_config") or {}).get("num_speculative_tokens")

    @property
    def npus(self) -> int:
        """The NPUs the run's engine uses on all its nodes: tensor × data × pipeline
        parallel."""
        return self.tensor_parallel * self.data_parallel * self.pipeline_parallel


class SetAside(BaseModel):
    """A multi-node config of the nightly CI, or a tutorial's deployment, that is not one
    engine: listed with what it runs, so that a reader sees why no recipe is built from
    it."""

    release: str
    #: The file's path in vLLM-Ascend's repository, and the line of its test name (a
    #: tutorial: of its first such command).
    path: str
    line: int
    #: The file's name without ``.yaml`` or ``.md``.
    name: str
    model: str
    #: The nodes it runs on; None where a tutorial's commands don't say.
    nodes: int | None
    #: ``prefill_decode``: prefill and decode engines joined by a KV-cache connector
    #: (``connector`` names it); ``nodes_differ``: one engine whose nodes set the
    #: settings ``differ`` names each their own way; ``not_served``: a config the
    #: release's schedule runs only on hardware this project does not serve
    #: (``not_served_on`` names the schedule's sections).
    layout: Literal["prefill_decode", "nodes_differ", "not_served"]
    #: One ``vllm serve`` per data-parallel rank behind the CI's proxy (``external_dp``).
    external: bool = False
    connector: str | None = None
    differ: tuple[str, ...] = ()
    #: The schedule's sections that run a ``not_served`` config (``310p``, ``a5``);
    #: :func:`not_served_because` says what hardware each names.
    not_served_on: tuple[str, ...] = ()


#: A variable the CI fills in a command from the node's environment: ``$NAME`` or
#: ``${NAME}`` (multi_node/internal_dp/scripts/multi_node_config.py:209-217 at v0.25.1rc1).
_VARIABLE = re.compile(r"\$(\w+)|\$\{(\w+)\}")


def _envs(raw: dict[str, Any]) -> dict[str, str]:
    return {k: A_FREE_PORT if v == "DEFAULT_PORT" else str(v) for k, v in raw.items()}


def _fill(words: list[str], envs: dict[str, str]) -> list[str]:
    """``words`` with each variable the environment sets filled in; the others (the
    node's IP addresses, which the CI learns at run time) left as written."""
    return [_VARIABLE.sub(lambda m: envs.get(m[1] or m[2], m[0]), str(word)) for word in words]


def _argv(case: dict[str, Any]) -> list[str]:
    return _fill([*case["server_cmd"], *case.get("server_cmd_extra", [])], _envs(case["envs"]))


def _mapping(node: yaml.Node | None) -> dict[str, yaml.Node]:
    return {k.value: v for k, v in node.value} if isinstance(node, yaml.MappingNode) else {}


def _load(path: Path) -> tuple[Any, dict[str, yaml.Node]]:
    """A config as vLLM-Ascend's runner reads it (PyYAML: the files repeat ``<<`` in one
    mapping, which YAML 1.2 readers refuse), and its top-level nodes, for their lines."""
    text = path.read_text(encoding="utf-8")
    return yaml.load(text, Loader=_SAFE_LOADER), _mapping(yaml.compose(text, Loader=_SAFE_LOADER))


def _schedule_sections(tag: str) -> list[tuple[yaml.Node, yaml.Node]]:
    """The schedule's sections, each its key and body; none where the release keeps no
    schedule."""
    path = NIGHTLY_DIR / tag / SCHEDULE_FILE
    if not path.is_file():
        return []
    return yaml.compose(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER).value


@cache
def not_served_schedule(tag: str) -> dict[tuple[str, bool], tuple[str, ...]]:
    """The sections of the release's schedule that name hardware this project does not
    serve (``310p``, ``a5``), by the file name of each config they run and whether they
    run it on several nodes."""
    found: dict[tuple[str, bool], list[str]] = {}
    for section_key, sections in _schedule_sections(tag):
        if section_key.value not in _SCHEDULE_NOT_SERVED:
            continue
        for kind_key, body in sections.value:
            if kind_key.value not in (*_ONE_NODE_SECTIONS, *_MULTI_NODE_SECTIONS):
                continue
            for entry in _mapping(body)["test_config"].value:
                fields = {k.value: v.value for k, v in entry.value}
                if "config_file_path" in fields:
                    key = (fields["config_file_path"], kind_key.value in _MULTI_NODE_SECTIONS)
                    found.setdefault(key, []).append(section_key.value)
    return {name: tuple(dict.fromkeys(sections)) for name, sections in found.items()}


@cache
def schedule(tag: str) -> dict[str, tuple[Scheduled, ...]]:
    """Where the release's nightly CI runs each config, by the config's file name, on one
    node or several; empty where the release keeps no schedule (before v0.23.0 it had
    none). Sections of hardware this project does not serve are left out here and listed
    by :func:`not_served_schedule`."""
    path = NIGHTLY_DIR / tag / SCHEDULE_FILE
    found: dict[str, list[Scheduled]] = {}
    for section_key, sections in _schedule_sections(tag):
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
            if kind_key.value not in (*_ONE_NODE_SECTIONS, *_MULTI_NODE_SECTIONS):
                continue
            for entry in _mapping(body)["test_config"].value:
                fields = {k.value: v.value for k, v in entry.value}
                if "config_file_path" not in fields:
                    continue  # a pytest file, not a config
                where = f"{path}:{entry.start_mark.line + 1}"
                if kind_key.value in _MULTI_NODE_SECTIONS:
                    runner, devices, nodes = None, None, int(fields["size"])
                elif (label := _RUNNER_DEVICES.search(fields["os"])) is None:
                    raise ValueError(
                        f"{where}: runner {fields['os']!r} names no device count; extend "
                        "_RUNNER_DEVICES in nightly.py"
                    )
                else:
                    runner, devices, nodes = fields["os"], int(label[1]), 1
                found.setdefault(fields["config_file_path"], []).append(
                    Scheduled(
                        node_kind=_SCHEDULE_NODE_KINDS[section],
                        section=section,
                        runner=runner,
                        devices=devices,
                        nodes=nodes,
                        line=entry.start_mark.line + 1,
                    )
                )
    return {name: tuple(entries) for name, entries in found.items()}


def _scheduled(tag: str, file_name: str, nodes: int) -> tuple[Scheduled, ...]:
    """The schedule's entries for a config of ``nodes`` nodes: a single-node and a
    multi-node config may share a file name."""
    return tuple(e for e in schedule(tag).get(file_name, ()) if (e.nodes > 1) == (nodes > 1))


def _not_served(tag: str, file_name: str, nodes: int) -> tuple[str, ...]:
    """The schedule's sections of hardware this project does not serve that run a config,
    where the schedule runs it on no node kind this project serves; else empty."""
    sections = not_served_schedule(tag).get((file_name, nodes > 1), ())
    return () if _scheduled(tag, file_name, nodes) else sections


def not_served_because(sections: tuple[str, ...]) -> str:
    """What hardware the schedule's ``sections`` name, and why this project serves none
    of it."""
    return "; ".join(f"{section}: {_SCHEDULE_NOT_SERVED[section]}" for section in sections)


def read_run(
    tag: str,
    path: str,
    line: int,
    name: str,
    model: str,
    envs: dict[str, str],
    argv: list[str],
    *,
    node_kind: str | None,
    nodes: int = 1,
    other_nodes_argv: tuple[tuple[str, ...], ...] = (),
    scheduled: tuple[Scheduled, ...] = (),
) -> ServeRun:
    """A run of release ``tag``: ``argv``, the words after ``vllm serve MODEL``, read as
    the release's vLLM reads them."""
    return ServeRun(
        release=tag,
        path=path,
        line=line,
        name=name,
        model=model,
        node_kind=node_kind,
        envs=envs,
        argv=argv,
        settings=settings_of(tag, argv, f"{path}:{line}"),
        schedule=scheduled,
        nodes=nodes,
        other_nodes_argv=other_nodes_argv,
    )


def _ci_run(
    tag: str,
    path: str,
    line: int,
    name: str,
    model: str,
    envs: dict[str, Any],
    argv: list[str],
    nodes: int = 1,
    other_nodes_argv: tuple[tuple[str, ...], ...] = (),
) -> ServeRun:
    """A run of the CI: its node kind from its file's or its name's end, its schedule."""
    file_name = path.rsplit("/", 1)[1]
    named = _NODE_KIND.search(file_name.removesuffix(".yaml")) or _NODE_KIND.search(name)
    return read_run(
        tag,
        path,
        line,
        name,
        model,
        {k: str(v) for k, v in envs.items()},
        argv,
        node_kind=named[1].upper() if named else None,
        nodes=nodes,
        other_nodes_argv=other_nodes_argv,
        scheduled=_scheduled(tag, file_name, nodes),
    )


def _single_node_runs(tag: str, folder: Path) -> tuple[list[ServeRun], list[SetAside]]:
    """The runs of the single-node configs, and the cases of those the schedule runs
    only on hardware this project does not serve, set aside."""
    runs, set_aside = [], []
    for path in sorted(folder.glob("*.yaml")):
        config, root = _load(path)
        upstream = f"{UPSTREAM_DIR}/{path.name}"
        not_served = _not_served(tag, path.name, 1)
        for case, node in zip(config["test_cases"], root["test_cases"].value, strict=True):
            if case.get("service_mode", "openai") != "openai":
                continue
            line = node.start_mark.line + 1
            if not_served:
                set_aside.append(
                    SetAside(
                        release=tag,
                        path=upstream,
                        line=line,
                        name=path.stem,
                        model=case["model"],
                        nodes=1,
                        layout="not_served",
                        not_served_on=not_served,
                    )
                )
                continue
            runs.append(
                _ci_run(tag, upstream, line, case["name"], case["model"], case["envs"], _argv(case))
            )
    return runs, set_aside


def _node_words(deployment: dict[str, Any], where: str) -> tuple[dict[str, str], list[str]]:
    """A node's environment and the words after ``vllm serve MODEL`` in its command,
    split as the CI splits it (internal_dp/scripts/test_multi_node.py:44-51 at
    v0.25.1rc1)."""
    envs = _envs(deployment.get("envs") or {})
    words = _fill(shlex.split(deployment["server_cmd"]), envs)
    if words[:2] != ["vllm", "serve"] or len(words) < 3:
        raise ValueError(f"{where}: the node's command does not start `vllm serve MODEL`")
    return envs, words[3:]


def settings_of(tag: str, argv: list[str], where: str) -> dict[str, Any]:
    """Each setting ``argv`` gives, by its engine keyword, as release ``tag``'s vLLM parses
    it; a ValueError names ``where`` (``FILE:LINE``) for a value that vLLM refuses, such
    as one a shell variable would fill."""
    try:
        return stored_flags(release(tag).vllm).given(argv)
    except ParseError as error:
        raise ValueError(
            f"{where}: {error}: a run's values must be written out, not filled by the shell "
            "when the command runs; set the config or page aside in "
            "ray_serve_npu/releases/, with why"
        ) from None


def node_differences(
    tag: str, nodes: list[tuple[dict[str, str], list[str], str]]
) -> tuple[str, ...]:
    """The engine settings and variables some node sets unlike the first, less those each
    node sets for itself (PER_NODE_SETTINGS); each node is its environment, its words and
    where they are written."""
    envs, argv, where = nodes[0]
    head = {k: v for k, v in settings_of(tag, argv, where).items() if k not in PER_NODE_SETTINGS}
    differ: set[str] = set()
    for other_envs, other, other_where in nodes[1:]:
        given = {
            k: v
            for k, v in settings_of(tag, other, other_where).items()
            if k not in PER_NODE_SETTINGS
        }
        differ |= {k for k in head.keys() | given.keys() if head.get(k) != given.get(k)}
        differ |= {k for k in envs.keys() | other_envs.keys() if envs.get(k) != other_envs.get(k)}
    return tuple(sorted(differ))


def _multi_node_runs(tag: str, folder: Path) -> tuple[list[ServeRun], list[SetAside]]:
    """The runs of the internal data-parallel configs, and the configs set aside."""
    runs, set_aside = [], []
    for path in sorted((folder / INTERNAL_DP_DIR).glob("*.yaml")):
        config, root = _load(path)
        upstream = f"{UPSTREAM_NIGHTLY}/{INTERNAL_DP_DIR}/{path.name}"
        entries = root["deployment"].value
        nodes = [
            (*_node_words(d, where := f"{upstream}:{n.start_mark.line + 1}"), where)
            for d, n in zip(config["deployment"], entries, strict=True)
        ]
        if not_served := _not_served(tag, path.name, len(nodes)):
            set_aside.append(
                _set_aside(
                    tag, upstream, config, root, "not_served", nodes[0][1], not_served_on=not_served
                )
            )
            continue
        if (config.get("disaggregated_prefill") or {}).get("enabled"):
            set_aside.append(_set_aside(tag, upstream, config, root, "prefill_decode", nodes[0][1]))
            continue
        envs, argv, _ = nodes[0]
        differ = node_differences(tag, nodes)
        if differ:
            set_aside.append(
                _set_aside(tag, upstream, config, root, "nodes_differ", argv, differ=differ)
            )
            continue
        # The line of the first node's command, which the run is read from.
        line = _mapping(entries[0])["server_cmd"].start_mark.line + 1
        others = tuple(tuple(words) for _, words, _ in nodes[1:])
        runs.append(
            _ci_run(tag, upstream, line, path.stem, config["model"], envs, argv, len(nodes), others)
        )
    for path in sorted((folder / EXTERNAL_DP_DIR).glob("*.yaml")):
        config, root = _load(path)
        upstream = f"{UPSTREAM_NIGHTLY}/{EXTERNAL_DP_DIR}/{path.name}"
        if (config.get("routing") or {}).get("type") != "disaggregated_prefill":
            routing = (
                _mapping(root.get("routing")).get("type", root["test_name"]).start_mark.line + 1
            )
            raise ValueError(
                f"{upstream}:{routing}: an external data-parallel "
                "config without prefill/decode routing; teach ray_serve_npu/releases/"
                "nightly.py to read its ranks' layout"
            )
        words = [str(w) for w in config["templates"][0]["server_cmd_template"]]
        set_aside.append(
            _set_aside(tag, upstream, config, root, "prefill_decode", words, external=True)
        )
    return runs, set_aside


def kv_connector(tag: str, words: list[str]) -> str | None:
    """The KV-cache connector ``--kv-transfer-config`` names in ``words``, read as the
    release's vLLM reads it; None where the words give none."""
    for flag in read_flags(words):
        if flag.name == "--kv-transfer-config":
            # Only this flag: the other words may hold values a script fills.
            given = stored_flags(release(tag).vllm).given(flag.argv())
            return (given["kv_transfer_config"] or {}).get("kv_connector")
    return None


def _set_aside(
    tag: str,
    upstream: str,
    config: dict[str, Any],
    root: dict[str, yaml.Node],
    layout: Literal["prefill_decode", "nodes_differ", "not_served"],
    first_node_words: list[str],
    *,
    external: bool = False,
    differ: tuple[str, ...] = (),
    not_served_on: tuple[str, ...] = (),
) -> SetAside:
    return SetAside(
        release=tag,
        path=upstream,
        line=root["test_name"].start_mark.line + 1,
        name=upstream.rsplit("/", 1)[1].removesuffix(".yaml"),
        model=config["model"],
        nodes=int(config["num_nodes"]),
        layout=layout,
        external=external,
        connector=kv_connector(tag, first_node_words),
        differ=differ,
        not_served_on=not_served_on,
    )


def stored_path(tag: str, upstream_path: str) -> Path:
    """Where the package keeps its copy of the file at ``upstream_path`` in vLLM-Ascend's
    repository at ``tag``."""
    if upstream_path.startswith(f"{UPSTREAM_DIR}/"):
        return NIGHTLY_DIR / tag / upstream_path.rsplit("/", 1)[1]
    return NIGHTLY_DIR / tag / upstream_path.removeprefix(f"{UPSTREAM_NIGHTLY}/")


def _folder(tag: str) -> Path:
    folder = NIGHTLY_DIR / tag
    if not folder.is_dir():
        held = ", ".join(sorted(p.name for p in NIGHTLY_DIR.iterdir() if p.is_dir()))
        raise LookupError(f"no nightly CI configs are stored for {tag}; they are for {held}")
    return folder


@cache
def _read(tag: str) -> tuple[tuple[ServeRun, ...], tuple[SetAside, ...]]:
    folder = _folder(tag)
    single_node, single_set_aside = _single_node_runs(tag, folder)
    multi_node, multi_set_aside = _multi_node_runs(tag, folder)
    return (*single_node, *multi_node), (*single_set_aside, *multi_set_aside)


def nightly_runs(tag: str) -> tuple[ServeRun, ...]:
    """Every run of one engine in the release's nightly CI: each single-node ``vllm
    serve`` case, file by file, then each multi-node config of one engine."""
    return _read(tag)[0]


def set_aside_configs(tag: str) -> tuple[SetAside, ...]:
    """The release's configs that are no run this project serves, with what each runs: the
    multi-node configs that are not one engine, and the configs (or cases) the schedule
    runs only on hardware this project does not serve."""
    return _read(tag)[1]
