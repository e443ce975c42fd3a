"""``kvledger plan <catalog id> --json`` must start within 3× a bare interpreter
(``bench/startup.py``). Most of that budget is spent before kvledger runs, so the modules it
cannot afford are kept off the path, and this test says so when one comes back: the plan
classes are ``kvledger.records`` records (``dataclasses`` alone is about 1× a bare start),
annotations need no ``typing`` at run time, and ``rich`` is for the table output only.
``argparse`` is on the path: it is the CLI's one reader of a command line (a second,
argparse-free reader saved about 3.5 ms of a 38 ms run, and had to agree with it on every
line)."""

from __future__ import annotations

import json
import subprocess
import sys

ARGS = ["plan", "meta-llama/Meta-Llama-3.1-8B", "--engine", "vllm==0.33",
        "--kv-cache-memory-bytes", "10737418240", "--json"]
HEAVY = ("dataclasses", "typing", "inspect", "rich", "pathlib", "huggingface_hub", "importlib")


def test_a_catalog_plan_imports_none_of_the_heavy_modules() -> None:
    # A module the interpreter already loads before any code runs (a site .pth hook may import
    # importlib, say) costs the plan nothing: only what the plan itself adds is counted.
    bare = subprocess.run([sys.executable, "-c", "import sys; print(sorted(sys.modules))"],
                          capture_output=True, text=True, check=True).stdout
    heavy = tuple(m for m in HEAVY if repr(m) not in bare)
    code = (
        "import sys; from kvledger.cli.main import main; code = main(sys.argv[1:]); "
        f"print(sorted(m for m in {heavy!r} if m in sys.modules)); sys.exit(code)"
    )
    done = subprocess.run([sys.executable, "-c", code, *ARGS], capture_output=True, text=True,
                          check=True)
    *plan, loaded = done.stdout.strip().splitlines()
    # It did plan: 32 layers × 2 × 8 KV heads × 128 × 2 B = 131,072 B/token; a 16-token block
    # is 2 MiB, and 10 GiB holds 5,120 of them.
    assert json.loads("\n".join(plan))["num_blocks"] == 5120
    assert loaded == "[]"


# Each kvledger module on the path costs about 0.1 ms before its body runs (finder, stat, read,
# unmarshal: bench/startup.py --breakdown), some 0.01× of a bare interpreter. This many are on
# the path at this commit; one more is a start-up decision, not an accident (a check a rare
# config needs is imported where it is called: derive/guard.py's remote_code). 50: the engines'
# package and its leaf registry (plan/engines/__init__.py, registry.py) joined the path when the
# layouts moved under plan/engines/. 53: the one error tree (kvledger/errors.py), the plan
# options the CLI's commands share (cli/plan_options.py, out of main.py, which report.py
# imported back) and the bounded JSON reader (source/config_file.py, out of resolve.py, which
# sentence.py imported back): three files that closed import circles. 58: the release profiles
# (engines/release.py, the vLLM releases package, its profile, v0_32 and the model-type
# verdicts it words); 59: releases/current.py, the release being planned (gone since the release
# is bound to the layout; its place went to the batch defaults' split, below);
# 60: derive/bookkeeping.py, transformers' bookkeeping keys, which the guard knows on every row.
# 61: releases/v0_33.py, vLLM 0.33.0's profile.
# 62: the version's leaf (kvledger/version.py): the top level now names the planner, so the
# Hub's user agent can no longer read the version from it without a circle.
# 63: cli/vllm_launch_options.py, the vLLM launch flags (LoRA, --quantization, offload) every
# plan parser lists (their rules are imported only when one is given).
# 64: the launch's batch defaults (vllm serve's tier for the GPU), which every vLLM request
# resolves and the plan's JSON states: plan/batch_defaults.py (engine-neutral) and
# plan/engines/vllm/batch_defaults.py (vLLM's tiers).
# 65: 0.34's release profile (releases/v0_34.py) joined the path.
# 69: the profiles of vLLM 0.20, 0.28, 0.30 and 0.31 (releases/v0_20.py, …: one small module
# a release, each a replace() of the next newer one, which every vLLM plan binds from).
# 73: the profiles of vLLM 0.22, 0.23, 0.25 and 0.26 (releases/v0_22.py, …), the same way.
# 65: the older profiles are imported when asked for (releases/__init__.py _Profiles): a
# plan of the newest imports 0.34, 0.33 and 0.32 only.
# 65: the attention-backend choice left resolve.py for plan/engines/vllm/backend_choice.py,
# and dcp.py (decode context parallelism) left the path: its dcp_size() moved to resolve.py.
MODULES_ON_THE_PATH = 65


def test_a_catalog_plan_imports_no_more_kvledger_modules_than_it_did() -> None:
    code = (
        "import sys; from kvledger.cli.main import main; code = main(sys.argv[1:]); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kvledger')); sys.exit(code)"
    )
    done = subprocess.run([sys.executable, "-c", code, *ARGS], capture_output=True, text=True,
                          check=True)
    loaded = done.stdout.strip().splitlines()[-1]
    assert loaded.count("'kvledger") <= MODULES_ON_THE_PATH, loaded
