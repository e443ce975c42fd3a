"""The length vLLM starts with when a model directory carries a sentence-transformers config or a
tokenizer_config.json beside config.json (source/sentence.py).

Every line of ``tests/oracles/vllm-0.32/vllm-0.32-tokenizer-len.jsonl`` (and of 0.33's,
``vllm-0.33/vllm-0.33-tokenizer-len.jsonl``) is that release's own ``ModelConfig`` on such a
directory (``tests/oracles/run_tokenizer_len_oracle.py [--vllm 0.33]`` made them); each is
replayed here on the same files, planned as its release. (The rule, ``_get_and_verify_max_len``
and ``get_sentence_transformer_tokenizer_config``, reads the same in 0.32's and 0.33's
config/model.py and transformers_utils/config.py.) The lines where vLLM runs its pooling runner
(a ``modules.json``) are not: kvledger plans the generate runner, and says so in the source's
docstring.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.source.resolve import load_source
from oracle_cases import CONFIGS, bundled_id

HERE = Path(__file__).resolve().parent
CASES = HERE.parent / "oracles" / "vllm-0.32" / "vllm-0.32-tokenizer-len.jsonl"
# release -> (its file, the --engine that plans as it)
RELEASE_FILES = {
    "0.32": (CASES, "vllm==0.32"),
    "0.33": (HERE.parent / "oracles" / "vllm-0.33" / "vllm-0.33-tokenizer-len.jsonl",
             "vllm==0.33"),
}
BUDGET = ["--kv-cache-memory-bytes", "1GiB"]


def _lines(release: str = "0.32") -> list[dict[str, Any]]:
    path = RELEASE_FILES[release][0]
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _model_dir(tmp_path: Path, config: str, changed: dict[str, Any],
               files: dict[str, Any]) -> Path:
    """The directory vLLM was given: the real config (../shared/configs, or the catalog's
    values of it), the keys the case changed, and the companion files."""
    model_id = bundled_id(config)
    if (CONFIGS / config).is_file() or model_id is None:
        data = json.loads((CONFIGS / config).read_text())
    else:
        data = load_source(model_id).config
    data.update(changed)
    directory = tmp_path / "model"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(data))
    for name, content in files.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(content if isinstance(content, str) else
                                      json.dumps(content))
    return directory


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


GENERATE = [c for c in _lines() if c["vllm"].get("runner_type") != "pooling"]
REPLAYED = [(release, c) for release in RELEASE_FILES for c in _lines(release)
            if c["vllm"].get("runner_type") != "pooling"]


def test_both_releases_are_replayed() -> None:
    assert {release for release, _ in REPLAYED} == set(RELEASE_FILES)


@pytest.mark.parametrize(("release", "case"), REPLAYED,
                         ids=[f"{r}-{c['why']}" for r, c in REPLAYED])
def test_replays_vllm(release: str, case: dict[str, Any], tmp_path: Path,
                      capsys: pytest.CaptureFixture[str]) -> None:
    directory = _model_dir(tmp_path, case["config"], case["changed"], case["files"])
    asked = [] if case["max_model_len"] is None else ["--max-model-len",
                                                      str(case["max_model_len"])]
    code, out, err = _run(capsys, "plan", str(directory), *BUDGET, *asked, "--json",
                          "--engine", RELEASE_FILES[release][1])
    answer = case["vllm"]
    if "error" in answer:
        assert code == 2 and out == "" and len(err.splitlines()) == 1, (out, err)
        if "User-specified" in answer["error"]:
            # vLLM's sentence, as it wrote it, up to its own hint.
            said = answer["error"].split("Value error, ", 1)[1].split(" To allow", 1)[0]
            assert said.removesuffix(".") in err
        else:  # vLLM's json.load failed on the file; kvledger names the file instead
            assert "sentence_bert_config.json: malformed JSON" in err
        return
    assert code == 0, err
    assert json.loads(out)["max_model_len"] == answer["max_model_len"]


def test_pooling_lines_are_the_ones_left_out() -> None:
    """The replay skips only pooling-runner lines (kvledger plans vLLM's generate runner),
    and there are generate lines for tokenizer_config.json and for the sentence configs."""
    skipped = [c for c in _lines() if c not in GENERATE]
    assert skipped and all("modules.json" in c["files"] for c in skipped)
    assert any("tokenizer_config.json" in c["files"] for c in GENERATE)
    assert any("sentence_bert_config.json" in c["files"] for c in GENERATE)


def test_concurrency_follows_the_length(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Qwen3-8B (36 layers, 8 KV heads × 128, bf16) with max_seq_length 4096 and 1 GiB
    (vLLM 0.33's block of 16):
    a 16-token block is 2 (K, V) × 8 × 128 × 2 B × 16 × 36 = 2,359,296 B, 1,073,741,824 //
    2,359,296 = 455 blocks = 7,280 tokens; 7,280 / 4,096 = 1.77734375 requests (vLLM's
    default length from the file), where config.json's 40,960 would give 0.177734375."""
    directory = _model_dir(tmp_path, "Qwen--Qwen3-8B.json", {},
                           {"sentence_bert_config.json": {"max_seq_length": 4096}})
    code, out, err = _run(capsys, "plan", str(directory), *BUDGET, "--engine", "vllm==0.33",
                          "--json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["max_model_len"], data["kv_cache_tokens"]) == (4096, 7280)
    assert data["max_concurrency"] == 1.77734375
    assert any("sentence_bert_config.json's max_seq_length" in w and "40,960" in w
               for w in data["warnings"])
    # SGLang 0.5.23 never reads the file (get_context_length reads the config alone).
    code, out, err = _run(capsys, "plan", str(directory), *BUDGET, "--engine", "sglang",
                          "--json")
    assert code == 0, err
    assert json.loads(out)["max_model_len"] == 40960


def test_longrope_default_names_no_file(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Phi-3-mini-128k (LongRoPE): vLLM starts at original_max_position_embeddings 4096 even
    with max_seq_length 8192 beside it (the replayed line), so no warning blames the file."""
    directory = _model_dir(tmp_path, "microsoft--Phi-3-mini-128k-instruct.json", {},
                           {"sentence_bert_config.json": {"max_seq_length": 8192}})
    code, out, err = _run(capsys, "plan", str(directory), *BUDGET, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["max_model_len"] == 4096
    assert not any("max_seq_length" in w for w in data["warnings"])


def test_refusal_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = _model_dir(tmp_path, "Qwen--Qwen3-8B.json", {},
                           {"sentence_bert_config.json": {"max_seq_length": 4096}})
    code, out, err = _run(capsys, "plan", str(directory), *BUDGET, "--max-model-len", "4097")
    assert code == 2 and out == ""
    assert "(vLLM took 4096 from sentence_bert_config.json max_seq_length)" in err
    code, out, err = _run(capsys, "plan", str(directory), *BUDGET, "--max-model-len", "4097",
                          "--allow-long-max-model-len", "--json")
    assert code == 0, err


def test_config_file_brings_its_folder(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A path to config.json reads the folder's sentence config, as a directory does."""
    directory = _model_dir(tmp_path, "Qwen--Qwen3-8B.json", {},
                           {"sentence_bert_config.json": {"max_seq_length": 2048}})
    code, out, err = _run(capsys, "plan", str(directory / "config.json"), *BUDGET, "--json")
    assert code == 0, err
    assert json.loads(out)["max_model_len"] == 2048


def test_an_edited_file_is_read_again(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Derived facts are reused across plans of an unchanged model (derive/facts_cache.py); a
    changed max_seq_length is a changed model, in the same process."""
    directory = _model_dir(tmp_path, "Qwen--Qwen3-8B.json", {},
                           {"sentence_bert_config.json": {"max_seq_length": 4096}})
    for length in (4096, 2048, 4096):
        (directory / "sentence_bert_config.json").write_text(
            json.dumps({"max_seq_length": length}))
        code, out, err = _run(capsys, "plan", str(directory), *BUDGET, "--json")
        assert code == 0, err
        assert json.loads(out)["max_model_len"] == length


@pytest.mark.parametrize("value", ["4096", 0, -1, True, 4096.5, None, 1 << 40])
def test_a_bad_length_is_one_line(value: Any, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    directory = _model_dir(tmp_path, "Qwen--Qwen3-8B.json", {},
                           {"sentence_bert_config.json": {"max_seq_length": value}})
    code, out, err = _run(capsys, "plan", str(directory), *BUDGET)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert "sentence_bert_config.json max_seq_length must be a positive integer" in err
