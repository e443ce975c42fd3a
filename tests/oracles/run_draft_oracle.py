"""Ask vLLM 0.33 which ``max_model_len`` it keeps when a separate draft model is shorter than
the target (``VllmConfig._limit_max_model_len_to_draft``); write the answers.

A research tool, never imported by the package or the tests. Why a script of its own: the
shared 0.33 tool (``../shared/oracles/tool-0.33/vllm_oracle.py``) has no flag for the draft
model, and on this CPU machine vLLM runs the V1 model runner (no Triton), where the limit does
not apply. So this script imports the tool unchanged, wraps its ``build_engine_args`` to put
the draft's directory (a copy of its config.json) in ``speculative_config["model"]``, and runs
with ``VLLM_USE_V2_MODEL_RUNNER=1``, which ``VllmConfig.use_v2_model_runner`` reads before its
Triton check. It records what vLLM's own config resolved — ``model_config.max_model_len``,
the draft's ``max_model_len`` and whether the draft shares the target's positions — from
``create_engine_config()`` alone (the KV plan would include the draft's own layers, which
kvledger does not plan). Run from the repository root, one run at a time, through the lock::

    flock /tmp/oracle.lock env VLLM_TARGET_DEVICE=cpu VLLM_USE_V2_MODEL_RUNNER=1 \\
        /work/venvs/vllm033/bin/python tests/oracles/run_draft_oracle.py \\
        > tests/oracles/vllm-0.33-draft-limit.jsonl

Output: one JSON line per run in ``RUNS``: ``target``, ``draft``, ``method``, ``command``
(the tool's flags plus the draft), ``resolved`` (the three values above and
``use_v2_model_runner``), or ``error``. ``tests/plan/test_draft_length.py`` replays them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / ".." / "shared"
TOOL = SHARED / "oracles" / "tool-0.33" / "vllm_oracle.py"
CONFIGS = SHARED / "configs"
# (target, draft, method, tool flags after the config)
RUNS: list[tuple[str, str, str, list[str]]] = [
    # Qwen3-32B (40,960 positions) with Qwen2.5-0.5B (32,768; same 151,936 vocabulary) as an
    # independent draft: the limit applies (method draft_model never shares positions).
    ("Qwen--Qwen3-32B.json", "Qwen--Qwen2.5-0.5B.json", "draft_model",
     ["--kv-cache-memory-bytes", "8GiB", "--num-speculative-tokens", "3"]),
    # The same at an explicit 16,384: the draft is longer, nothing changes.
    ("Qwen--Qwen3-32B.json", "Qwen--Qwen2.5-0.5B.json", "draft_model",
     ["--kv-cache-memory-bytes", "8GiB", "--max-model-len", "16384",
      "--num-speculative-tokens", "3"]),
]


def _tool() -> Any:
    spec = importlib.util.spec_from_file_location("vllm_oracle_033", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["vllm_oracle_033"] = module
    spec.loader.exec_module(module)
    return module


def _one(tool: Any, target: str, draft: str, method: str, flags: list[str]) -> dict[str, Any]:
    argv = [str(CONFIGS / target), *flags, "--speculative-method", method]
    command = " ".join(["vllm_oracle.py", target, *flags, "--speculative-method", method,
                        f"(speculative_config model: {draft})"])
    head: dict[str, Any] = {"target": target, "draft": draft, "method": method,
                            "command": command, "env": {"VLLM_USE_V2_MODEL_RUNNER": "1"}}
    args = tool.build_parser().parse_args(argv)
    draft_dir = tempfile.mkdtemp(prefix="vllm_oracle_draft_")
    shutil.copyfile(CONFIGS / draft, Path(draft_dir) / "config.json")
    plain = tool.build_engine_args

    def with_draft(a: Any, model_dir: str) -> Any:
        engine_args = plain(a, model_dir)
        engine_args.speculative_config = {**(engine_args.speculative_config or {}),
                                          "model": draft_dir}
        return engine_args

    tool.build_engine_args = with_draft
    model_dir, _ = tool._model_dir_for(args.config, None)
    try:
        tool.install_patches(args)
        vc = tool.build_vllm_config(args, model_dir)
        spec = vc.speculative_config
        return {**head, "resolved": {
            "max_model_len": vc.model_config.max_model_len,
            "draft_max_model_len": spec.draft_model_config.max_model_len,
            "draft_shares_target_positions": spec.draft_shares_target_positions(),
            "use_v2_model_runner": vc.use_v2_model_runner,
        }}
    except Exception as exc:  # the run's answer is its error
        return {**head, "error": f"{type(exc).__name__}: {exc}"[:2000]}
    finally:
        tool.build_engine_args = plain
        shutil.rmtree(model_dir, ignore_errors=True)
        shutil.rmtree(draft_dir, ignore_errors=True)


def main() -> int:
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # stdout is the answer
    tool = _tool()
    for target, draft, method, flags in RUNS:
        line = _one(tool, target, draft, method, flags)
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
