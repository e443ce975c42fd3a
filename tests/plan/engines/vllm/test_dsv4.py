"""DeepSeek-V4 in the vLLM layout (``kvledger/plan/engines/vllm/dsv4.py``), worked by hand from
the DeepSeek-V4-Flash config (the bundled catalog's, ``deepseek-ai/DeepSeek-V4-Flash``) and the
rules of vLLM's source that dsv4.py cites. The oracle replays (``test_oracles.py``,
``tests/oracles/vllm-0.33/vllm-0.33-dsv4.jsonl``) check the same numbers against vLLM 0.33's
own run; this file checks them from the config's values, and the refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.derive import derive_model
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.engines.vllm.errors import VllmRefusesToStart
from kvledger.plan.engines.vllm.resolve import VllmLayoutError
from kvledger.plan.request import PlanRequest
from sglang_cases import catalog_config

GIB = 1 << 30
FLASH = "deepseek-ai/DeepSeek-V4-Flash"
ORACLE = Path(__file__).resolve().parents[3] / "oracles" / "vllm-0.33" / "vllm-0.33-dsv4.jsonl"


def _request(**kw: Any) -> PlanRequest:
    base: dict[str, Any] = {"engine": "vllm", "max_model_len": 32768,
                            "kv_cache_memory_bytes": 16 * GIB}
    return PlanRequest(**{**base, **kw})


def _plan(**kw: Any) -> Any:
    return plan_vllm(derive_model(catalog_config(FLASH)), _request(**kw), 16 * GIB)


def test_flash_16_gib_32k_by_hand() -> None:
    # Config: 43 layers; compress_ratios[:43] = 0, 0, then 4 / 128 alternating, 4 last:
    # 2 window-only layers, 21 ratio-4 (layers 2, 4, ..., 42), 20 ratio-128 (3, 5, ..., 41).
    # head_dim 512 = 448 nope + 64 rope (qk_rope_head_dim): an fp8_ds_mla row is
    # 448 + 448 / 64 scales + 1 pad + 64 x 2 = 584 B. index_head_dim 128: 128 + 128/128 x 4 =
    # 132 B a key. Pages, each rounded up to 576 B:
    #   swa_cache      block 64:  64 x 584 = 37,376 -> 65 x 576 = 37,440
    #   attn [C4]      block 256: 256/4 = 64 x 584 = 37,376 -> 37,440
    #   attn [C128]    block 256: 256/128 = 2 x 584 = 1,168 -> 3 x 576 = 1,728
    #   indexer keys   block 256: 64 x 132 = 8,448 -> 15 x 576 = 8,640
    #   C4 state       block 4, float32 2 x 2 x 512 wide: 4 x 2,048 x 4 = 32,768 -> 57 x 576
    #                  = 32,832 (window 2 x 4 = 8)
    #   indexer state  block 4, 2 x 2 x 128 wide: 4 x 512 x 4 = 8,192 -> 8,640 (window 8)
    #   C128 state     block 8, 2 x 1 x 512 wide: 8 x 1,024 x 4 = 32,768 -> 32,832 (window 128)
    # Packed groups (repeats = approximate_gcd([43, 21, 20], floor 21) = 22: pads 1+1+2):
    # swa 43 -> 22 + 21 layers; MLA (3 page sizes, 21/21/20: unbalanced) one group of 62;
    # C4 + indexer states one group of 42; C128 states one group of 20.
    # Bytes a block = the widest group: 21 x 8,640 + 21 x 37,440 + 20 x 1,728 = 1,002,240
    # (swa 22 x 37,440 = 823,680; states 21 x 8,640 + 21 x 32,832 = 870,912; C128 656,640).
    # 16 GiB = 17,179,869,184 B // 1,002,240 = 17,141 blocks.
    # Blocks a 32,768-token request takes (max_in_flight_tokens = 2 x 8,192 = 16,384):
    #   swa: min(127 + 16,384, 32,768) = 16,511 -> cdiv(16,511, 64) + 1 = 259, twice
    #   MLA: cdiv(32,768, 256) = 128
    #   C4 states: min(7 + 16,384, 32,768) = 16,391 -> cdiv(16,391, 4) + 1 = 4,099
    #   C128 states: 16,511 -> cdiv(16,511, 8) + 1 = 2,065
    #   total 259 + 259 + 128 + 4,099 + 2,065 = 6,810
    # Concurrency 17,141 / 6,810 = 2.5170...; tokens int(2.5170... x 32,768) = 82,478.
    # Block size reported: the smallest of the groups', 4.
    plan = _plan()
    assert [(g.spec, g.num_layers, g.block_size, g.page_size_bytes, g.blocks_per_request)
            for g in plan.groups] == [
        ("SlidingWindowMLASpec", 22, 64, 37_440, 259),
        ("SlidingWindowMLASpec", 21, 64, 37_440, 259),
        ("MLAAttentionSpec", 62, 256, 8_640, 128),
        ("SlidingWindowMLASpec", 42, 4, 8_640, 4_099),
        ("SlidingWindowMLASpec", 20, 8, 32_832, 2_065),
    ]
    assert plan.bytes_per_block == 21 * 8_640 + 21 * 37_440 + 20 * 1_728 == 1_002_240
    assert plan.num_blocks == 17_179_869_184 // 1_002_240 == 17_141
    assert plan.blocks_per_request == 6_810
    assert plan.kv_cache_tokens == int(17_141 / 6_810 * 32_768) == 82_478
    assert plan.block_size == 4
    assert plan.resolved.cache_dtype == "fp8_ds_mla"
    assert not plan.vllm_refuses_to_start


def test_each_distinct_cache_page_by_hand() -> None:
    # The unique layer specs, in registration order (see the test above for each page).
    pages = [(d["spec"], d["block_size"], d["page_size_bytes"]) for d, _ in _plan().layer_specs]
    assert pages == [
        ("SlidingWindowMLASpec", 64, 37_440),  # swa_cache
        ("MLAAttentionSpec", 256, 8_640),  # indexer keys
        ("SlidingWindowMLASpec", 4, 8_640),  # indexer compressor state
        ("MLAAttentionSpec", 256, 37_440),  # attn [C4]
        ("SlidingWindowMLASpec", 4, 32_832),  # C4 compressor state
        ("MLAAttentionSpec", 256, 1_728),  # attn [C128]
        ("SlidingWindowMLASpec", 8, 32_832),  # C128 compressor state
    ]


def test_fp8_is_the_same_layout_as_auto() -> None:
    # _resolve_dsv4_kv_cache_dtype: every fp8* value becomes fp8_ds_mla.
    assert _plan(kv_cache_dtype="fp8").num_blocks == _plan().num_blocks


def test_bfloat16_is_refused_as_vllm_refuses_it() -> None:
    with pytest.raises(VllmRefusesToStart, match="fp8_ds_mla layout only supports fp8"):
        _plan(kv_cache_dtype="bfloat16")


def _groups(plan: Any) -> list[tuple[str, int, int, int, int]]:
    return [(g.spec, g.num_layers, g.block_size, g.page_size_bytes, g.blocks_per_request)
            for g in plan.groups]


@pytest.mark.parametrize("tokens", [1, 2, 3])
def test_mtp_adds_one_window_cache_by_hand(tokens: int) -> None:
    # num_nextn_predict_layers 1: DeepSeekV4MTP builds model.layers.43, ratio 1 (index past
    # num_hidden_layers 43): one more attn.swa_cache, equal to the backbone's, in their bucket.
    # swa bucket 44 layers: repeats = approximate_gcd([44, 21, 20], floor 21): d = 22 pads
    # 0 + 1 + 2 = 3 (d = 21: 19 + 0 + 1 = 20; d = 23: 2 + 2 + 3 = 7; larger d pad more), so
    # 44 -> 22 + 22: the MTP layer fills the slot that was padding. The widest group is
    # still the MLA one (1,002,240 B), so the blocks do not change: 17,141.
    # One MTP module: not multi-module (min(1, tokens) = 1), extra_retained_tokens 0, the
    # blocks a request takes are the plain plan's 6,810 whatever the draft length.
    plan = _plan(num_speculative_tokens=tokens, speculative_method="mtp")
    assert _groups(plan) == [
        ("SlidingWindowMLASpec", 22, 64, 37_440, 259),
        ("SlidingWindowMLASpec", 22, 64, 37_440, 259),
        ("MLAAttentionSpec", 62, 256, 8_640, 128),
        ("SlidingWindowMLASpec", 42, 4, 8_640, 4_099),
        ("SlidingWindowMLASpec", 20, 8, 32_832, 2_065),
    ]
    assert (plan.num_blocks, plan.blocks_per_request, plan.kv_cache_tokens) == (
        17_141, 6_810, 82_478)
    assert plan.resolved.extra_retained_tokens == 0


def test_mtp_layer_is_named_as_vllm_registers_it() -> None:
    plan = _plan(num_speculative_tokens=1, speculative_method="mtp")
    # The packed split deals the bucket out in turn (the plain plan: 0-42 and 1-41), so the
    # MTP layer 43 lands in the second group.
    assert plan.groups[1].caches == "attn.swa_cache ×22 (layers 1-43)"


def test_two_mtp_modules_retain_tokens_by_hand() -> None:
    # A config with num_nextn_predict_layers 2 (no published V4 has one) drafting 3 tokens:
    # multi-module MTP (min(2, 3) > 1), lookahead 3, extra_retained_tokens 2 on every
    # SlidingWindowSpec. swa bucket 45: approximate_gcd([45, 21, 20], floor 21): d = 23 pads
    # 1 + 2 + 3 = 6 (d = 21: 18 + 0 + 1 = 19; d = 22: 21 + 1 + 2 = 24; d = 24: 3 + 3 + 4 = 10)
    # -> 23 + 22; widest group still MLA's 1,002,240 B: 17,141 blocks.
    #   swa: min(127 + 2 + 16,384, 32,768) = 16,513 -> cdiv(16,513, 64) + 1 = 260, twice
    #   C4 states: 7 + 2 + 16,384 = 16,393 -> cdiv(16,393, 4) + 1 = 4,100
    #   C128 states: 16,513 -> cdiv(16,513, 8) + 1 = 2,066
    #   total 260 + 260 + 128 + 4,100 + 2,066 = 6,814; tokens int(17,141 / 6,814 x 32,768)
    #   = 82,429.
    cfg = catalog_config(FLASH)
    cfg["num_nextn_predict_layers"] = 2
    plan = plan_vllm(derive_model(cfg), _request(num_speculative_tokens=3,
                                                 speculative_method="mtp"), 16 * GIB)
    assert _groups(plan) == [
        ("SlidingWindowMLASpec", 23, 64, 37_440, 260),
        ("SlidingWindowMLASpec", 22, 64, 37_440, 260),
        ("MLAAttentionSpec", 62, 256, 8_640, 128),
        ("SlidingWindowMLASpec", 42, 4, 8_640, 4_100),
        ("SlidingWindowMLASpec", 20, 8, 32_832, 2_066),
    ]
    assert (plan.num_blocks, plan.blocks_per_request, plan.kv_cache_tokens) == (
        17_141, 6_814, 82_429)


def test_pipeline_parallel_2_by_hand() -> None:
    # get_pp_indices(43, 2): 21 each, the remainder to the second-last stage -> layers 0-21
    # and 22-42. The packed groups are the whole model's (repeats 22), projected per stage:
    #   stage 0: swa 11 (0, 2, ..., 20) + 11 (1, ..., 21); MLA: C4 layers 2-20 (10) with
    #   their 10 indexer keys, C128 3-21 (10): 10 x 8,640 + 10 x 37,440 + 10 x 1,728 =
    #   478,080; states 10 x 8,640 + 10 x 32,832 = 414,720; C128 states 10 x 32,832.
    #   stage 1: C4 22-42 (11), keys 11, C128 23-41 (10): 11 x 8,640 + 11 x 37,440 +
    #   10 x 1,728 = 524,160 (the widest of its groups).
    # Each stage its own 16 GiB: 17,179,869,184 // 478,080 = 35,935, // 524,160 = 32,776;
    # vLLM keeps the smallest, 32,776.
    # Model Runner V2 with async scheduling keeps pp + 1 = 3 batches in flight:
    # 3 x 8,192 = 24,576 tokens.
    #   swa: min(127 + 24,576, 32,768) = 24,703 -> cdiv(24,703, 64) + 1 = 387, twice
    #   C4 states: 7 + 24,576 = 24,583 -> cdiv(24,583, 4) + 1 = 6,147
    #   C128 states: 24,703 -> cdiv(24,703, 8) + 1 = 3,089
    #   MLA: 128; total 387 + 387 + 128 + 6,147 + 3,089 = 10,138
    # Tokens int(32,776 / 10,138 x 32,768) = 105,938.
    plan = _plan(pipeline_parallel_size=2)
    assert [s.layer_range for s in plan.stages] == [(0, 22), (22, 43)]
    assert [s.bytes_per_block for s in plan.stages] == [478_080, 524_160]
    assert 17_179_869_184 // 478_080 == 35_935
    assert (plan.num_blocks, plan.blocks_per_request, plan.kv_cache_tokens) == (
        32_776, 10_138, 105_938)
    assert [g.blocks_per_request for g in plan.stages[1].groups] == [387, 387, 128, 6_147,
                                                                    3_089]


def test_pipeline_parallel_puts_the_mtp_layer_on_the_last_stage() -> None:
    # The drafter runs on the last rank: layer 43's swa_cache joins stage 1's second swa
    # group (23-41 -> 23-43, 11 layers) without widening its widest group (MLA, 524,160).
    plan = _plan(pipeline_parallel_size=2, num_speculative_tokens=1, speculative_method="mtp")
    assert [g.caches for g in plan.stages[1].groups][:2] == [
        "attn.swa_cache ×11 (layers 22-42)", "attn.swa_cache ×11 (layers 23-43)"]
    assert [g.num_layers for g in plan.stages[0].groups][:2] == [11, 11]
    assert (plan.num_blocks, plan.kv_cache_tokens) == (32_776, 105_938)


@pytest.mark.parametrize("kw, why", [
    ({"num_speculative_tokens": 1, "speculative_method": "eagle3"},
     "speculative-method eagle3"),
    ({"block_size": 16}, "--block-size 16"),
    ({"gpu": "RTX-PRO-6000"}, "SM12x"),
    ({"gpu": "MI300X"}, "non-CUDA"),
])
def test_what_is_not_reproduced_is_refused_by_name(kw: dict[str, Any], why: str) -> None:
    with pytest.raises(VllmLayoutError, match=why):
        _plan(**kw)


def test_tensor_parallel_keeps_every_cache_on_every_rank() -> None:
    # One KV head, max_tp_shards 1 on every V4 spec: TP 2 holds what TP 1 holds per GPU.
    one, two = _plan(), _plan(tensor_parallel_size=2)
    assert (two.num_blocks, two.kv_cache_tokens) == (one.num_blocks, one.kv_cache_tokens)


def test_032_plans_it_the_same_way() -> None:
    # vLLM 0.32's V4 model registers the same specs (dsv4.py docstring); there is no 0.32
    # oracle case for it (its CPU build had no V4 model), so this states the reading only.
    old = _plan(engine_release="0.32")
    assert (old.num_blocks, old.kv_cache_tokens, old.bytes_per_block) == (
        17_141, 82_478, 1_002_240)


def test_config_without_ratio_4_layers_is_refused() -> None:
    cfg = catalog_config(FLASH)
    cfg["compress_ratios"] = [0 if r == 4 else r for r in cfg["compress_ratios"]]
    with pytest.raises(VllmLayoutError, match="without ratio-4"):
        plan_vllm(derive_model(cfg), _request(), 16 * GIB)


def test_cli_json_names_the_caches_of_each_group(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", FLASH, "--engine", "vllm", "--kv-cache-memory-bytes", str(16 * GIB),
                 "--max-model-len", "32768", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert (data["num_blocks"], data["kv_cache_tokens"]) == (17_141, 82_478)
    caches = [g["caches"] for g in data["kv_cache_groups"]]
    assert caches[0] == "attn.swa_cache ×22 (layers 0-42)"
    assert caches[2] == ("attn.indexer.k_cache ×21 (layers 2-42), attn [C4] ×21 (layers 2-42), "
                         "attn [C128] ×20 (layers 3-41)")
    assert "attn.indexer.compressor.state_cache ×21" in caches[3]
    code = main(["plan", FLASH, "--engine", "vllm", "--kv-cache-memory-bytes", str(16 * GIB),
                 "--max-model-len", "32768"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "vLLM KV cache groups" in out and "attn.compressor.state_cache" in out


def test_bad_kv_dtype_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", FLASH, "--engine", "vllm", "--kv-cache-memory-bytes", str(16 * GIB),
                 "--max-model-len", "32768", "--kv-cache-dtype", "bfloat16"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "Traceback" not in err and "fp8_ds_mla" in err


def _oracle_errors() -> list[dict[str, Any]]:
    if not ORACLE.is_file():
        return []
    lines = [json.loads(t) for t in ORACLE.read_text().splitlines() if t.strip()]
    return [c for c in lines if "expected" not in c]


@pytest.mark.parametrize("case", _oracle_errors(), ids=lambda c: c["command"][-40:])
def test_oracle_refusals_are_refused(case: dict[str, Any]) -> None:
    # vLLM 0.33's run stopped (its error is the line): kvledger refuses the same request.
    command = case["command"]
    if "--kv-cache-dtype" in command:
        assert "fp8_ds_mla layout only supports fp8" in str(case["error"])
        dtype = command.split("--kv-cache-dtype ")[1].split()[0]
        with pytest.raises(VllmRefusesToStart, match="only supports fp8"):
            _plan(kv_cache_dtype=dtype)
        return
    # --block-size 16: the ratio-128 pages hold 16 // 128 = 0 states and vLLM divides by
    # zero while it plans; kvledger refuses the block size by name.
    assert "ZeroDivisionError" in str(case["error"])
    block = int(command.split("--block-size ")[1].split()[0])
    with pytest.raises(VllmLayoutError, match=f"--block-size {block}"):
        _plan(block_size=block)


def test_explain_names_the_caches_of_each_group() -> None:
    from kvledger.report.explain import explain_log

    log = ("INFO [gpu_worker.py:1] Available KV cache memory: 16.00 GiB\n"
           "INFO [kv_cache_utils.py:1] GPU KV cache size: 82,478 tokens\n"
           "INFO [kv_cache_utils.py:1] Maximum concurrency for 32,768 tokens per request: "
           "2.52x\n")
    got = explain_log(log, model=FLASH, engine="vllm", overrides={"max_model_len": 32768})
    assert got.check("kv_cache_tokens").match
    groups = [n for n in got.notes if n.startswith("vLLM KV cache group")]
    assert len(groups) == 5 and "attn.indexer.k_cache ×21" in groups[2]


def _oracle_plans() -> list[dict[str, Any]]:
    if not ORACLE.is_file():
        return []
    lines = [json.loads(t) for t in ORACLE.read_text().splitlines() if t.strip()]
    return [c for c in lines if "expected" in c and c["config"].endswith("V4-Flash.json")]


@pytest.mark.parametrize("case", _oracle_plans(), ids=lambda c: c["why"])
def test_each_layer_spec_is_vllms(case: dict[str, Any]) -> None:
    # Beyond the groups the replay compares: every unique layer spec vLLM 0.33 reported, with
    # its layer count, head size (bytes a state for the indexer), window and page.
    inputs = case["inputs"]
    kw: dict[str, Any] = {"max_model_len": inputs["max_model_len"],
                          "tensor_parallel_size": inputs["tensor_parallel_size"],
                          "max_num_batched_tokens": inputs["max_num_batched_tokens"],
                          "enable_prefix_caching": inputs["enable_prefix_caching"]}
    plan = plan_vllm(derive_model(catalog_config(FLASH)), _request(**kw),
                     inputs["kv_cache_memory_bytes"])
    keys = ("spec", "block_size", "page_size_bytes", "head_size", "sliding_window")
    got = [(n, *(d.get(k) for k in keys)) for d, n in plan.layer_specs]
    want = [(s["num_layers"], *(s.get(k) for k in keys)) for s in case["layer_specs"]]
    assert got == want
