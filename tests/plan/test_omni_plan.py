"""``plan_omni``: each vLLM-Omni stage planned as its own vLLM engine, the admission sum, the
split for N requests, model-local declarations inside a stage's budget, and a stage with no
paged KV. Expected numbers are the configs' values worked by hand (comments); a tiny
Qwen2.5-Omni-shaped checkpoint and deploy file written here run without ../shared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.declare.model_local import ModelLocalKVSpec
from kvledger.plan.omni import plan_omni
from kvledger.plan.omni.split import smallest_fraction
from kvledger.plan.request import PlanRequest
from omni_cases import TINY, TINY_YAML
from oracle_cases import CONFIGS, SHARED, SHARED_MISSING

GIB = 1 << 30
CAP = 16 * GIB  # the device the tiny deployment runs on


def _deploy(tmp_path: Path, text: str = TINY_YAML) -> Path:
    path = tmp_path / "tiny_omni.yaml"
    path.write_text(text)
    return path


def _line(plan: Any, key: str) -> int:
    return int(next(ln.bytes for ln in plan.budget.lines if ln.key == key))


def test_the_talker_stage_by_hand(tmp_path: Path) -> None:
    out = plan_omni(TINY, _deploy(tmp_path), PlanRequest(gpu_total_bytes=CAP))
    talker = out.stages[1]
    assert (talker.role, talker.model_part, talker.devices, talker.max_num_seqs) == (
        "talker", "talker_config", (1,), 2)
    plan = talker.plan
    assert plan is not None and plan.engine_release == out.engine_release
    # 0.3 of the whole device: int(17,179,869,184 × 0.3) = int(5,153,960,755.2).
    assert _line(plan, "utilization") == 5_153_960_755
    assert _line(plan, "cuda_graphs") == 0  # enforce_eager: no graphs captured
    assert plan.layers[0]["bytes_per_token"] == 2 * 4 * 128 * 2  # one layer, head_dim 128
    assert plan.block_size == 16
    assert plan.num_blocks == plan.available_bytes // (16 * 6144)
    # max_model_len 4,096 (the talker config's): concurrency = blocks × 16 / 4,096.
    assert plan.max_concurrency == pytest.approx(plan.num_blocks * 16 / 4096)
    thinker = out.stages[0].plan
    assert thinker is not None and thinker.num_blocks == thinker.available_bytes // 65536
    assert _line(thinker, "cuda_graphs") > 0  # captures graphs: kvledger's estimate


def test_the_library_face_offers_it() -> None:
    import kvledger

    assert kvledger.plan_omni is plan_omni


def test_the_release_is_vllm_omnis_own_base(tmp_path: Path) -> None:
    # vLLM-Omni 0.30 runs on vLLM 0.30.0 (planner.OMNI_VLLM), a release kvledger reproduces
    # (releases/v0_30.py): the stages are planned as it, with no warning; a pin is kept.
    from kvledger.plan.engines.base import get_layout

    versions = sorted(get_layout("vllm").releases, key=lambda v: tuple(map(int, v.split("."))))
    out = plan_omni(TINY, _deploy(tmp_path), PlanRequest(gpu_total_bytes=CAP))
    assert out.engine_release == "0.30.0"
    assert not any("oldest" in w for w in out.warnings)
    pinned = plan_omni(TINY, _deploy(tmp_path),
                       PlanRequest(engine=f"vllm=={versions[-1]}", gpu_total_bytes=CAP))
    assert pinned.engine_release == versions[-1]
    assert not any("oldest" in w for w in pinned.warnings)


def test_admission_by_hand(tmp_path: Path) -> None:
    out = plan_omni(TINY, _deploy(tmp_path), PlanRequest(gpu_total_bytes=CAP))
    got = {a.device: (a.kv_budget_bytes, a.graph_reserve_bytes, a.required_bytes, a.ok)
           for a in out.admission}
    # device 0: thinker 0.5 → 8,589,934,592; captures graphs: 2 GiB; + 1 GiB + 1 GiB
    #   = 8,589,934,592 + 4,294,967,296 = 12,884,901,888.
    # device 1: talker 0.3 → 5,153,960,755 and code2wav 0.1 → int(1,717,986,918.4) =
    #   1,717,986,918; both eager: no graph reserve; + 2 GiB = 6,871,947,673 + 2,147,483,648.
    assert got == {0: (8_589_934_592, 2 * GIB, 12_884_901_888, True),
                   1: (6_871_947_673, 0, 9_019_431_321, True)}


def test_over_subscribed_device_fails_admission(tmp_path: Path) -> None:
    text = TINY_YAML.replace("0.3", "0.7").replace("0.1\n", "0.25\n")
    out = plan_omni(TINY, _deploy(tmp_path, text), PlanRequest(gpu_total_bytes=CAP))
    dev1 = next(a for a in out.admission if a.device == 1)
    # int(cap × 0.7) = 12,025,908,428 (…428.8) + int(cap × 0.25) = 4,294,967,296 + 2 GiB
    # = 18,468,359,372 > 17,179,869,184.
    assert (dev1.required_bytes, dev1.ok) == (18_468_359_372, False)


def test_a_stage_with_no_paged_kv_and_its_declaration(tmp_path: Path) -> None:
    # A FIXED declaration on code2wav: 2 (K, V) × 2 layers × 4 heads × 64 × 100 positions ×
    # 2 B = 204,800 B a row, 3 rows = 614,400 B.
    spec = ModelLocalKVSpec(name="codec_window", layers=2, kv_heads=4, head_dim=64,
                            dtype="bfloat16", physical_capacity_positions=100,
                            capacity_source="window − 1", scope="model", rows="fixed",
                            rows_fixed=3, rows_reason="three captured buckets")
    out = plan_omni(TINY, _deploy(tmp_path), PlanRequest(gpu_total_bytes=CAP,
                                                         model_local_kv=(spec,)),
                    model_local_kv_stages={"codec_window": 2})
    code2wav = out.stages[2]
    assert code2wav.plan is None and "no paged KV" in (code2wav.reason or "")
    assert [(d.name, d.row_count, d.bytes_per_row, d.peak_bytes)
            for d in code2wav.model_local_kv] == [("codec_window", 3, 204_800, 614_400)]
    data = out.to_json()["stages"][2]
    assert data["plan"] is None and data["reason"] and data["role"] == "code2wav"


def test_max_num_seqs_rows_at_the_stage_s_own_count(tmp_path: Path) -> None:
    # MAX_NUM_SEQS rows on the talker (max_num_seqs 2): 204,800 B a row (as above) × 2.
    spec = ModelLocalKVSpec(name="local_tf", layers=2, kv_heads=4, head_dim=64,
                            dtype="bfloat16", physical_capacity_positions=100,
                            capacity_source="decode-loop trip count", scope="request",
                            rows="max_num_seqs")
    plain = plan_omni(TINY, _deploy(tmp_path), PlanRequest(gpu_total_bytes=CAP))
    out = plan_omni(TINY, _deploy(tmp_path), PlanRequest(gpu_total_bytes=CAP,
                                                         model_local_kv=(spec,)),
                    model_local_kv_stages={"local_tf": 1})
    before, after = plain.stages[1].plan, out.stages[1].plan
    assert before is not None and after is not None
    assert before.available_bytes - after.available_bytes == 2 * 204_800
    assert [(r.row_count, r.peak_bytes, r.status) for r in after.model_local_kv] == [
        (2, 409_600, "subtracted")]
    thinker = out.stages[0].plan
    assert thinker is not None and not thinker.model_local_kv  # only the talker holds it


def test_an_unplaced_declaration_goes_to_stage_0_with_a_warning(tmp_path: Path) -> None:
    spec = ModelLocalKVSpec(name="x", layers=1, kv_heads=1, head_dim=8, dtype="bfloat16",
                            physical_capacity_positions=4, capacity_source="", scope="model",
                            rows="fixed", rows_reason="one")
    out = plan_omni(TINY, _deploy(tmp_path), PlanRequest(gpu_total_bytes=CAP,
                                                         model_local_kv=(spec,)))
    assert out.stages[0].plan is not None and out.stages[0].plan.model_local_kv
    assert any("'x' placed on stage 0" in w for w in out.warnings)
    with pytest.raises(ValueError, match="stage 7"):
        plan_omni(TINY, _deploy(tmp_path), PlanRequest(gpu_total_bytes=CAP,
                                                       model_local_kv=(spec,)),
                  model_local_kv_stages={"x": 7})


def test_smallest_fraction_bisects() -> None:
    assert smallest_fraction(lambda k: k >= 37) == 37
    assert smallest_fraction(lambda k: k >= 1) == 1
    assert smallest_fraction(lambda k: False) is None


def test_the_split_is_the_smallest_fraction_that_holds(tmp_path: Path) -> None:
    out = plan_omni(TINY, _deploy(tmp_path), PlanRequest(gpu_total_bytes=CAP, concurrency=3))
    dev0 = next(s for s in out.split if s.device == 0)
    assert dev0.ok and set(dev0.fractions) == {0}
    f = dev0.fractions[0]

    def concurrency_at(util: float) -> float:
        text = TINY_YAML.replace("gpu_memory_utilization: 0.5", f"gpu_memory_utilization: {util}")
        plan = plan_omni(TINY, _deploy(tmp_path, text), PlanRequest(gpu_total_bytes=CAP))
        got = plan.stages[0].plan
        return got.max_concurrency if got is not None else 0.0

    assert concurrency_at(f) >= 3 > concurrency_at(round(f - 0.01, 2))
    dev1 = next(s for s in out.split if s.device == 1)
    assert dev1.fractions[2] == 0.1  # code2wav (no paged KV) keeps its deployed fraction
    # What is left: floor(100 × (capacity − required) / capacity) hundredths.
    assert dev0.required_bytes is not None and dev0.spare_fraction == (
        100 * (CAP - dev0.required_bytes) // CAP) / 100


def test_no_split_says_why(tmp_path: Path) -> None:
    out = plan_omni(TINY, _deploy(tmp_path), PlanRequest(gpu_total_bytes=CAP,
                                                         concurrency=10**6))
    assert not any(s.ok for s in out.split)
    assert all("even with the whole device" in " ".join(s.reasons) for s in out.split)


def test_requests_an_omni_deployment_cannot_take(tmp_path: Path) -> None:
    path = _deploy(tmp_path)
    for request, words in ((PlanRequest(kv_cache_memory_bytes=GIB), "kv_cache_memory_bytes"),
                           (PlanRequest(gpu_total_bytes=CAP, gpu_memory_utilization=0.5),
                            "gpu_memory_utilization"),
                           (PlanRequest(engine="sglang", gpu_total_bytes=CAP), "vllm"),
                           (PlanRequest(), "GPU")):
        with pytest.raises(ValueError, match=words):
            plan_omni(TINY, path, request)
    with pytest.raises(ValueError, match="no vLLM-Omni pipeline"):
        plan_omni({**TINY, "model_type": "llama", "architectures": []}, path,
                  PlanRequest(gpu_total_bytes=CAP))


# -- the real checkpoint and deploy file -------------------------------------------------------


def _real() -> tuple[Path, Path]:
    if not SHARED.is_dir():
        pytest.skip(SHARED_MISSING)
    return CONFIGS / "Qwen--Qwen2.5-Omni-7B.json", SHARED / "omni" / "qwen2_5_omni.yaml"


def test_qwen2_5_omni_on_two_h100s() -> None:
    config, deploy = _real()
    out = plan_omni(str(config), deploy, PlanRequest(gpu="H100-80GB"))
    assert [(s.role, s.devices, s.gpu_memory_utilization) for s in out.stages] == [
        ("thinker", (0,), 0.8), ("talker", (1,), 0.8), ("code2wav", (0,), 0.15)]
    talker = out.stages[1].plan
    assert talker is not None
    # talker_config: 24 layers × 2 × 4 KV heads × head_dim 128 × 2 B = 49,152 B a token,
    # 786,432 B a block; 0.8 of 85,520,809,984 B = int(68,416,647,987.2); eager: no graphs.
    assert talker.layers[0]["count"] == 24 and talker.layers[0]["bytes_per_token"] == 2048
    assert _line(talker, "utilization") == 68_416_647_987
    assert _line(talker, "cuda_graphs") == 0
    assert talker.num_blocks == talker.available_bytes // 786_432
    assert talker.max_model_len == 32768 and talker.max_num_seqs == 1
    thinker = out.stages[0].plan
    # thinker_config.text_config: 28 layers × 2 × 4 × (3584 / 28 = 128) × 2 B = 57,344 B.
    assert thinker is not None and sum(r["count"] * r["bytes_per_token"]
                                       for r in thinker.layers) == 57_344
    assert out.stages[2].plan is None
    # Admission: device 0: int(0.8 · cap) 68,416,647,987 + int(0.15 · cap)
    # int(12,828,121,497.6) = 81,244,769,484, all eager, + 2 GiB = 83,392,253,132;
    # device 1: 68,416,647,987 + 2 GiB = 70,564,131,635.
    assert [(a.device, a.required_bytes, a.ok) for a in out.admission] == [
        (0, 83_392_253_132, True), (1, 70_564_131_635, True)]
    json.dumps(out.to_json())  # one JSON object


def test_an_amd_gpu_takes_the_rocm_overlay() -> None:
    if not SHARED.is_dir():
        pytest.skip(SHARED_MISSING)
    # qwen3_omni_moe.yaml platforms.rocm: stage 2 (code2wav) eager, so on MI300X
    # (206,141,652,992 B) device 1 holds one graph reserve (the talker's), not two:
    # int(cap × 0.6) = 123,684,991,795 + int(cap × 0.1) = 20,614,165,299 = 144,299,157,094,
    # + 2 GiB graphs + 2 GiB = 148,594,124,390.
    out = plan_omni(TINY, SHARED / "omni" / "qwen3_omni_moe.yaml", PlanRequest(gpu="MI300X"))
    assert out.platform == "rocm"
    assert [s.enforce_eager for s in out.stages] == [False, False, True]
    dev1 = next(a for a in out.admission if a.device == 1)
    assert (dev1.kv_budget_bytes, dev1.graph_reserve_bytes, dev1.required_bytes) == (
        144_299_157_094, 2 * GIB, 148_594_124_390)
