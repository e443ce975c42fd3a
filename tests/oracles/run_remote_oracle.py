"""Ask vLLM 0.32 what KV cache it builds for remote-code model types, given exactly the keys
their config.json states; write the answers.

A research tool, never imported by the package or the tests. It needs the oracle venv
(``../shared/oracles/tool/README.md``), from the repository root, one run at a time::

    /work/oracle/vllm-venv/bin/python tests/oracles/run_remote_oracle.py \
        > tests/oracles/vllm-0.32/vllm-0.32-remote.jsonl
    /work/oracle/vllm-venv/bin/python tests/oracles/run_remote_oracle.py 3 8 \
        > some.jsonl          # some runs, by index in RUNS (merge them by "command")

Why a script of its own: these model types (internlm2, minicpm, mimo, exaone, deepseek, orion,
bailing_moe, ...) have no config class in transformers 5.19 or in vLLM 0.32's
``_CONFIG_REGISTRY``, so vLLM loads their config.json only with --trust-remote-code, by running
the checkpoint's own ``configuration_*.py`` (transformers_utils/config.py
``HFConfigParser.parse`` → ``AutoConfig.from_pretrained``). That Python is not here, and
kvledger never runs it. vLLM's *model* for each is its own (model_executor/models/registry.py
``_TEXT_GENERATION_MODELS``), reading attributes of whatever config object it is handed.

So this script gives vLLM the config as kvledger reads it: a plain ``PretrainedConfig`` carrying
exactly the keys the file states (a subclass whose only content is ``model_type``, registered
with ``AutoConfig.register`` in this process, so ``AutoConfig.from_pretrained`` builds it with
``from_dict``), with --trust-remote-code on as a user would pass it. The file's ``auto_map`` is
dropped from the copy vLLM reads (it only points at the Python that is not here; the run says
so in ``dropped_keys``). A key the remote class would fill in that the file omits is then
absent, and vLLM's model either raises (the run records it) or takes its own ``getattr``
default: kvledger's rows for these types require every key vLLM's model file reads to be
stated, so neither case is planned from a guessed default.

The shared ``vllm_oracle.py`` does the rest (imported, unchanged: its ``run``, with its own
``--trust-remote-code``), with ``_model_dir_for`` swapped to write the copy. Where a remote
class is public and does more than hold the keys (EXAONE's ``attribute_map``),
``CLASS_ATTRIBUTES`` gives the plain class that too, and the run records it. For ``--tp`` > 1
the tool runs each TP rank in a spawned process, which imports this file as ``__mp_main__``:
the registration is redone there from an environment variable.

Output: one JSON line per run in ``vllm-0.32-more.jsonl``'s format (``make_vllm_cases.py``),
plus ``why``, ``command``, ``dropped_keys`` and ``oracle_args``; a run vLLM refused carries
``vllm_refuses_to_start_with`` (type and first line of the error) instead of the plan.
``tests/plan/test_vllm_remote.py`` replays every line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from oracle_run import (  # noqa: E402
    first_error_line,
    release_tool,
    run_each,
    take_release,
    tool_case_line,
)

SHARED = HERE.parents[1] / ".." / "shared"
# The release asked (``--vllm 0.33``; 0.32 without it), passed to each --one child.
RELEASE, _ARGS = take_release(sys.argv[1:])
TOOL = release_tool(RELEASE)
DROPPED = ("auto_map",)
# What a remote class does beyond holding the stated keys, where it is public and cache-relevant:
# LG's ExaoneConfig (configuration_exaone.py, as SGLang 0.5.23 carries it in
# sglang/srt/configs/exaone.py) maps num_hidden_layers to the file's num_layers.
CLASS_ATTRIBUTES: dict[str, dict[str, Any]] = {
    "exaone": {"attribute_map": {"num_hidden_layers": "num_layers"}},
}

# (config file, oracle arguments, why). A file is read from ../shared/configs.
RUNS: list[tuple[str, list[str], str]] = [
    ("internlm--internlm2-7b.json", [], "internlm2 at its derived length, bf16"),
    ("internlm--internlm2-7b.json", ["--max-model-len", "8192", "--kv-cache-dtype", "fp8"],
     "internlm2 with an fp8 cache"),
    ("openbmb--MiniCPM4-8B.json", [], "minicpm (MiniCPM4, dense) at its derived length"),
    ("openbmb--MiniCPM4-8B.json", ["--max-model-len", "8192", "--block-size", "32"],
     "minicpm with blocks of 32 tokens"),
    ("openbmb--MiniCPM-MoE-8x2B.mlc.json", [], "minicpm MoE (num_experts 8)"),
    ("XiaomiMiMo--MiMo-7B-Base.json", [], "mimo: sliding_window stated with "
     "use_sliding_window false; given the stated keys alone vLLM windows every layer"),
    ("XiaomiMiMo--MiMo-7B-Base.json", ["--max-model-len", "8192", "--kv-cache-dtype", "fp8"],
     "mimo with an fp8 cache"),
    ("LGAI-EXAONE--EXAONE-3.5-7.8B-Instruct.json", [], "exaone v1 (num_layers, head_dim)"),
    ("LGAI-EXAONE--EXAONE-3.5-7.8B-Instruct.json",
     ["--max-model-len", "8192", "--kv-cache-dtype", "fp8"], "exaone with an fp8 cache"),
    ("deepseek-ai--deepseek-moe-16b.mlc.json", [], "deepseek v1 MoE (full K/V, not MLA)"),
    ("deepseek-ai--deepseek-moe-16b.mlc.json", ["--kv-cache-dtype", "fp8"],
     "deepseek v1 with an fp8 cache"),
    ("OrionStarAI--Orion-14B.mlc.json", [], "orion"),
    ("OrionStarAI--Orion-14B.mlc.json", ["--kv-cache-dtype", "fp8"], "orion, fp8 cache"),
    ("inclusionAI--Ling-lite.json", [], "bailing_moe (Ling-lite): states no head_dim, which "
     "bailing_moe.py reads as an attribute"),
    ("inclusionAI--Ling-plus.json", ["--max-model-len", "8192"],
     "bailing_moe (Ling-plus): states no head_dim either"),
    ("inclusionAI--Ling-lite.HEAD-DIM.MODIFIED.json", [],
     "bailing_moe: Ling-lite with head_dim stated (configs/SOURCES-remote.md)"),
    ("inclusionAI--Ling-lite.HEAD-DIM.MODIFIED.json",
     ["--max-model-len", "8192", "--kv-cache-dtype", "fp8", "--block-size", "32"],
     "bailing_moe with an fp8 cache and blocks of 32 tokens"),
    ("Tele-AI--TeleChat2-115B.json", [],
     "telechat: TeleChat2-115B names TelechatForCausalLM, which vLLM 0.32 does not register"),
    ("internlm--internlm2-7b.json", ["--tp", "2"], "internlm2 over TP 2: 4 KV heads a rank"),
    ("openbmb--MiniCPM4-8B.json", ["--tp", "4", "--max-model-len", "8192"],
     "minicpm over TP 4: 2 KV heads, replicated to one a rank"),
]


def _config_path(name: str) -> Path:
    for folder in (SHARED / "configs",):
        if (folder / name).is_file():
            return folder / name
    raise SystemExit(f"{name}: not in ../shared/configs")


ENV = "KVLEDGER_REMOTE_ORACLE_MODEL_TYPE"


def _register(model_type: str) -> None:
    """Make ``AutoConfig`` build ``model_type`` as a plain ``PretrainedConfig`` of the stated
    keys (plus ``CLASS_ATTRIBUTES``), in this process."""
    from transformers import AutoConfig, PretrainedConfig

    def init(self: Any, **kwargs: Any) -> None:
        # As a remote class's __init__ does (self.x = x, then super().__init__): transformers
        # 5.19's rope standardisation (PreTrainedConfig.__post_init__ →
        # standardize_rope_params) reads max_position_embeddings before it would otherwise
        # set the remaining keys. No key gets a value the file does not state.
        for key, value in kwargs.items():
            setattr(self, key, value)
        PretrainedConfig.__init__(self, **kwargs)

    plain = type(f"Stated_{model_type}", (PretrainedConfig,),
                 {"model_type": model_type, "__init__": init,
                  **CLASS_ATTRIBUTES.get(model_type, {})})
    AutoConfig.register(model_type, plain, exist_ok=True)


def _one(index: int) -> None:
    """Run ``RUNS[index]`` through the shared tool's ``run`` in this process; print its line."""
    name, extra, why = RUNS[index]
    raw = json.loads(_config_path(name).read_text())
    dropped = [k for k in DROPPED if k in raw]
    stated = {k: v for k, v in raw.items() if k not in DROPPED}

    model_type = str(stated["model_type"])
    # TP ranks run in spawned processes that import this file as __mp_main__: they register
    # the same class from this variable (see the end of the file).
    os.environ[ENV] = model_type
    _register(model_type)

    spec = importlib.util.spec_from_file_location("vllm_oracle", TOOL)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    # importable by name, so the spawned TP ranks can unpickle the tool's worker entry point
    sys.modules["vllm_oracle"] = tool
    sys.path.insert(0, str(TOOL.parent))
    spec.loader.exec_module(tool)

    def model_dir_for(config_path: str, hf_quant_config: str | None = None) -> tuple[str, bool]:
        folder = tempfile.mkdtemp(prefix="vllm_remote_model_")
        Path(folder, "config.json").write_text(json.dumps(stated, indent=2))
        return folder, True

    tool._model_dir_for = model_dir_for
    argv = [name, "--kv-cache-memory-bytes", "16GiB", "--trust-remote-code", *extra]
    args = tool.build_parser().parse_args(argv)
    tool._redirect_stdout_to_stderr()
    head = {"config": name, "why": why,
            "command": f"tests/oracles/run_remote_oracle.py --vllm {RELEASE} {index}",
            "dropped_keys": dropped, "class_attributes": CLASS_ATTRIBUTES.get(model_type, {}),
            "oracle_args": extra}
    try:
        got = tool.run(args)
    except Exception as err:  # vLLM stopped building the config or the model
        tool._emit_json({**head, "vllm_refuses_to_start_with": first_error_line(err)})
        return
    tool._emit_json(tool_case_line(head, got))


def main(argv: list[str]) -> int:
    """``[--vllm 0.33] [K ...]``: the runs (indexes of ``RUNS``; all without), one line each
    on stdout; ``--one K`` is one run in this process."""
    if argv[:1] == ["--one"]:
        _one(int(argv[1]))  # the tool's own stdout handling: logs to stderr, the line to stdout
        return 0
    run_each(__file__, [run[0] for run in RUNS], argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(_ARGS))
elif __name__ == "__mp_main__" and os.environ.get(ENV):  # a spawned TP rank of a run
    _register(os.environ[ENV])
