"""The docs harness: every code block on every page is checked, and with ``--run-recipes``, run.

Modules, one job each:

- :mod:`.problems`: the error a page gets, naming page, line and fix;
- :mod:`.markers`: the invisible ``% test: ...`` comments before a block;
- :mod:`.fences`: the fenced blocks and directives of a MyST page;
- :mod:`.literalinclude`: the lines a ``literalinclude`` shows, as Sphinx reads them;
- :mod:`.blocks`: the parsed page (blocks with their marker, language and text);
- :mod:`.status`: what each block's marker declares on each tier (run, checked statically,
  skipped with a reason, shown only), which runs are held to and the site shows;
- :mod:`.static_checks`: checks that need no server (compile, ``bash -n``, parse);
- :mod:`.server_config`: the model, host and port a page's server block serves;
- :mod:`.client_checks`: client blocks against that server config;
- :mod:`.output`: masked comparison of a block's output with the page's expected output;
- :mod:`.scenario`: runs one page in order against a tier;
- :mod:`.summary`: the tally printed at the end of the run;
- :mod:`.plugin`: the pytest plugin tying these to Sybil (loaded by the top-level conftest).
"""
