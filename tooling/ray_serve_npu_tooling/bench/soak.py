"""``nox -s bench -- --soak 30m``: the recipe under steady load for a long time, on the
fake-NPU tier.

recipes/serve_npu.py's app, adapted to the fake tier as the bench's other runs are,
serves on one fake node with the engine as fast as the CPU runs it. ``concurrency``
streaming clients each send their next request as soon as the last one ends. After a
warm-up that is not counted, every minute records the requests that ended in it, how
each that failed failed, the percentiles of their time to first token and end-to-end
time, and the resident memory of each process Ray started on the node. The figures, their
summary and plot are :mod:`.soak_figures`'. CPU figures of a tiny random model: whether
errors or memory grow with time, not NPU latency.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable

import httpx
import psutil

from ray_serve_npu_tooling.stream_client import StreamOutcome, stream_chat

from .processes import PROCESS_GONE, process_title
from .soak_figures import Minute, Percentiles, SoakRun, SoakSettings

#: ``30m``, ``1h``: a duration as the command line gives it, in whole minutes, the
#: soak's unit of record.
_DURATION = re.compile(r"^(\d+)([mh])$")
_SECONDS = {"m": 60, "h": 3600}
#: The processes whose memory the soak follows, by the start of the title Ray or vLLM
#: gives them: Serve's controller, proxy and replicas, and the engine's processes.
SERVING_TITLES = ("ray::", "VLLM::")
#: A Ray worker waiting for work: no process of Serve's.
IDLE_TITLE = "ray::IDLE"
#: The method a Ray actor runs, which Ray appends to its title while it runs it
#: (``ray::ProxyActor.receive_asgi_messages``): not part of the process's name.
_RUNNING_METHOD = re.compile(r"\.[a-z_]\w*$")


def parse_duration(text: str) -> int:
    """Seconds in ``text`` (``30m``, ``1h``); ValueError names the forms."""
    found = _DURATION.match(text.strip())
    if found is None or int(found[1]) == 0:
        raise ValueError(
            f"{text!r} is not a duration: write a whole number of minutes or hours (30m, 1h)"
        )
    return int(found[1]) * _SECONDS[found[2]]


def serving_memory(processes: Iterable[psutil.Process]) -> dict[str, float]:
    """Resident memory in MiB of each of ``processes`` (a cluster's) whose title
    :data:`SERVING_TITLES` names."""
    found = {}
    for process in processes:
        title = _RUNNING_METHOD.sub("", process_title(process) or "")
        if not title.startswith(SERVING_TITLES) or title == IDLE_TITLE:
            continue
        try:
            rss = process.memory_info().rss
        except PROCESS_GONE:
            continue
        found[f"{title} (pid {process.pid})"] = round(rss / 2**20, 1)
    return dict(sorted(found.items()))


async def _clients(
    base_url: str, model: str, settings: SoakSettings, until: float, ended: list[StreamOutcome]
) -> None:
    limits = httpx.Limits(max_connections=settings.concurrency)
    numbers = itertools.count()
    async with httpx.AsyncClient(limits=limits, timeout=settings.client_timeout_s) as client:

        async def one_client() -> None:
            while time.time() < until:
                body = {
                    "model": model,
                    "messages": [{"role": "user", "content": f"Request {next(numbers)}: count."}],
                    "max_tokens": settings.max_tokens,
                    # Every answer as long as asked: a steady load, whatever the model says.
                    "ignore_eos": True,
                }
                ended.append(await stream_chat(client, base_url, body, settings.client_timeout_s))

        await asyncio.gather(*(one_client() for _ in range(settings.concurrency)))


def _minute(index: int, outcomes: list[StreamOutcome], rss: dict[str, float]) -> Minute:
    done = [o for o in outcomes if o.completed]
    failed = [o for o in outcomes if not o.completed and not o.timed_out]
    errors = Counter(o.error or f"HTTP {o.status}" for o in failed)
    return Minute(
        minute=index,
        completed=len(done),
        errors=dict(errors),
        hung=sum(o.timed_out for o in outcomes),
        ttft=Percentiles.of([o.first_chunk_s for o in done if o.first_chunk_s is not None]),
        end_to_end=Percentiles.of([o.total_s for o in done]),
        rss_mib=rss,
    )


def soak(
    base_url: str,
    model: str,
    settings: SoakSettings,
    processes: Callable[[], Iterable[psutil.Process]],
    command: str,
) -> SoakRun:
    """Load ``base_url`` for the warm-up and then ``settings.duration_s``, minute by
    minute, reading the memory of the serving processes among ``processes()``."""
    ended: list[StreamOutcome] = []
    start = time.time() + settings.warmup_s
    until = start + settings.duration_s
    stopped: list[BaseException] = []

    def load_until_the_end() -> None:
        try:
            asyncio.run(_clients(base_url, model, settings, until, ended))
        except BaseException as error:  # the minutes below report it
            stopped.append(error)

    load = threading.Thread(target=load_until_the_end)
    load.start()
    time.sleep(max(0.0, start - time.time()))
    rss_at_start = serving_memory(processes())
    started_at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(start))
    minutes = []
    for index in range(1, settings.duration_s // 60 + 1):
        time.sleep(max(0.0, start + 60 * index - time.time()))
        if stopped:
            # Figures of a load that is gone would read as an idle, healthy app.
            raise RuntimeError(
                f"the soak's clients stopped before minute {index} ended: {stopped[0]!r}"
            ) from stopped[0]
        low, high = start + 60 * (index - 1), start + 60 * index
        minute = _minute(
            index, [o for o in list(ended) if low <= o.ended_at < high], serving_memory(processes())
        )
        print(f"minute {index}: {minute.completed} completed, "
              f"{sum(minute.errors.values())} failed, {minute.hung} hung, "
              f"TTFT p50 {minute.ttft.ms.get('p50')} ms, "
              f"RSS {sum(minute.rss_mib.values()):.0f} MiB", flush=True)  # fmt: skip
        minutes.append(minute)
    load.join()
    # A request still open at the end ends up to a client timeout later; it belongs to
    # the last minute, where a hang near the end would otherwise go uncounted.
    if minutes:
        last = minutes[-1]
        low = start + 60 * (last.minute - 1)
        minutes[-1] = _minute(last.minute, [o for o in ended if o.ended_at >= low], last.rss_mib)
    return SoakRun(
        settings=settings,
        started_at=started_at,
        command=command,
        rss_mib_at_start=rss_at_start,
        minutes=minutes,
    )
