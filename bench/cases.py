"""The benchmark's questions and their true answers.

Every question carries a ``set``, so the report can keep apart what was known when the code was
written from what came later:

- ``original``: every case of ``../shared/oracles/vllm-0.32/cases.jsonl`` (the first 117,
  computed by vLLM 0.32.0's own planner; see the README there);
- ``newer``: every case of ``../shared/oracles/vllm-0.32/coverage-cases.jsonl`` (newer
  checkpoints: FP8 / NVFP4 with ``hf_quant_config.json`` companions, Qwen3-VL, Nemotron-3, ...);
- ``repo``: every answered case in this repository's ``tests/oracles/vllm-0.32/vllm-0.32-*.jsonl``,
run
  through the same oracle by the engineers who added those model types, while writing the code;
- ``refusal``: every line of those files where vLLM refused to start (it carries vLLM's
  ``error`` instead of ``expected``). The truth is the refusal: a tool matches when it refuses
  too and its message gives vLLM's reason;
- ``heldout``: every answered case of ``../tests/oracles/vllm-0.32/vllm-0.32-heldout.jsonl`` (its
copy
  that the tests replay once a case was fixed, ``vllm-0.32-coverage-heldout.jsonl``, is not
  read again as ``repo``): public
  checkpoints of model types kvledger already supported, none of them in its tests or fixtures
  when vLLM was asked, run through the oracle *before* kvledger was asked
  (``../tests/oracles/README-heldout.md``). Kept out of the "all cases" totals and scored in its
  own column, so the first measurement stays comparable; lines where vLLM refused to start join
  ``refusal``;
- ``catalog``: every bundled catalog model no case covers (vLLM could not build it). Asked one
  default question (8 GiB budget, TP 1, block size "auto" as vLLM defaults, ``max_model_len`` =
  min(its max positions, 32768)); there is no truth, so these only show who answers and who
  refuses.

The question of an oracle case is the case's ``inputs`` on the case's config (and its
``hf_quant_config.json`` where the case had one), found where the tests find it:
``../shared/configs/``. Cases run with ``inputs.weights_quant_stripped`` are asked with the
verbatim config, as the tests plan them (the dropped block carries no KV scheme). Two runs
that reach the same question (the same config, companion and resolved inputs: a run without
``--max-model-len`` beside one giving vLLM's own default) are asked once.

True answers, per case:
- ``bytes_per_token``: ``bytes_per_block / block_size``, vLLM's KV bytes per token per worker,
  defined only where vLLM made a single KV cache group (uniform layers). With several groups
  (sliding + full, Mamba + attention, self + cross) a block holds only one group's layers and
  "bytes per token" has no single meaning in vLLM's layout, so that metric is not scored there.
- ``kv_cache_tokens``: what vLLM logs as "GPU KV cache size: N tokens".
- ``max_concurrency``: what vLLM logs as "Maximum concurrency for L tokens per request", unrounded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from score import reason_of

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
ORACLE_DIR = SHARED / "oracles" / "vllm-0.32"
ORACLE = ORACLE_DIR / "cases.jsonl"
COVERAGE = ORACLE_DIR / "coverage-cases.jsonl"
REPO_ORACLES = ROOT / "tests" / "oracles"
REPO_GLOB = "vllm-0.32/vllm-0.32-*.jsonl"
# The held-out cases (``heldout`` set): never in the ``repo`` set, even after a fix copied them
# into the replayed ``vllm-0.32-coverage-heldout.jsonl``.
HELDOUT = REPO_ORACLES / "vllm-0.32" / "vllm-0.32-heldout.jsonl"
HELDOUT_TAG = "heldout"

DEFAULT_BUDGET = 8 * 2**30
DEFAULT_LEN_CAP = 32768

# The sets, in report order: key -> (short label, where the truth came from).
SETS = {
    "original": ("original cases", "../shared/oracles/vllm-0.32/cases.jsonl"),
    "newer": ("newer checkpoints", "../shared/oracles/vllm-0.32/coverage-cases.jsonl"),
    "repo": ("cases made with the code", "tests/oracles/vllm-0.32/vllm-0.32-*.jsonl"),
    "heldout": ("held-out checkpoints", "tests/oracles/vllm-0.32/vllm-0.32-heldout.jsonl"),
}
# Sets kept out of the "all cases" totals (scored apart, in their own column).
APART = ("heldout",)
REFUSALS_FROM = "tests/oracles/vllm-0.32/vllm-0.32-*.jsonl (lines with vLLM's error)"
# Files of that glob written by other runners than the shared oracle tool, about inputs a
# question here cannot carry (the tests replay them): not asked.
NOT_ASKED = {
    "vllm-0.32-pp-startup.jsonl": "pipeline-parallel start-up (run_pp_oracle.py): no question "
                                  "here takes a PP size",
    "vllm-0.32-tokenizer-len.jsonl": "max_model_len beside tokenizer / sentence-transformers "
                                     "files (run_tokenizer_len_oracle.py): no KV budget asked",
}


# run_remote_oracle.py hands vLLM a remote-code config's stated keys alone; where the
# checkpoint's own class reads them otherwise, that run shows why kvledger refuses the type, and
# is no truth about the checkpoint as vLLM serves it.
STATED_KEYS_NOT_TRUTH = {
    ("vllm-0.32-remote.jsonl", "XiaomiMiMo--MiMo-7B-Base.json"):
        "MiMo's config class subclasses Qwen2Config, which drops the stated sliding_window "
        "(use_sliding_window false); the stated keys alone window every layer",
}


def _askable(case: dict[str, Any]) -> bool:
    """A line the questions can pose: its config is a file (not a config class built by the
    runner) and it needs no engine argument beyond the question's (``--language-model-only``
    in run_tfbackend_oracle.py)."""
    return not case.get("engine_args") and config_file(case["config"]).is_file()


def _read(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict), path
    return data


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def config_file(name: str) -> Path:
    """Where the tests find a case's config (see the module docstring)."""
    return SHARED / "configs" / name


def model_id(config_file: str) -> str:
    return config_file.removesuffix(".json").replace("--", "/", 1)


def _companion(name: str) -> dict[str, Any]:
    path = config_file(name)
    return _read(path.with_name(path.name.removesuffix(".json") + ".hf_quant_config.json"))


def _question(qid: str, kind: str, case: dict[str, Any], inputs: dict[str, Any],
              truth: dict[str, Any] | None) -> dict[str, Any]:
    name = case["config"]
    return {
        "id": qid,
        "set": kind,
        "source": case.get("_source", ""),
        "model": model_id(name),
        "config_file": name,
        "config": _read(config_file(name)),
        "hf_quant_config": _companion(name) if case.get("hf_quant_config") else None,
        "inputs": inputs,
        "max_model_len": inputs["max_model_len"],
        "kv_cache_memory_bytes": inputs["kv_cache_memory_bytes"],
        "kv_cache_dtype": inputs["kv_cache_dtype"],
        "tensor_parallel_size": inputs["tensor_parallel_size"],
        "block_size": inputs["block_size"],
        "truth": truth,
    }


def _truth(case: dict[str, Any]) -> dict[str, Any]:
    expected = case["expected"]
    single_group = len(case.get("kv_cache_groups", [])) == 1
    return {
        "bytes_per_token": (expected["bytes_per_block"] / expected["block_size"]
                            if single_group else None),
        "kv_cache_tokens": expected["kv_cache_tokens"],
        "max_concurrency": expected["max_concurrency"],
        "vllm_refuses_to_start": expected["vllm_refuses_to_start"],
    }


def oracle_cases(path: Path = ORACLE, kind: str = "original",
                 prefix: str = "case") -> list[dict[str, Any]]:
    """One question per answered line of an oracle file, with its truth."""
    if not path.is_file():
        raise SystemExit(f"no oracle at {path} (the benchmark needs ../shared beside the repo)")
    out = []
    for n, case in enumerate(_lines(path)):
        if "expected" not in case:
            continue
        case["_source"] = path.name
        out.append(_question(f"{prefix}{n:03d}", kind, case, case["inputs"], _truth(case)))
    return out


def _size(text: str) -> int:
    """The oracle's ``--kv-cache-memory-bytes`` value, read as vllm_oracle.py's
    ``parse_bytes`` reads it: an int, ``16GiB`` (powers of 1024) or ``8G`` (powers of 1000)."""
    match = re.fullmatch(r"([0-9.e+]+)\s*([KMGTkmgt]?)(i?)[Bb]?", text)
    if match is None:
        raise ValueError(f"cannot read the size {text!r}")
    number, unit, binary = match.groups()
    base = 1024 if binary else 1000
    unit = unit.upper()
    return int(float(number) * base ** " KMGT".index(unit or " "))


def refusal_inputs(case: dict[str, Any]) -> dict[str, Any]:
    """The engine options of a refused run, read from its oracle command (vLLM's names)."""
    words = case["command"].split()
    opts = {word: nxt for word, nxt in zip(words, [*words[1:], ""], strict=True)
            if word.startswith("--") and not nxt.startswith("--")}
    return {
        "kv_cache_memory_bytes": _size(opts.get("--kv-cache-memory-bytes", "16GiB")),
        "block_size": opts.get("--block-size", 16),
        "max_model_len": int(opts.get("--max-model-len", DEFAULT_LEN_CAP)),
        "kv_cache_dtype": opts.get("--kv-cache-dtype", "auto"),
        "tensor_parallel_size": int(opts.get("--tp", 1)),
        **({"max_num_seqs": int(opts["--max-num-seqs"])} if "--max-num-seqs" in opts else {}),
        **({"max_num_batched_tokens": int(opts["--max-num-batched-tokens"])}
           if "--max-num-batched-tokens" in opts else {}),
    }


def repo_cases() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(answered cases, refused runs) from this repository's ``tests/oracles/``."""
    answered: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    for path in sorted(REPO_ORACLES.glob(REPO_GLOB)):
        if HELDOUT_TAG in path.stem or path.name in NOT_ASKED:
            continue
        tag = path.stem.removeprefix("vllm-0.32-")
        for n, case in enumerate(_lines(path)):
            if not _askable(case) or (path.name, case["config"]) in STATED_KEYS_NOT_TRUTH:
                continue
            case["_source"] = path.name
            qid = f"repo-{tag}-{n:03d}"
            if "expected" in case:
                answered.append(_question(qid, "repo", case, case["inputs"], _truth(case)))
            elif "error" in case:
                q = _question(qid, "refusal", case, refusal_inputs(case), None)
                q["vllm_error"] = case["error"]
                q["vllm_reason"] = reason_of(case["error"])
                q["why"] = case.get("why", "")
                refused.append(q)
    return answered, refused


def heldout_cases() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(answered cases, refused runs) of the held-out file, ids ``heldout-NNN``."""
    answered: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    if not HELDOUT.is_file():
        return answered, refused
    for n, case in enumerate(_lines(HELDOUT)):
        case["_source"] = HELDOUT.name
        qid = f"heldout-{n:03d}"
        if "expected" in case:
            answered.append(_question(qid, "heldout", case, case["inputs"], _truth(case)))
        elif "error" in case:
            q = _question(qid, "refusal", case, refusal_inputs(case), None)
            q["vllm_error"] = case["error"]
            q["vllm_reason"] = reason_of(case["error"])
            q["why"] = case.get("why", "")
            q["heldout"] = True
            refused.append(q)
    return answered, refused


def _max_positions(config: dict[str, Any]) -> int | None:
    for where in (config.get("text_config"), config):
        if isinstance(where, dict):
            for key in ("max_position_embeddings", "n_positions", "max_target_positions"):
                if isinstance(where.get(key), int):
                    return int(where[key])
    return None


def catalog_only(covered: set[str]) -> list[dict[str, Any]]:
    """One default question for each bundled model no oracle case covers."""
    out = []
    from kvledger.source.catalog import catalog_rows

    for row in catalog_rows():
        name = row["source"]["file"]  # the real file the row's values were read from
        if model_id(name) in covered:
            continue
        config = row["config"]
        length = min(_max_positions(config) or 4096, DEFAULT_LEN_CAP)
        inputs = {"kv_cache_memory_bytes": DEFAULT_BUDGET, "block_size": "auto",
                  "max_model_len": length, "kv_cache_dtype": "auto", "tensor_parallel_size": 1}
        out.append({
            "id": f"catalog:{row['ids'][0]}",
            "set": "catalog",
            "source": "",
            "model": row["ids"][0],
            "config_file": name,
            "config": config,
            "hf_quant_config": row.get("hf_quant_config"),
            "inputs": inputs,
            "max_model_len": length,
            "kv_cache_memory_bytes": DEFAULT_BUDGET,
            "kv_cache_dtype": "auto",
            "tensor_parallel_size": 1,
            "block_size": "auto",
            "truth": None,
        })
    return out


def _key(q: dict[str, Any]) -> str:
    return json.dumps([q["config_file"], q["hf_quant_config"] is not None, q["inputs"]],
                      sort_keys=True)


def all_questions(oracle_dir: Path = ORACLE_DIR) -> tuple[list[dict[str, Any]], list[str]]:
    """Every question, and the ids of the ones dropped as repeats of an earlier question."""
    answered, refused = repo_cases()
    held, held_refused = heldout_cases()
    found = [*oracle_cases(oracle_dir / ORACLE.name, "original", "case"),
             *oracle_cases(oracle_dir / COVERAGE.name, "newer", "coverage"),
             *answered, *refused, *held, *held_refused]
    seen: set[str] = set()
    kept, repeats = [], []
    for q in found:
        if _key(q) in seen:
            repeats.append(q["id"])
            continue
        seen.add(_key(q))
        kept.append(q)
    covered = {q["model"] for q in kept}
    return kept + catalog_only(covered), repeats
