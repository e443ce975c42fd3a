"""Write src/kvledger/source/catalog.json, the bundled catalog's facts table, from the real
configs in ../shared/configs.

    PYTHONPATH=src python scripts/catalog_facts.py          # rewrite the table
    PYTHONPATH=src python scripts/catalog_facts.py --check  # exit 1 when it would change
    PYTHONPATH=src python scripts/catalog_facts.py --also DIR  # real files not yet in ../shared

``--also DIR`` names a folder of real configs read for the catalog but not yet added to
../shared/configs, with the ``SOURCES*.md`` table that says where each was read; a file is
looked up in ../shared/configs first. Once the files are in ../shared the flag is not needed.

The table holds, per model, the config's values less those that state no model fact
(``DROP_EXACT`` / ``DROP_SUFFIX``: transformers' bookkeeping, training-only settings, token
ids) — kvledger's own table, not the file. Every value is the config's own,
unchanged; each row names the file it came from (repository, path, commit, from the
``SOURCES*.md`` beside the configs). tests/source/test_catalog_facts.py checks, with
../shared beside the repo, that every row still derives and plans as its real file does.
"""

from __future__ import annotations

import contextlib
import copy
import io
import itertools
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / ".." / "shared" / "configs"
TABLE = ROOT / "src" / "kvledger" / "source" / "catalog.json"

# (Hub ids, the first being the one kvledger names; the real file in ../shared/configs).
# A second id is the same repository under the Hub's newer name (meta-llama dropped "Meta-";
# CohereForAI became CohereLabs; MiniMax-M1 is published as -40k and -80k with one config).
# Qwen/Qwen3-0.6B, Qwen/Qwen3-30B-A3B and meta-llama/Meta-Llama-3.1-405B stay out: the Hub
# tests (tests/source/conftest.py) serve them from a loopback Hub as ids that are not bundled.
MODELS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("CohereForAI/c4ai-command-r-v01", "CohereLabs/c4ai-command-r-v01"),
     "CohereForAI--c4ai-command-r-v01.json"),
    (("MiniMaxAI/MiniMax-M1-80k", "MiniMaxAI/MiniMax-M1-40k"), "MiniMaxAI--MiniMax-M1.json"),
    (("MiniMaxAI/MiniMax-M2.5",), "MiniMaxAI--MiniMax-M2.5.json"),
    (("MiniMaxAI/MiniMax-M3",), "MiniMaxAI--MiniMax-M3.json"),
    (("Qwen/Qwen2.5-7B",), "Qwen--Qwen2.5-7B.json"),
    (("Qwen/Qwen3-1.7B",), "Qwen--Qwen3-1.7B.json"),
    (("Qwen/Qwen3-14B",), "Qwen--Qwen3-14B.json"),
    (("Qwen/Qwen3-235B-A22B",), "Qwen--Qwen3-235B-A22B.json"),
    (("Qwen/Qwen3-235B-A22B-FP8",), "Qwen--Qwen3-235B-A22B-FP8.json"),
    (("Qwen/Qwen3-30B-A3B-FP8",), "Qwen--Qwen3-30B-A3B-FP8.json"),
    (("Qwen/Qwen3-32B",), "Qwen--Qwen3-32B.json"),
    (("Qwen/Qwen3-32B-FP8",), "Qwen--Qwen3-32B-FP8.json"),
    (("Qwen/Qwen3-4B",), "Qwen--Qwen3-4B.json"),
    (("Qwen/Qwen3-8B",), "Qwen--Qwen3-8B.json"),
    (("Qwen/Qwen3-8B-FP8",), "Qwen--Qwen3-8B-FP8.json"),
    (("Qwen/Qwen3-Coder-480B-A35B-Instruct",), "Qwen--Qwen3-Coder-480B-A35B-Instruct.json"),
    (("Qwen/Qwen3-Next-80B-A3B-Thinking",), "Qwen--Qwen3-Next-80B-A3B-Thinking.json"),
    (("Qwen/Qwen3.5-122B-A10B",), "Qwen--Qwen3.5-122B-A10B.json"),
    (("Qwen/Qwen3.5-27B",), "Qwen--Qwen3.5-27B.json"),
    (("Qwen/Qwen3.5-35B-A3B",), "Qwen--Qwen3.5-35B-A3B.json"),
    (("Qwen/Qwen3.5-397B-A17B",), "Qwen--Qwen3.5-397B-A17B.json"),
    (("Qwen/Qwen3.5-9B",), "Qwen--Qwen3.5-9B.json"),
    (("Qwen/Qwen3.6-35B-A3B",), "Qwen--Qwen3.6-35B-A3B.json"),
    (("deepseek-ai/DeepSeek-R1",), "deepseek-ai--DeepSeek-R1.json"),
    (("deepseek-ai/DeepSeek-V2-Lite",), "deepseek-ai--DeepSeek-V2-Lite.json"),
    (("deepseek-ai/DeepSeek-V3",), "deepseek-ai--DeepSeek-V3.json"),
    (("deepseek-ai/DeepSeek-V3.2",), "deepseek-ai--DeepSeek-V3.2.json"),
    (("deepseek-ai/DeepSeek-V4-Flash",), "deepseek-ai--DeepSeek-V4-Flash.json"),
    (("deepseek-ai/DeepSeek-V4-Pro",), "deepseek-ai--DeepSeek-V4-Pro.json"),
    (("google/gemma-2-2b-it",), "google--gemma-2-2b-it.json"),
    (("google/gemma-3-1b-it",), "google--gemma-3-1b-it.json"),
    (("google/gemma-3-27b-it",), "google--gemma-3-27b-it.json"),
    (("google/gemma-4-26B-A4B",), "google--gemma-4-26B-A4B.json"),
    (("google/gemma-4-E2B-it",), "google--gemma-4-E2B-it.json"),
    # The Hub's current names first for these (meta-llama dropped "Meta-"; the old name is
    # the same repository).
    (("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Meta-Llama-3.1-70B-Instruct"),
     "meta-llama--Llama-3.1-70B-Instruct.json"),
    (("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Meta-Llama-3.1-8B-Instruct"),
     "meta-llama--Llama-3.1-8B-Instruct.json"),
    (("meta-llama/Llama-3.2-1B-Instruct",), "meta-llama--Llama-3.2-1B-Instruct.json"),
    (("meta-llama/Llama-3.2-3B-Instruct",), "meta-llama--Llama-3.2-3B-Instruct.json"),
    (("meta-llama/Llama-4-Scout-17B-16E-Instruct",),
     "meta-llama--Llama-4-Scout-17B-16E-Instruct.json"),
    (("meta-llama/Meta-Llama-3.1-70B", "meta-llama/Llama-3.1-70B"),
     "meta-llama--Meta-Llama-3.1-70B.json"),
    (("meta-llama/Meta-Llama-3.1-8B", "meta-llama/Llama-3.1-8B"),
     "meta-llama--Meta-Llama-3.1-8B.json"),
    (("mistralai/Mistral-7B-v0.1",), "mistralai--Mistral-7B-v0.1.json"),
    (("mistralai/Mistral-7B-Instruct-v0.3",), "mistralai--Mistral-7B-Instruct-v0.3.json"),
    (("mistralai/Mixtral-8x22B-v0.1",), "mistralai--Mixtral-8x22B-v0.1.json"),
    (("mistralai/Mixtral-8x7B-v0.1",), "mistralai--Mixtral-8x7B-v0.1.json"),
    (("moonshotai/Kimi-K2-Instruct",), "moonshotai--Kimi-K2-Instruct.json"),
    (("moonshotai/Kimi-K2.5",), "moonshotai--Kimi-K2.5.json"),
    (("moonshotai/Kimi-K3",), "moonshotai--Kimi-K3.json"),
    (("nvidia/DeepSeek-V3.1-NVFP4",), "nvidia--DeepSeek-V3.1-NVFP4.json"),
    (("nvidia/GLM-5.2-NVFP4",), "nvidia--GLM-5.2-NVFP4.json"),
    (("nvidia/Gemma-4-26B-A4B-NVFP4",), "nvidia--Gemma-4-26B-A4B-NVFP4.json"),
    (("nvidia/Gemma-4-31B-IT-NVFP4",), "nvidia--Gemma-4-31B-IT-NVFP4.json"),
    (("nvidia/Kimi-K2.6-NVFP4",), "nvidia--Kimi-K2.6-NVFP4.json"),
    (("nvidia/Llama-3_3-Nemotron-Super-49B-v1",), "nvidia--Llama-3_3-Nemotron-Super-49B-v1.json"),
    (("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8",),
     "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json"),
    (("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4",),
     "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4.json"),
    (("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",),
     "nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.json"),
    (("nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4",),
     "nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4.json"),
    (("nvidia/Nemotron-H-56B-Base-8K",), "nvidia--Nemotron-H-56B-Base-8K.json"),
    (("nvidia/Qwen3-32B-NVFP4",), "nvidia--Qwen3-32B-NVFP4.json"),
    (("openai-community/gpt2-large",), "openai-community--gpt2-large.json"),
    (("openai/gpt-oss-120b",), "openai--gpt-oss-120b.json"),
    (("openai/gpt-oss-20b",), "openai--gpt-oss-20b.json"),
    (("openai/whisper-tiny",), "openai--whisper-tiny.json"),
    (("zai-org/GLM-4.5",), "zai-org--GLM-4.5.json"),
    (("zai-org/GLM-5",), "zai-org--GLM-5.json"),
    (("zai-org/GLM-5.1",), "zai-org--GLM-5.1.json"),
    (("zai-org/GLM-5.1-FP8",), "zai-org--GLM-5.1-FP8.json"),
    (("zai-org/GLM-5.2",), "zai-org--GLM-5.2.json"),
    (("zai-org/GLM-5.2-FP8",), "zai-org--GLM-5.2-FP8.json"),
    (("zai-org/GLM-5.3-Flash",), "zai-org--GLM-5.3-Flash.json"),
)

# Values that size a cache or the weights, kept wherever they appear even when no variant
# below moves on them (a default that equals the stated value, a key one option reads).
ALWAYS = frozenset({
    "model_type", "architectures", "torch_dtype", "dtype", "hidden_size", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size",
    "moe_intermediate_size", "vocab_size", "max_position_embeddings", "rope_scaling",
    "rope_parameters", "sliding_window", "use_sliding_window", "max_window_layers",
    "layer_types", "quantization_config", "n_routed_experts", "n_shared_experts",
    "num_local_experts", "num_experts", "num_experts_per_tok", "kv_lora_rank", "q_lora_rank",
    "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "num_nextn_predict_layers",
    "tie_word_embeddings", "text_config", "vision_config", "audio_config",
    "attention_chunk_size", "n_positions", "n_embd", "n_layer", "n_head", "n_inner",
    "encoder_layers", "decoder_layers", "d_model", "encoder_attention_heads",
    "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim", "max_source_positions",
    "max_target_positions", "quant_algo", "kv_cache_quant_algo", "quant_method",
    "kv_cache_scheme", "producer", "quantization",
    # The sparse indexer's (DSA): its presence decides the attention kind, its sizes a cache.
    "index_topk", "index_n_heads", "index_head_dim", "indexer_types", "index_topk_freq",
})
# Kept whole: their members are read together (a rope rule, a quantization scheme).
WHOLE = frozenset({"rope_scaling", "rope_parameters", "quantization_config", "layer_types"})

_G = "10737418240"
VARIANTS: tuple[tuple[str, ...], ...] = (
    ("inspect", "{m}", "--json"),
    ("inspect", "{m}", "--json", "--kv-cache-dtype", "fp8"),
    ("plan", "{m}", "--engine", "vllm", "--kv-cache-memory-bytes", _G, "--json"),
    ("plan", "{m}", "--engine", "sglang", "--kv-cache-memory-bytes", _G, "--json"),
    ("plan", "{m}", "--engine", "native", "--kv-cache-memory-bytes", _G, "--json"),
    ("plan", "{m}", "--engine", "vllm", "--gpu", "H200", "--json"),
    ("plan", "{m}", "--engine", "sglang", "--gpu", "H200", "--json"),
    ("plan", "{m}", "--engine", "native", "--gpu", "H200", "--json"),
    ("plan", "{m}", "--engine", "vllm", "--gpu", "H200", "-tp", "8", "--kv-cache-dtype", "fp8",
     "--max-model-len", "4096", "--json"),
    ("plan", "{m}", "--engine", "vllm", "--gpu", "H200", "-tp", "2", "--json"),
    ("plan", "{m}", "--engine", "sglang", "--gpu", "H200", "-tp", "8", "--json"),
    ("plan", "{m}", "--engine", "sglang", "--gpu", "H200", "--kv-cache-dtype", "fp8", "--json"),
    ("plan", "{m}", "--engine", "vllm", "--gpu", "H200", "-pp", "2", "--json"),
    ("plan", "{m}", "--engine", "vllm", "--kv-cache-memory-bytes", _G,
     "--num-speculative-tokens", "1", "--speculative-method", "mtp", "--json"),
    ("plan", "{m}", "--engine", "sglang", "--kv-cache-memory-bytes", _G,
     "--num-speculative-tokens", "1", "--speculative-method", "mtp", "--json"),
    ("fit", "{m}", "--gpu", "H200", "--concurrency", "8", "--context", "8192", "--json"),
)


def sources(folder: Path = CONFIGS) -> dict[str, dict[str, str]]:
    """File name → {repo, path, commit} from the SOURCES*.md tables in ``folder``. A commit
    cell that says "same" is the commit of the last row above it from the same repository
    (the held-out table's style); a row whose "same" names no such row is left out."""
    out: dict[str, dict[str, str]] = {}
    for table in sorted(folder.glob("SOURCES*.md")):
        above: dict[str, str] = {}
        for line in table.read_text().splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 5 or not re.fullmatch(r"`[^`]+\.json`", cells[0]):
                continue
            name, repo, commit = cells[0].strip("`"), cells[2], cells[4].strip("`")
            if commit == "same":
                if repo not in above:
                    continue
                commit = above[repo]
            above[repo] = commit
            out.setdefault(name, {"repo": repo, "path": cells[3].strip("`"), "commit": commit})
    return out


def folders(argv: list[str]) -> list[Path]:
    """../shared/configs, then every ``--also DIR`` in ``argv``, in that order."""
    out = [CONFIGS]
    for flag, value in itertools.pairwise(argv):
        if flag == "--also":
            out.append(Path(value))
    return out


def locate(name: str, where: list[Path]) -> Path:
    for folder in where:
        if (folder / name).is_file():
            return folder / name
    raise SystemExit(f"{name} is in none of {', '.join(str(f) for f in where)}: add it to "
                     "../shared/configs, or name the folder holding it with --also DIR")


def _drop_source(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _drop_source(v) for k, v in obj.items() if k != "source"}
    if isinstance(obj, list):
        return [_drop_source(v) for v in obj]
    return obj


def fingerprint(model_id: str, config: dict[str, Any], quant: dict[str, Any] | None) -> str:
    """What the CLI says about ``model_id`` under every variant, served from ``config``."""
    from kvledger.cli.main import main
    from kvledger.source import resolve
    from kvledger.source.model_source import ModelSource

    def bundled(text: str) -> ModelSource | None:
        if text != model_id:
            return None
        return ModelSource(model_id, copy.deepcopy(config), copy.deepcopy(quant), None,
                           ("bundled catalog config",), kind="catalog",
                           location="kvledger catalog", offline=True)

    saved = resolve._from_catalog
    resolve._from_catalog = bundled
    said = []
    try:
        for variant in VARIANTS:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main([part.format(m=model_id) for part in variant])
            try:
                body: Any = _drop_source(json.loads(out.getvalue()))
            except ValueError:
                body = out.getvalue()
            said.append([code, body, err.getvalue()])
    finally:
        resolve._from_catalog = saved
    return json.dumps(said, sort_keys=True)


# Keys a config carries that describe no model fact (transformers' bookkeeping, training-only
# settings, tokenizer ids): left out of the table. Everything else is kept, so that a reader
# added later (an engine layout, the parameter count) finds the values it needs; the table
# was first cut down to what the variants read, and that dropped values the ATOM layout and
# the parameter count read (MiniMax-M3's sparse_attention_config, dense_intermediate_size).
DROP_EXACT = frozenset({
    "_name_or_path", "transformers_version", "use_cache", "auto_map", "initializer_range",
    "torchscript", "problem_type", "id2label", "label2id", "chunk_size_feed_forward",
    "return_dict", "output_attentions", "output_hidden_states", "tokenizer_class",
    "task_specific_params", "finetuning_task", "prefix", "_attn_implementation_autoset",
    "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id",
    "tokenizer_name", "verbose", "init_device", "init_config", "gradient_checkpointing",
})
DROP_SUFFIX = ("dropout", "_pdrop", "_dropout_prob")


def minimal(model_id: str, config: dict[str, Any], quant: dict[str, Any] | None,
            which: str) -> dict[str, Any]:
    """``config`` (or ``quant`` when ``which`` is "quant") less the keys that state no model
    fact (``DROP_EXACT`` / ``DROP_SUFFIX``), at every level; ``model_id`` is unused (kept
    for the caller)."""
    full = copy.deepcopy(config if which == "config" else quant)
    assert full is not None

    def prune(node: dict[str, Any]) -> None:
        for key in list(node):
            if key in DROP_EXACT or key.endswith(DROP_SUFFIX):
                del node[key]
            elif isinstance(node[key], dict):
                prune(node[key])

    prune(full)
    return full


def _other(value: Any) -> Any:
    """A different value of the same shape, to see whether kvledger reads ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value * 2 + 1
    if isinstance(value, str):
        return value + "-other"
    if isinstance(value, list):
        return value[:-1] if len(value) > 1 else [*value, *value, 0]
    return None if value is not None else 7


def _others(value: Any) -> list[Any]:
    """Other values to state in its place: for a list, one element fewer and its first
    element changed (a per-layer list is read element by element)."""
    if isinstance(value, list) and value and not isinstance(value[0], dict | list):
        return [_other(value), [_other(value[0]), *value[1:]]]
    return [_other(value)]


def _ordered(original: dict[str, Any], kept: dict[str, Any]) -> dict[str, Any]:
    return {k: _ordered(v, kept[k]) if isinstance(v, dict) and isinstance(kept[k], dict)
            else v for k, v in original.items() if k in kept}


# Shared files that are not the checkpoint's own config.json but a rebuild of it, with what
# the rebuild changed. Their rows say so ("rebuilt"): the resolver asks the local HF cache and
# the Hub first and uses the row only offline, with a note (source/resolve.py).
REBUILT: dict[str, str] = {
    "MiniMaxAI--MiniMax-M3.json": (
        "a text-only rebuild (ai-dynamo/aiconfigurator's): it names MiniMaxM3ForCausalLM / "
        "minimax_m3, while the checkpoint is minimax_m3_vl (MiniMaxM3SparseForConditionalGen"
        "eration, with its vision tower)"),
}


def build(where: list[Path] | None = None) -> dict[str, Any]:
    where = where or [CONFIGS]
    cited: dict[str, dict[str, str]] = {}
    for folder in reversed(where):  # ../shared's own table wins for a file it holds
        cited.update(sources(folder))
    rows = []
    for ids, name in MODELS:
        if name not in cited:
            raise SystemExit(f"{name}: no SOURCES*.md row says where it was read "
                             "(repository, path, commit)")
        config = json.loads(locate(name, where).read_text())
        companion = name.removesuffix(".json") + ".hf_quant_config.json"
        quant = None
        if any((folder / companion).is_file() for folder in where):
            quant = json.loads(locate(companion, where).read_text())
        kept = minimal(ids[0], config, quant, "config")
        row: dict[str, Any] = {"ids": list(ids), "source": {**cited[name], "file": name},
                               "config": _ordered(config, kept)}
        if name in REBUILT:
            row["rebuilt"] = REBUILT[name]
        if quant is not None:
            row["hf_quant_config"] = _ordered(quant, minimal(ids[0], kept, quant, "quant"))
            row["hf_quant_config_source"] = {**cited[companion], "file": companion}
        assert fingerprint(ids[0], row["config"], row.get("hf_quant_config")) == \
            fingerprint(ids[0], config, quant), ids
        rows.append(row)
        print(f"{ids[0]}: {len(json.dumps(kept))} of {len(json.dumps(config))} characters",
              file=sys.stderr)
    return {"about": ("kvledger's bundled catalog: per model, the config values kvledger "
                      "reads, as the model's config.json states them, and where that file "
                      "was read (scripts/catalog_facts.py wrote this table)"),
            "models": rows}


def render(table: dict[str, Any]) -> str:
    lines = ["{", f'  "about": {json.dumps(table["about"])},', '  "models": [']
    rows = [json.dumps(row, separators=(",", ": ")) for row in table["models"]]
    lines += [f"    {row}," for row in rows[:-1]] + [f"    {rows[-1]}", "  ]", "}"]
    return "\n".join(lines) + "\n"


def main() -> int:
    if not CONFIGS.is_dir():
        print(f"scripts/catalog_facts.py needs the real configs in {CONFIGS.resolve()}",
              file=sys.stderr)
        return 2
    text = render(build(folders(sys.argv[1:])))
    if "--check" in sys.argv[1:]:
        return 0 if TABLE.is_file() and TABLE.read_text() == text else 1
    TABLE.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
