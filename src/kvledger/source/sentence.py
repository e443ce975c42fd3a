"""A sentence-transformers config beside config.json: the one companion file that sets the
length vLLM 0.32 starts with.

vllm/config/model.py ``ModelConfig.__post_init__`` always asks
``get_sentence_transformer_tokenizer_config`` (vllm/transformers_utils/config.py) for the first
of seven ``sentence_*_config.json`` files that exists and parses to a non-empty object; when it
states ``max_seq_length``, ``_get_and_verify_max_len`` *replaces* the derived max_model_len
with it (after the RoPE step, for every runner, generative included). An embedding checkpoint
built on a decoder (``max_position_embeddings`` 32768, ``max_seq_length`` 4096) therefore
starts at 4,096 tokens, and an explicit ``--max-model-len`` above that is refused.

Why not ``tokenizer_config.json``'s ``model_max_length``: vLLM 0.32 reads it only for a pooling
runner whose config states ``position_embedding_type: "absolute"``
(``ModelConfig.get_and_verify_max_len``); kvledger plans vLLM's generate runner, where vLLM
never opens that file (``tests/oracles/vllm-0.32/vllm-0.32-tokenizer-len.jsonl`` shows both).
Reading it
would cost a request per Hub plan and change no number.

A malformed file stops vLLM (``get_hf_file_to_dict`` → ``json.load`` raises), so here it is one
``ConfigError`` line, as config.json is.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from kvledger.source.hf_cache import Snapshot

# vLLM's ``sentence_transformer_config_files``, in its order (the first non-empty one wins).
SENTENCE_CONFIGS = (
    "sentence_bert_config.json", "sentence_roberta_config.json",
    "sentence_distilbert_config.json", "sentence_camembert_config.json",
    "sentence_albert_config.json", "sentence_xlm-roberta_config.json",
    "sentence_xlnet_config.json",
)


def in_directory(directory: Path) -> tuple[str, dict[str, Any]] | None:
    """(file name, contents) of the sentence-transformers config vLLM would take from a
    model directory, or None."""
    return in_directory_names(directory, [n for n in SENTENCE_CONFIGS
                                          if (directory / n).is_file()])


def in_snapshot(snapshot: Snapshot, offline: bool) -> tuple[tuple[str, dict[str, Any]] | None,
                                                             tuple[str, ...]]:
    """The same for a Hub snapshot (local HF cache or just fetched), with the warnings a plan
    must show: files the cache does not know about are asked of the Hub (one ``HEAD`` each,
    together), unless offline."""
    from pathlib import Path

    from kvledger.source import hf_cache

    states = {name: hf_cache.file_state(snapshot, name) for name in SENTENCE_CONFIGS}
    unknown = [name for name, state in states.items() if state == "unknown"]
    warning = ""
    if unknown and offline:
        warning = (f"offline: the local HF cache does not say whether {snapshot.repo_id} has a "
                   "sentence-transformers config (its max_seq_length sets vLLM's "
                   "max_model_len); planned without one")
    elif unknown:
        from concurrent.futures import ThreadPoolExecutor

        from kvledger.errors import SourceError
        from kvledger.source.hub import fetch_companion

        def ask(name: str) -> str:
            try:
                return "present" if fetch_companion(snapshot, name) else "absent"
            except SourceError:
                return "unknown"

        with ThreadPoolExecutor(max_workers=len(unknown)) as pool:
            states.update(zip(unknown, pool.map(ask, unknown), strict=True))
        if any(states[name] == "unknown" for name in unknown):
            warning = (f"could not ask {hf_cache.endpoint()} whether {snapshot.repo_id} has a "
                       "sentence-transformers config (the local HF cache does not say); "
                       "planned without one")
    directory = Path(snapshot.directory)
    present = [name for name in SENTENCE_CONFIGS if states[name] == "present"]
    found = in_directory_names(directory, present)
    return found, (warning,) if warning else ()


def in_directory_names(directory: Path, names: list[str]) -> tuple[str, dict[str, Any]] | None:
    """``in_directory`` over ``names`` only (those known to be present), in vLLM's order."""
    from kvledger.source.config_file import read_json

    for name in names:
        data = read_json(directory / name)
        if data:
            return name, data
    return None
