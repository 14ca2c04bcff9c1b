"""What a sweep measures: a grid of load points and, if it starts the server, its settings."""

from __future__ import annotations

import itertools
import math
import shlex
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, field_validator, model_validator

#: The percentiles every point reports, for TTFT, TPOT, ITL and end-to-end latency.
PERCENTILES = (50, 90, 99)
LATENCY_METRICS = ("ttft", "tpot", "itl", "e2el")


class SweepError(ValueError):
    """Bad sweep input: the message names the flag and the fix."""


class LoadPoint(BaseModel, frozen=True, ser_json_inf_nan="constants"):
    """One ``vllm bench serve`` run: how many clients, how fast, how long each request is."""

    concurrency: int
    #: Requests per second the clients start; ``inf`` sends them as fast as the
    #: concurrency allows.
    request_rate: float
    input_len: int
    output_len: int
    num_prompts: int
    #: Server flags of this point's server (empty when the sweep does not start it).
    server_settings: dict[str, str] = Field(default_factory=dict)

    def label(self) -> str:
        parts = [f"{flag}={value}" for flag, value in self.server_settings.items()]
        parts += [f"in={self.input_len}", f"out={self.output_len}"]
        if not math.isinf(self.request_rate):
            parts.append(f"rate={self.request_rate:g}")
        return " ".join(parts)


def _positive(flag: str, values: list[float]) -> None:
    bad = [value for value in values if not value > 0]
    if bad:
        raise SweepError(f"{flag}: {bad} is not positive; give numbers above zero")


class SweepConfig(BaseModel):
    """The whole sweep. Each list is one axis of the grid; every combination is run."""

    base_url: str
    #: The name clients send as ``model``.
    model: str
    #: Where ``vllm bench serve`` loads the tokenizer that sizes the random prompts.
    tokenizer: str
    endpoint: str = "/v1/chat/completions"
    # __grid_start__
    concurrency: list[int] = [1, 8, 32]
    request_rate: list[float] = [math.inf]
    input_len: list[int] = [1024]
    output_len: list[int] = [128]
    #: Requests per point; every point gets the same number, so their figures compare.
    num_prompts: int = 64
    #: Server command the sweep starts (and stops) for each combination of ``serve_params``.
    serve_cmd: list[str] = []
    #: Server flag (``--max-num-seqs``) -> values to try, one server per combination.
    serve_params: dict[str, list[str]] = {}
    # __grid_end__
    server_ready_timeout_s: float = 1800
    #: How long ``vllm bench serve`` retries a failing first request (every 5 s)
    #: before it gives the point up; the sweep has checked the server already.
    ready_check_timeout_s: int = 10
    seed: int = 0
    #: Greedy decoding, as vLLM-Ascend's CI performance cases run (tools/aisbench.py):
    #: the same prompts then give the same tokens on every run and every server.
    temperature: float = 0.0
    out_dir: Path = Path("bench-results")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise SweepError(
                f"--base-url {url!r} is not an http(s) URL; give the server's root, "
                "for example http://127.0.0.1:8000"
            )
        if parts.path.rstrip("/").endswith("/v1"):
            raise SweepError(
                f"--base-url {url!r} ends in /v1; give the server's root: "
                f"{url.rstrip('/').removesuffix('/v1')}"
            )
        return url.rstrip("/")

    @model_validator(mode="after")
    def _consistent(self) -> SweepConfig:
        _positive("--concurrency", self.concurrency)
        _positive("--request-rate", self.request_rate)
        _positive("--input-len", self.input_len)
        _positive("--output-len", self.output_len)
        if self.num_prompts < max(self.concurrency):
            raise SweepError(
                f"--num-prompts {self.num_prompts} is below --concurrency {max(self.concurrency)}, "
                f"so that point would never reach its concurrency; raise --num-prompts to at "
                f"least {max(self.concurrency)}"
            )
        if self.serve_params and not self.serve_cmd:
            raise SweepError(
                "--serve-param needs --serve-cmd: the sweep can only change the settings "
                "of a server it starts itself"
            )
        if self.serve_cmd:
            self._check_port()
        for flag in self.serve_params:
            if flag in self.serve_cmd:
                raise SweepError(
                    f"--serve-param {flag} is also in --serve-cmd; leave it out of --serve-cmd"
                )
        return self

    def _check_port(self) -> None:
        url_port = urlsplit(self.base_url).port or 80
        argv = self.serve_cmd
        cmd_port = next((argv[i + 1] for i, w in enumerate(argv[:-1]) if w == "--port"), None)
        if cmd_port != str(url_port):
            raise SweepError(
                f"--serve-cmd serves on port {cmd_port or '(unset)'} but --base-url points at "
                f"port {url_port}; put --port {url_port} in --serve-cmd"
            )

    def server_settings(self) -> list[dict[str, str]]:
        """Each server's flags: every combination of ``serve_params`` (one empty one without)."""
        flags = list(self.serve_params)
        return [
            dict(zip(flags, values, strict=True))
            for values in itertools.product(*self.serve_params.values())
        ]

    def points(self, server_settings: dict[str, str]) -> list[LoadPoint]:
        """The load points run against one server, in order."""
        return [
            LoadPoint(
                concurrency=concurrency,
                request_rate=rate,
                input_len=input_len,
                output_len=output_len,
                num_prompts=self.num_prompts,
                server_settings=server_settings,
            )
            for input_len, output_len, rate, concurrency in itertools.product(
                self.input_len, self.output_len, self.request_rate, self.concurrency
            )
        ]

    def serve_argv(self, server_settings: dict[str, str]) -> list[str]:
        return [*self.serve_cmd, *itertools.chain.from_iterable(server_settings.items())]

    def describe_serve(self, server_settings: dict[str, str]) -> str:
        return shlex.join(self.serve_argv(server_settings))
