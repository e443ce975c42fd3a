"""``kvledger plan -- vllm serve MODEL --flags …``: plan exactly the deployment a serve line starts.

The pieces, each small and pure (no model is read until the translated plan runs):

- ``line.py``     the pasted text → environment assignments, launcher (``vllm serve``,
                  ``python -m sglang.launch_server``, …) and the engine's argv;
- ``table.py``    the engine's own flag table (``vllm-0.32.0.json``, ``sglang-0.5.23.json``),
                  dumped from the engine's parser by ``scripts/serve_flag_tables.py``;
- ``scan.py``     that argv read with argparse's rules as the engine applies them (``=``,
                  abbreviations, ``--no-…``, nargs, vLLM's ``--a.b`` JSON keys and ``-O3``);
- ``vllm_flags.py`` / ``sglang_flags.py``  every flag classified: mapped to a kvledger option,
                  cannot change memory (ignored, listed), changes only a reserve kvledger
                  estimates anyway (ignored, listed), or changes memory in a way kvledger does
                  not model (refused by name);
- ``translate.py`` the result: the kvledger ``plan`` argv, the notes, the recorded environment.
"""
