"""Serve models of vLLM-Ascend's nightly CI or tutorials with Ray Serve LLM, as they run them.

Run it inside the vLLM-Ascend container, on a node where ``ray start --head`` has run
(on the head node of a Ray cluster of the run's nodes, for a run of several nodes),
with ``MODEL_PATH`` set to the model's weights: ``python serve_model.py RUN``, where
RUN names a test case of vLLM-Ascend's nightly CI at the release the recipes pin, one
of its multi-node configs of one engine, or a command of a tutorial for a model the CI
doesn't serve (``python serve_model.py --list`` lists them; ``--show RUN`` prints the
arguments of its ``LLMConfig``, to start a recipe of your own from; ``--compose RUN``
prints a Docker Compose file that serves it with ``vllm serve`` instead, with no Ray). A run that
``ray-serve-npu check`` says would stop at start-up is not started. The app answers
OpenAI-compatible requests on http://127.0.0.1:8000/v1, as the model's name in lower
case.

``python serve_model.py RUN RUN...`` serves several runs as one app, each model under its
own name, on the NPUs of all of them together (none may run data parallel), with
``MODELS_DIR`` set to the directory that holds each model's weights in a folder named as
its repository (``$MODELS_DIR/Qwen3-32B-W8A8``).

The engine's settings and environment are the run's own, read from its CI config or
tutorial page at the tag by ``ray_serve_npu.model_recipes``; the script prints what of
the run it leaves out (what Ray Serve LLM does itself, such as the port and the API
server, and what would open the endpoint wider), and why. DeepSeek-V4-Flash has a
readable recipe of its own: serve_npu.py and serve_npu_a3.py.
"""

import argparse
import json
import os
import sys

from ray_serve_npu.check import Severity, check_serve_run
from ray_serve_npu.model_compose import ComposeError, compose_for
from ray_serve_npu.model_recipes import ModelRecipe, find_run, recipe_for, run_key
from ray_serve_npu.releases import SERVE_LLM_RELEASE
from ray_serve_npu.releases.nightly import ServeRun
from ray_serve_npu.releases.runs import serve_runs


# __model_start__
def chosen_recipes() -> list[ModelRecipe]:
    """The recipes of the runs the command line names; none where it lists or shows runs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "runs", nargs="*", metavar="RUN", help="the runs, as --list names them; several are one app"
    )
    parser.add_argument("--list", action="store_true", help="list the runs and exit")
    parser.add_argument(
        "--show", action="store_true", help="print each run's LLMConfig arguments and exit"
    )
    parser.add_argument(
        "--compose",
        action="store_true",
        help="print a Docker Compose file that serves the run with `vllm serve`, and exit",
    )
    parser.add_argument(
        "--node-kind", help="with --compose: A2 or A3, where the run's source names none or both"
    )
    args = parser.parse_args()
    if args.list + args.show + args.compose > 1:
        parser.error("--list, --show and --compose each print one thing; pass one of them")
    if args.node_kind and not args.compose:
        parser.error("--node-kind goes with --compose")
    if args.compose and not args.runs:
        parser.error("--compose needs the RUN to write a Compose file for")
    tag = SERVE_LLM_RELEASE.tag
    if args.list or not args.runs:
        for run in serve_runs(tag):
            nodes = f" on {run.nodes} nodes" if run.nodes > 1 else ""
            print(f"{run_key(run)}: {run.model}, {run.npus} NPUs{nodes}")
        return []
    try:
        runs = [find_run(name, tag) for name in args.runs]
    except LookupError as error:
        sys.exit(f"serve_model.py: {error}")
    if args.compose:
        if len(runs) > 1:
            sys.exit("serve_model.py: a Compose file of --compose serves one run; name one")
        print_compose(runs[0], args.node_kind)
        return []
    models = [run.model for run in runs]
    if len(set(models)) < len(models):
        twice = sorted({run_key(run) for run in runs if models.count(run.model) > 1})
        sys.exit(f"serve_model.py: {', '.join(twice)} serve the same model; name one of them")
    if len(runs) > 1 and any(run.data_parallel > 1 for run in runs):
        sys.exit(
            "serve_model.py: a data-parallel app serves one model; serve "
            + ", ".join(run_key(run) for run in runs if run.data_parallel > 1)
            + " on its own"
        )
    recipes = [
        recipe_for(run, model_path(run, several=len(runs) > 1, show=args.show)) for run in runs
    ]
    for recipe in recipes:
        which = f"{run_key(recipe.run)} " if len(recipes) > 1 else ""
        for dropped in recipe.dropped:
            print(
                f"serve_model.py: {which}leaves out {dropped.name}: {dropped.why}", file=sys.stderr
            )
    if args.show:
        shown = [recipe.llm_config for recipe in recipes]
        print(json.dumps(shown if len(shown) > 1 else shown[0], indent=2))
        return []
    return recipes


def model_path(run: ServeRun, *, several: bool, show: bool) -> str:
    """Where the run's weights are: MODEL_PATH for one run; for several, the folder of
    MODELS_DIR named as the weights' repository (``$MODELS_DIR/Qwen3-32B-W8A8``)."""
    variable = "MODELS_DIR" if several else "MODEL_PATH"
    if variable not in os.environ and not show:
        where = (
            "the directory that holds each run's weights, in a folder named as its repository"
            if several
            else f"the directory of {run.model}'s weights"
        )
        sys.exit(f"serve_model.py: set {variable} to {where}")
    # --show prints the config with the path it would read.
    found = os.environ.get(variable, f"${variable}")
    return f"{found}/{run.weights_folder}" if several else found


# __model_end__


def print_compose(run: ServeRun, node_kind: str | None) -> None:
    """Print the Compose file that serves ``run`` on one node, and on stderr what of the
    run it leaves out."""
    try:
        compose = compose_for(run, node_kind)
    except ComposeError as error:
        sys.exit(f"serve_model.py: {error}")
    for dropped in compose.dropped:
        print(f"serve_model.py: leaves out {dropped.name}: {dropped.why}", file=sys.stderr)
    print(compose.text(), end="")
    refuse_what_would_not_start(
        run, "fix what the lines above name in the file's `command` before you start it"
    )


def refuse_what_would_not_start(run: ServeRun, fix: str) -> None:
    """Exit with the checker's errors where they say the run's settings stop the engine at
    start-up (a tutorial's command may pair settings its vLLM refuses); ``fix`` says what
    to do instead."""
    errors = [f for f in check_serve_run(run) if f.severity is Severity.ERROR]
    for error in errors:
        print(f"serve_model.py: {error.rule_id}: {error.message} Fix: {error.fix}", file=sys.stderr)
    if errors:
        sys.exit(
            f"serve_model.py: {run_key(run)} would stop at start-up as its source writes it; " + fix
        )


def main() -> None:
    recipes = chosen_recipes()
    for recipe in recipes:
        refuse_what_would_not_start(
            recipe.run,
            f"start a recipe of your own from `python serve_model.py --show "
            f"{run_key(recipe.run)}` and fix what the lines above name",
        )
    if not recipes:
        return
    # __run_start__
    # Imported here: --list and --show need neither Ray nor vLLM.
    from ray import serve
    from ray.serve.llm import LLMConfig

    from ray_serve_npu import build_dp_openai_app, build_openai_app

    llm_configs = [LLMConfig(**recipe.llm_config) for recipe in recipes]
    if recipes[0].data_parallel:
        app = build_dp_openai_app({"llm_config": llm_configs[0]})
    else:
        # Several runs are one app: one endpoint, each model under its own name.
        app = build_openai_app({"llm_configs": llm_configs})
    serve.run(app, blocking=True)
    # __run_end__


if __name__ == "__main__":
    main()
