"""Ask a vLLM release which max_model_len it settles on when a model directory carries a
tokenizer_config.json or a sentence-transformers config beside config.json; write the answers.

A research tool, never imported by the package or the tests. The shared oracle tool
(``vllm_oracle.py``) copies only config.json into its model directory, so it cannot show these
files' effect; this script builds vLLM's own ``ModelConfig`` (vllm/config/model.py, which runs
``get_and_verify_max_len`` → ``_get_and_verify_max_len``) on a directory it fills itself:

    /work/venvs/vllm032/bin/python tests/oracles/run_tokenizer_len_oracle.py
    VLLM_TARGET_DEVICE=cpu /work/venvs/vllm033/bin/python \
        tests/oracles/run_tokenizer_len_oracle.py --vllm 0.33

It writes ``vllm-<release>-tokenizer-len.jsonl`` (0.33's under ``vllm-0.33/``): one line per
case with the files put beside the real config, the ``max_model_len`` asked for, ``why``, and
vLLM's answer (``max_model_len`` and ``runner_type``, or its ``error``, first line).
``tests/plan/engines/vllm/test_oracles.py`` replays every line against kvledger.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from oracle_run import release_file, take_release  # noqa: E402

SHARED = HERE.parents[1] / ".." / "shared"
QWEN = "Qwen--Qwen3-8B.json"  # bundled in the catalog; max_position_embeddings 40960, no RoPE
LLAMA = "meta-llama--Meta-Llama-3.1-8B.json"  # 131072 with llama3 RoPE (factor not applied)
PHI3 = "microsoft--Phi-3-mini-128k-instruct.json"  # longrope, original 4096 (../shared/configs)
_POOLING = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling",
             "type": "sentence_transformers.models.Pooling"}]
_VERY_LARGE = int(1e30)  # transformers' VERY_LARGE_INTEGER, a tokenizer's "no limit"

# (config, keys changed in config.json, files beside it, max_model_len asked, why)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], int | None, str]] = [
    (QWEN, {}, {"tokenizer_config.json": {"model_max_length": 4096}}, None,
     "tokenizer states less than the config; generate runner"),
    (QWEN, {}, {"tokenizer_config.json": {"model_max_length": 4096}}, 8192,
     "tokenizer states less; --max-model-len above it"),
    (QWEN, {}, {"sentence_bert_config.json": {"max_seq_length": 4096}}, None,
     "sentence-transformers max_seq_length below the config"),
    (QWEN, {}, {"sentence_bert_config.json": {"max_seq_length": 4096}}, 8192,
     "--max-model-len above the sentence-transformers max_seq_length"),
    (QWEN, {}, {"sentence_bert_config.json": {"max_seq_length": 4096}}, 2048,
     "--max-model-len below the sentence-transformers max_seq_length"),
    (QWEN, {}, {"sentence_bert_config.json": "{not json"}, None,
     "a malformed sentence-transformers config"),
    (QWEN, {}, {"sentence_bert_config.json": {"max_seq_length": 65536}}, None,
     "max_seq_length above the config: replaces, not a minimum"),
    (QWEN, {}, {"sentence_bert_config.json": {"do_lower_case": False}}, None,
     "a sentence-transformers config without max_seq_length"),
    (QWEN, {}, {"sentence_xlm-roberta_config.json": {"max_seq_length": 2048}}, None,
     "another of vLLM's seven file names"),
    (QWEN, {}, {"sentence_roberta_config.json": {"max_seq_length": 2048},
                "sentence_bert_config.json": {"max_seq_length": 1024}}, None,
     "two of them: vLLM's order (bert first)"),
    (LLAMA, {}, {"sentence_bert_config.json": {"max_seq_length": 8192}}, None,
     "RoPE-scaled config: max_seq_length set after the RoPE step"),
    (PHI3, {}, {"sentence_bert_config.json": {"max_seq_length": 8192}}, None,
     "LongRoPE: the default is original_max_position_embeddings, whatever max_seq_length says"),
    (PHI3, {}, {"sentence_bert_config.json": {"max_seq_length": 8192}}, 16384,
     "LongRoPE: --max-model-len above max_seq_length"),
    (QWEN, {}, {"modules.json": _POOLING, "1_Pooling/config.json": {"pooling_mode_lasttoken":
                                                                    True},
                "tokenizer_config.json": {"model_max_length": 4096}}, None,
     "pooling runner (modules.json), no position_embedding_type: tokenizer ignored"),
    (QWEN, {"position_embedding_type": "absolute"},
     {"modules.json": _POOLING, "1_Pooling/config.json": {"pooling_mode_lasttoken": True},
      "tokenizer_config.json": {"model_max_length": 4096}}, None,
     "pooling runner + position_embedding_type absolute: tokenizer min applies"),
    (QWEN, {"position_embedding_type": "absolute"},
     {"modules.json": _POOLING, "1_Pooling/config.json": {"pooling_mode_lasttoken": True},
      "tokenizer_config.json": {"model_max_length": _VERY_LARGE}}, None,
     "pooling + absolute, tokenizer's VERY_LARGE_INTEGER"),
    (QWEN, {"position_embedding_type": "absolute"},
     {"tokenizer_config.json": {"model_max_length": 4096}}, None,
     "position_embedding_type absolute, generate runner: tokenizer ignored"),
]


def run_case(config: str, changed: dict[str, Any], files: dict[str, Any],
             max_model_len: int | None) -> dict[str, Any]:
    from vllm.config import ModelConfig

    directory = Path(tempfile.mkdtemp(prefix="kvledger_toklen_"))
    try:
        data = json.loads((SHARED / "configs" / config).read_text())
        data.update(changed)
        (directory / "config.json").write_text(json.dumps(data))
        for name, content in files.items():
            (directory / name).parent.mkdir(parents=True, exist_ok=True)
            text = content if isinstance(content, str) else json.dumps(content)
            (directory / name).write_text(text)
        try:
            model = ModelConfig(model=str(directory), skip_tokenizer_init=True,
                                max_model_len=max_model_len)
        except Exception as exc:  # vLLM's own refusal: the line that says why
            lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
            said = next((x for x in lines if "max_model_len" in x or "Expecting" in x),
                        lines[0] if lines else "")
            return {"error": f"{type(exc).__name__}: {said}"}
        return {"max_model_len": model.max_model_len, "runner_type": model.runner_type}
    finally:
        shutil.rmtree(directory)


def main() -> int:
    release, _ = take_release(sys.argv[1:])
    out = release_file(release, "tokenizer-len.jsonl")
    lines = []
    for config, changed, files, max_model_len, why in CASES:
        answer = run_case(config, changed, files, max_model_len)
        line = {"config": config, "changed": changed, "files": files,
                "max_model_len": max_model_len, "why": why, "vllm": answer}
        print(json.dumps(line), file=sys.stderr)
        lines.append(json.dumps(line))
    out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
