"""Serve one model of vLLM-Ascend's nightly CI or tutorials with Ray Serve LLM, as they run it.

Run it inside the vLLM-Ascend container, on a node where ``ray start --head`` has run
(on the head node of a Ray cluster of the run's nodes, for a run of several nodes),
with ``MODEL_PATH`` set to the model's weights: ``python serve_model.py RUN``, where
RUN names a test case of vLLM-Ascend's nightly CI at the release the recipes pin, one
of its multi-node configs of one engine, or a command of a tutorial for a model the CI
doesn't serve (``python serve_model.py --list`` lists them; ``--show RUN`` prints the
arguments of its ``LLMConfig``, to start a recipe of your own from). A run that
``ray-serve-npu check`` says would stop at start-up is not started. The app answers
OpenAI-compatible requests on http://127.0.0.1:8000/v1, as the model's name in lower
case.

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
from ray_serve_npu.model_recipes import ModelRecipe, find_run, recipe_for, run_key
from ray_serve_npu.releases import SERVE_LLM_RELEASE
from ray_serve_npu.releases.runs import serve_runs


# __model_start__
def chosen_recipe() -> ModelRecipe | None:
    """The recipe of the run the command line names; None where it lists or shows runs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", help="the CI's test case, as --list names it")
    parser.add_argument("--list", action="store_true", help="list the runs and exit")
    parser.add_argument(
        "--show", action="store_true", help="print the run's LLMConfig arguments and exit"
    )
    args = parser.parse_args()
    tag = SERVE_LLM_RELEASE.tag
    if args.list or not args.run:
        for run in serve_runs(tag):
            nodes = f" on {run.nodes} nodes" if run.nodes > 1 else ""
            print(f"{run_key(run)}: {run.model}, {run.npus} NPUs{nodes}")
        return None
    try:
        run = find_run(args.run, tag)
    except LookupError as error:
        sys.exit(f"serve_model.py: {error}")
    if args.show:
        # What the config would be, with the path it would read.
        model_path = os.environ.get("MODEL_PATH", "$MODEL_PATH")
    elif "MODEL_PATH" in os.environ:
        model_path = os.environ["MODEL_PATH"]
    else:
        sys.exit(f"serve_model.py: set MODEL_PATH to the directory of {run.model}'s weights")
    recipe = recipe_for(run, model_path)
    for dropped in recipe.dropped:
        print(f"serve_model.py: leaves out {dropped.name}: {dropped.why}", file=sys.stderr)
    if args.show:
        print(json.dumps(recipe.llm_config, indent=2))
        return None
    return recipe


# __model_end__


def refuse_what_would_not_start(recipe: ModelRecipe) -> None:
    """Stop before Ray starts anything where the checker says the run's settings stop the
    engine at start-up (a tutorial's command may pair settings its vLLM refuses)."""
    errors = [f for f in check_serve_run(recipe.run) if f.severity is Severity.ERROR]
    for error in errors:
        print(f"serve_model.py: {error.rule_id}: {error.message} Fix: {error.fix}", file=sys.stderr)
    if errors:
        sys.exit(
            f"serve_model.py: {run_key(recipe.run)} would stop at start-up as its source "
            f"writes it; start a recipe of your own from `python serve_model.py --show "
            f"{run_key(recipe.run)}` and fix what the lines above name"
        )


def main() -> None:
    recipe = chosen_recipe()
    if recipe is None:
        return
    refuse_what_would_not_start(recipe)
    # __run_start__
    # Imported here: --list and --show need neither Ray nor vLLM.
    from ray import serve
    from ray.serve.llm import LLMConfig

    from ray_serve_npu import build_dp_openai_app, build_openai_app

    llm_config = LLMConfig(**recipe.llm_config)
    if recipe.data_parallel:
        app = build_dp_openai_app({"llm_config": llm_config})
    else:
        app = build_openai_app({"llm_configs": [llm_config]})
    serve.run(app, blocking=True)
    # __run_end__


if __name__ == "__main__":
    main()
