"""Launch lines as people copy them: container wrappers, launcher paths and the vLLM 0.33
flags recipes set, each read as vllm==0.33 reads it (lines written here in the shapes of
recipe / cookbook / runbook lines; none is quoted)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.cli.serve.errors import ServeLineError
from kvledger.cli.serve.translate import translate
from kvledger.cli.serve.translation import Context, Translation
from oracle_cases import CONFIGS

KV_DTYPES = ("auto", "bfloat16", "float16", "float32", "fp8", "fp8_e4m3", "fp8_e5m2", "nvfp4")
CTX = Context(kv_cache_dtypes=KV_DTYPES, engine_spec="vllm==0.33")


def t(line: str) -> Translation:
    return translate([line], CTX)


def refused(line: str) -> str:
    with pytest.raises(ServeLineError) as info:
        translate([line], CTX)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- docker run and launcher paths ----------------------------------------------------------


def test_vllm_openai_image_runs_vllm_serve_with_its_env() -> None:
    # vllm/vllm-openai's ENTRYPOINT is ["vllm", "serve"]: the words after the image are its
    # argv; -e / --env assignments are the container's environment.
    line = """docker run --runtime nvidia --gpus all \\
        -v ~/.cache/huggingface:/root/.cache/huggingface \\
        -p 8000:8000 --ipc=host -it --rm \\
        -e VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 --env=HF_TOKEN=xyz \\
        vllm/vllm-openai:v0.33.0 \\
        --model my-org/My-Model --tensor-parallel-size 2 --max-model-len 300000"""
    out = t(line)
    assert out.launcher == "vllm serve"
    assert out.model == "my-org/My-Model"
    assert out.options["--tensor-parallel-size"] == "2"
    assert "--allow-long-max-model-len" in out.options
    assert out.env == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}
    assert "HF_TOKEN" in out.env_ignored


def test_repeated_serve_after_the_vllm_image_is_vllms_error() -> None:
    assert "unrecognized arguments: serve" in refused(
        "docker run --gpus all vllm/vllm-openai:latest vllm serve my-org/M")


def test_sglang_image_runs_the_command_after_it() -> None:
    out = t("sudo docker run --gpus all --shm-size 32g -p 30000:30000 -e SGLANG_X=1 "
            "lmsysorg/sglang:latest python3 -m sglang.launch_server --model-path my-org/M "
            "--tp 4")
    assert (out.engine, out.model) == ("sglang", "my-org/M")
    out = t("docker run --gpus all lmsysorg/sglang:latest bash -c "
            "'python3 -m sglang.launch_server --model-path my-org/M --tp 2'")
    assert out.model == "my-org/M"


@pytest.mark.parametrize("image", ["vllm/vllm-openai-cpu:latest-x86_64",
                                   "lmsysorg/sglang:v0.5.23-rocm700-mi35x"])
def test_other_platform_images_are_refused_by_name(image: str) -> None:
    message = refused(f"docker run --device=/dev/kfd {image} --model my-org/M")
    assert "kvledger does not model" in message and "paste" in message


def test_vllm_rocm_image_plans_on_an_amd_gpu_only() -> None:
    line = "docker run --device=/dev/kfd vllm/vllm-openai-rocm:latest my-org/M -tp 8"
    message = refused(line)  # CTX names no GPU
    assert "name an AMD GPU with --gpu" in message and "paste 'vllm serve'" in message
    with pytest.raises(ServeLineError):
        translate([line], Context(gpu_name="H200"))
    out = translate([line], Context(gpu_name="MI355X"))
    assert (out.engine, out.model) == ("vllm", "my-org/M")
    assert out.options["--tensor-parallel-size"] == "8"


def test_launcher_given_as_a_path() -> None:
    assert t(".venv/bin/vllm serve my-org/M -tp 2").options["--tensor-parallel-size"] == "2"
    assert t("/opt/venv/bin/sglang serve --model-path my-org/M").engine == "sglang"
    assert t("/usr/bin/python3.12 -m vllm.entrypoints.openai.api_server --model my-org/M"
             ).model == "my-org/M"


def test_launcher_script_run_by_an_interpreter() -> None:
    # How ps lists a running server: the interpreter, then the console script's path.
    out = t("/usr/bin/python3 /usr/local/bin/vllm serve my-org/M --port 8001 -tp 4")
    assert (out.engine, out.model) == ("vllm", "my-org/M")
    assert out.options["--tensor-parallel-size"] == "4"
    assert t("python3 /opt/venv/bin/sglang serve --model-path my-org/M").engine == "sglang"


# -- vLLM 0.33 flags ------------------------------------------------------------------------


def test_async_scheduling_is_the_default() -> None:
    # config/vllm.py VllmConfig.__post_init__: async_scheduling None becomes True unless an
    # option forbids it, so the flag changes nothing planned.
    out = t("vllm serve my-org/M --async-scheduling")
    assert "--async-scheduling" in out.ignored["default"]
    assert "no-async-scheduling" in refused("vllm serve my-org/M --no-async-scheduling")
    assert "not supported by the V1 model runner" in refused(
        "vllm serve my-org/M --async-scheduling "
        "--speculative-config '{\"method\": \"suffix\", \"num_speculative_tokens\": 4}'")


def test_dflash_without_a_draft_model_is_vllms_error() -> None:
    # DFlashSpeculatorConfig inherits DraftModelSpeculatorConfig.default_model, which raises.
    message = refused("vllm serve my-org/M --speculative-config "
                      "'{\"method\": \"dflash\", \"num_speculative_tokens\": 7}'")
    assert "without speculative model" in message


def test_dspark_hub_draft_is_read_as_the_draft_config() -> None:
    out = t("vllm serve my-org/M --speculative-config '{\"method\": \"dspark\", "
            "\"model\": \"my-org/M-DSpark\", \"num_speculative_tokens\": 7}'")
    assert out.options["--draft-config"] == "my-org/M-DSpark"


def test_attention_config_keys() -> None:
    # vLLM 0.33 AttentionConfig (config/attention.py) has no use_fp4_indexer_cache, and its
    # @config dataclass forbids extra keys: vLLM stops at start-up.
    message = refused("vllm serve my-org/M --attention-config.use_fp4_indexer_cache False")
    assert "Extra inputs are not permitted" in message and "indexer_kv_dtype" in message
    # A key at its default changes nothing; a kernel choice only a reserve kvledger estimates.
    out = t("vllm serve my-org/M --attention_config.indexer_kv_dtype auto "
            "--attention-config.flash_attn_version 3")
    assert "--attention-config.indexer_kv_dtype" in out.ignored["default"]
    assert "--attention-config.flash_attn_version" in out.ignored["estimate"]
    assert t("vllm serve my-org/M --attention-config.backend FLASHINFER").options[
        "--attention-backend"] == "FLASHINFER"


def test_limit_mm_per_prompt() -> None:
    # Non-zero limits size only the encoder's profiling run (an estimated reserve); image
    # and video both 0 drop the vision tower (interfaces.py _mark_tower_model).
    out = t("vllm serve my-org/M --limit-mm-per-prompt '{\"image\": 4, \"video\": 1}'")
    assert "--limit-mm-per-prompt" in out.ignored["estimate"]
    out = t("vllm serve my-org/M --limit-mm-per-prompt.video 0")
    assert "--limit-mm-per-prompt" in out.ignored["estimate"]
    # Image and video at 0 drop the vision tower: read as --language-model-only, checked
    # against the model's towers once its config is read (checks.py; below).
    out = t("vllm serve my-org/M --limit-mm-per-prompt '{\"image\": 0, \"video\": 0}'")
    assert "--language-model-only" in out.options
    assert out.requires["mm_dropped_towers"] == "vision"


def test_zero_limits_on_every_tower_plan_as_language_model_only(
        capsys: pytest.CaptureFixture[str]) -> None:
    # vLLM 0.34 config/multimodal.py: language_model_only is "Equivalent to setting
    # `--limit-mm-per-prompt` to 0 for every modality". Qwen2.5-VL has one (vision) tower, so
    # image and video at 0 is the same plan as --language-model-only: the same weights line.
    config = CONFIGS / "Qwen--Qwen2.5-VL-7B-Instruct.json"
    if not config.is_file():
        pytest.skip("Qwen2.5-VL-7B's config is in ../shared/configs")
    model = str(config)
    zeros = "{\"image\": 0, \"video\": 0}"
    code, zeroed, _ = run(capsys, "plan", "--gpu", "H100", "--json", "--", "vllm", "serve",
                          model, "--limit-mm-per-prompt", zeros)
    assert code == 0
    code, alone, _ = run(capsys, "plan", "--gpu", "H100", "--json", "--", "vllm", "serve",
                         model, "--language-model-only")
    assert code == 0
    def weights(plan: dict[str, Any]) -> int:
        return int(next(line["bytes"] for line in plan["budget"] if line["key"] == "weights"))

    # 8.29B parameters with 0.68B of tower: the weights line drops the tower's bytes in both.
    assert weights(zeroed) == weights(alone)
    assert zeroed["num_blocks"] == alone["num_blocks"]
    assert any("covers every tower" in n for n in zeroed["serve_line"]["notes"])


def test_zero_limits_that_leave_the_audio_tower_are_refused(
        capsys: pytest.CaptureFixture[str]) -> None:
    config = CONFIGS / "google--gemma-4-E2B-it.json"
    if not config.is_file():
        pytest.skip("Gemma-4-E2B's config (vision and audio towers) is in ../shared/configs")
    line = ["vllm", "serve", str(config), "--max-model-len", "8192"]
    code = main(["plan", "--gpu", "H100", "--", *line, "--limit-mm-per-prompt",
                 "{\"image\": 0, \"video\": 0}"])
    assert code == 2 and "keeps the audio one" in capsys.readouterr().err
    code, _, _ = run(capsys, "plan", "--gpu", "H100", "--json", "--", *line,
                     "--limit-mm-per-prompt", "{\"image\": 0, \"video\": 0, \"audio\": 0}")
    assert code == 0


# -- whole plans ----------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else {}, err


def test_deepseek_v4_fp8_kv_plans_as_the_oracle(capsys: pytest.CaptureFixture[str]) -> None:
    # tests/oracles/vllm-0.33/vllm-0.33-dsv4.jsonl, the fp8 case (vLLM 0.33 maps fp8 to
    # fp8_ds_mla for V4): 16 GiB, max_model_len 32768 → 17,141 blocks, 82,478 tokens.
    # Main stopped on the layer table ("one 584-byte entry per 128 tokens …").
    code, data, err = run(capsys, "plan", "deepseek-ai/DeepSeek-V4-Flash", "--engine",
                          "vllm==0.33", "--kv-cache-memory-bytes", "17179869184",
                          "--max-model-len", "32768", "--kv-cache-dtype", "fp8",
                          "--max-num-seqs", "256", "--max-num-batched-tokens", "8192", "--json")
    assert code == 0, err
    assert (data["num_blocks"], data["kv_cache_tokens"]) == (17141, 82478)
    # The C128 rows: fp8_ds_mla entry = 448 fp8 nope + 448/64 = 7 scales + 1 pad + 64 × 2 B
    # rope = 584 B per 128 tokens (not a whole number of bytes per token).
    c128 = [row for row in data["layers"] if row.get("tokens_per_entry") == 128]
    assert c128 and all(row["entry_bytes"] == 584 and row["bytes_per_token"] is None
                        for row in c128)


def test_deepseek_v4_recipe_line_plans_on_8_h200(capsys: pytest.CaptureFixture[str]) -> None:
    code, data, err = run(capsys, "plan", "--gpu", "H200", "--engine", "vllm==0.33", "--json",
                          "--", """
        vllm serve deepseek-ai/DeepSeek-V4-Flash \\
            --trust-remote-code --kv-cache-dtype fp8 --block-size 256 \\
            --tensor-parallel-size 8 --async-scheduling""")
    assert code == 0, err
    assert data["tensor_parallel_size"] == 8 and data["num_blocks"] > 0


def test_sglang_longer_context_env(capsys: pytest.CaptureFixture[str]) -> None:
    # sglang==0.5.23 configs/model_config.py _derive_context_length: a --context-length above
    # the derived length (Qwen3-8B: max_position_embeddings 40,960) is refused unless
    # SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is true (environ.py EnvBool: true/1/yes/y).
    line = ("{}python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 1 "
            "--context-length 131072")
    code, data, err = run(capsys, "plan", "--gpu", "H200", "--json", "--",
                          line.format("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 "))
    assert code == 0, err
    assert data["max_model_len"] == 131_072
    code, _, err = run(capsys, "plan", "--gpu", "H200", "--", line.format(""))
    assert code == 2 and "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN" in err
    assert "not a valid boolean" in refused(line.format(
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=maybe "))


# -- a selected attention backend (vllm==0.33) ---------------------------------------------


def plan_line(capsys: pytest.CaptureFixture[str], gpu: str, line: str) -> tuple[int, Any, str]:
    return run(capsys, "plan", "--gpu", gpu, "--engine", "vllm==0.33", "--json", "--", line)


@pytest.mark.parametrize(("gpu", "flag", "block"), [
    # v1/attention/backends/mla/flashmla.py: kernel block exactly 64 (Hopper).
    ("H200", "--attention-backend FLASHMLA", 64),
    # triton_mla.py: MultipleOf(16), so --block-size auto takes 16.
    ("H200", "--attention-config.backend TRITON_MLA", 16),
    # cutlass_mla.py: exactly 128, SM10x only.
    ("B200", "--attention-backend CUTLASS_MLA", 128),
])
def test_selected_mla_backend_sets_the_block(capsys: pytest.CaptureFixture[str], gpu: str,
                                             flag: str, block: int) -> None:
    code, data, err = plan_line(capsys, gpu,
                                f"vllm serve deepseek-ai/DeepSeek-V3 -tp 8 {flag}")
    assert code == 0, err
    assert data["block_size"] == block


@pytest.mark.parametrize(("gpu", "line", "reason"), [
    ("H200", "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --attention-backend CUTLASS_MLA",
     "['compute capability not supported']"),
    ("H200", "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --attention-backend FLASH_ATTN",
     "['MLA not supported']"),
    ("H200", "vllm serve Qwen/Qwen3-8B --attention-backend FLASHMLA",
     "['non-MLA not supported']"),
    # models/deepseek_v4/nvidia/model.py _select_dsv4_attn_cls.
    ("H200", "vllm serve deepseek-ai/DeepSeek-V4-Flash -tp 8 --kv-cache-dtype fp8 "
     "--attention-backend FLASHINFER_MLA_SPARSE", "is not a DeepSeek V4 attention backend"),
])
def test_selected_backend_refused_in_vllms_words(capsys: pytest.CaptureFixture[str], gpu: str,
                                                 line: str, reason: str) -> None:
    # platforms/cuda.py get_attn_backend_cls: a selected backend is validated alone.
    code, _, err = plan_line(capsys, gpu, line)
    assert code == 2 and reason in err


def test_backend_flags_given_twice_and_rocm_backends() -> None:
    assert "mutually exclusive" in refused(
        "vllm serve my-org/M --attention-backend FLASHMLA --attention-config.backend FLASHMLA")
    # A ROCm backend reaches the planner (planned on an AMD --gpu, refused on CUDA:
    # tests/plan/test_rocm_attention_backends.py); XPU and CPU ones stop here.
    assert t("vllm serve my-org/M --attention-backend ROCM_AITER_MLA").options[
        "--attention-backend"] == "ROCM_AITER_MLA"
    assert "XPU backend" in refused("vllm serve my-org/M --attention-backend XPU_MLA_SPARSE")
    assert t("vllm serve my-org/M --attention-backend flashinfer").options[
        "--attention-backend"] == "FLASHINFER"


def test_sglang_nsa_flags_are_read_as_their_dsa_spelling() -> None:
    # sglang==0.5.23 has --dsa-prefill-backend / --dsa-decode-backend and no --nsa-* flag
    # (arg_groups/fields/exec_.py); 0.5.9 had --nsa-* with a subset of the same choices
    # (server_args.py NSA_CHOICES). The renamed rows read the line as the current spelling,
    # with one warning line each naming it; before, the line was refused.
    from kvledger.cli.serve import removed
    from kvledger.cli.serve.table import load

    rows = removed.removed_flags("sglang")
    assert not set(rows) & set(load("sglang", None).by_option)
    assert {row.renamed_to for row in rows.values()} == {"--dsa-prefill-backend",
                                                         "--dsa-decode-backend"}
    out = t("sglang serve --model-path my-org/M --tp 8 --nsa-prefill-backend tilelang "
            "--nsa-decode-backend=tilelang")
    assert out.options["--dsa-prefill-backend"] == "tilelang"
    assert out.options["--dsa-decode-backend"] == "tilelang"
    assert len(out.warnings) == 2
    assert out.warnings[0].startswith("--nsa-prefill-backend is --dsa-prefill-backend in "
                                      "sglang 0.5.23")
    assert "\n" not in out.warnings[0]
    # The current flag's own checks apply to the old spelling: a value it has no choice for.
    assert "invalid choice: 'fastest'" in refused(
        "sglang serve --model-path my-org/M --nsa-decode-backend fastest")


def test_selected_standard_backend_on_a_hybrid(capsys: pytest.CaptureFixture[str]) -> None:
    # Qwen3.5 on an H200: vLLM's own choice is FLASH_ATTN (MultipleOf(16)); TRITON_ATTN
    # (MultipleOf(16), triton_attn.py) and FLASHINFER (16/32/64) take the same blocks, so the
    # plan is the default's. On SM10x FLASH_ATTN may run FA4 (hd256 blocks): not modelled.
    line = "vllm serve Qwen/Qwen3.5-397B-A17B -tp 8"
    code, plain, err = plan_line(capsys, "H200", line)
    assert code == 0, err
    for backend in ("TRITON_ATTN", "FLASHINFER"):
        code, data, err = plan_line(capsys, "H200", f"{line} --attention-backend {backend}")
        assert code == 0, err
        assert (data["block_size"], data["num_blocks"]) == (plain["block_size"],
                                                            plain["num_blocks"])
    code, _, err = plan_line(capsys, "B200", f"{line} --attention-backend FLASH_ATTN")
    assert code == 2 and "not modelled" in err and "drop --attention-backend" in err
