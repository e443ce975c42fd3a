"""A serve line → kvledger plan options, flag by flag (pure: no model is read)."""

from __future__ import annotations

import json

import pytest

from kvledger.cli.serve import sglang_flags, vllm_flags
from kvledger.cli.serve.errors import ServeLineError
from kvledger.cli.serve.line import read, split
from kvledger.cli.serve.rules import CLASSES
from kvledger.cli.serve.table import load
from kvledger.cli.serve.translate import translate
from kvledger.cli.serve.translation import Context, Translation

KV_DTYPES = ("auto", "bfloat16", "float16", "float32", "fp8", "fp8_e4m3", "fp8_e5m2", "nvfp4")
H100 = Context(gpu_total_bytes=81559 << 20, gpu_name="H100-80GB", kv_cache_dtypes=KV_DTYPES)
NO_GPU = Context(kv_cache_dtypes=KV_DTYPES)
# The release whose words the refusal tests quote (a pinned one: the default moves).
V033 = Context(engine_spec="vllm==0.33", kv_cache_dtypes=KV_DTYPES)


def t(line: str | list[str], ctx: Context = NO_GPU) -> Translation:
    return translate([line] if isinstance(line, str) else line, ctx)


def refused(line: str, ctx: Context = NO_GPU) -> str:
    with pytest.raises(ServeLineError) as info:
        t(line, ctx)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- the tables ---------------------------------------------------------------------------


@pytest.mark.parametrize(("engine", "rules"), [("vllm", vllm_flags.RULES),
                                                ("sglang", sglang_flags.RULES)])
def test_every_engine_flag_is_classified_once(engine: str, rules: dict[str, object]) -> None:
    # The rules cover every release's flags, and nothing else: a flag no release has is a
    # stale rule.
    from kvledger.plan.engines.base import get_layout

    dests = {flag.dest for version in get_layout(engine).releases
             for flag in load(engine, version).flags}
    assert set(rules) == dests
    assert all(rule.cls in CLASSES for rule in rules.values())  # type: ignore[attr-defined]


def test_tables_are_the_engines_versions() -> None:
    # The default is the newest release; a pinned one reads its own parser's table.
    assert load("vllm").version == "0.34.0" and len(load("vllm").flags) == 328
    assert load("vllm", "0.33").version == "0.33.0" and len(load("vllm", "0.33").flags) == 321
    assert load("vllm", "0.32").version == "0.32.0" and len(load("vllm", "0.32").flags) == 317
    # 0.10.2's own parser (entrypoints/openai/cli_args.make_arg_parser); 0.19 to 0.31 read
    # 0.32's, the newest older table there is.
    assert load("vllm", "0.10").version == "0.10.2" and len(load("vllm", "0.10").flags) == 177
    assert load("vllm", "0.19").version == "0.32.0"
    assert load("sglang").version == "0.5.23" and len(load("sglang").flags) == 531


def test_033_switches_are_enable_disable_pairs() -> None:
    # vLLM 0.33 utils/argparse_utils.py EnableDisableAction: --enable-x / --disable-x, with
    # --no-enable-x still accepted (hidden from help); 0.32 had --x / --no-x only.
    assert t("vllm serve M --disable-prefix-caching").options == {
        "--no-enable-prefix-caching": None}
    assert t("vllm serve M --no-enable-prefix-caching").options == {
        "--no-enable-prefix-caching": None}
    assert t("vllm serve M --enable-prefix-caching").options == {"--enable-prefix-caching": None}
    with pytest.raises(ServeLineError, match=r"--disable-prefix-caching is not a vllm 0\.32"):
        translate(["vllm", "serve", "M", "--disable-prefix-caching"],
                  Context(engine_spec="vllm==0.32"))


# -- the issue's line ----------------------------------------------------------------------


def test_issue_line_maps_every_memory_flag() -> None:
    out = t("vllm serve meta-llama/Meta-Llama-3.1-8B --tensor-parallel-size 4 --max-model-len "
            "32k --gpu-memory-utilization 0.9 --kv-cache-dtype fp8 --port 8000", H100)
    assert out.model == "meta-llama/Meta-Llama-3.1-8B"
    assert out.options == {"--tensor-parallel-size": "4", "--gpu-memory-utilization": "0.9",
                           "--max-model-len": "32000",  # vLLM: 32k = 32 × 1000
                           "--kv-cache-dtype": "fp8"}
    assert out.ignored == {"inert": ["--port"]}
    # vLLM serve on a ≥ 70 GiB non-A100 GPU: 1024 sequences, 8192 batched tokens.
    assert out.defaults == {"--max-num-seqs": "1024", "--max-num-batched-tokens": "8192"}


# -- spellings -----------------------------------------------------------------------------


def test_one_quoted_string_with_env_prompt_and_continuations() -> None:
    out = t("$ VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 CUDA_VISIBLE_DEVICES=0,1 vllm serve M \\\n"
            "  -tp 2 \\\n  --max_model_len=32K")
    assert out.options["--tensor-parallel-size"] == "2"
    assert out.options["--max-model-len"] == "32768"  # 32K = 32 × 1024
    assert out.env == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}
    assert out.env_ignored == ["CUDA_VISIBLE_DEVICES"]


def test_argv_form_equals_string_form() -> None:
    words = ["vllm", "serve", "M", "--max-num-seqs", "64", "--block-size=32"]
    assert t(words).options == t(" ".join(words)).options == {
        "--max-num-seqs": "64", "--block-size": "32"}


def test_model_option_and_abbreviation() -> None:
    out = t("vllm serve --model M --tensor-parallel 2 --max-mod 4096")
    assert out.model == "M"
    assert out.options == {"--tensor-parallel-size": "2", "--max-model-len": "4096"}


def test_api_server_entry_point_takes_model_option() -> None:
    out = t("python3 -m vllm.entrypoints.openai.api_server --model M -tp 8")
    assert out.model == "M" and out.options["--tensor-parallel-size"] == "8"
    assert "--model" in refused("python -m vllm.entrypoints.openai.api_server M")


def test_boolean_flags_both_ways() -> None:
    assert "--no-enable-prefix-caching" in t("vllm serve M --no-enable-prefix-caching").options
    assert "--enable-prefix-caching" in t("vllm serve M --enable-prefix-caching").options


def test_json_speculative_config_and_dotted_keys() -> None:
    expected = {"--speculative-method": "mtp", "--num-speculative-tokens": "2"}
    assert t("""vllm serve M --speculative-config '{"method": "mtp", """
             """"num_speculative_tokens": 2}'""").options == expected
    assert t("vllm serve M --speculative-config.method mtp "
             "--speculative_config.num_speculative_tokens=2").options == expected
    assert t("vllm serve M --spec-method mtp --spec-tokens 2").options == expected


def test_speculative_refusals() -> None:
    assert "mutually exclusive" in refused(
        """vllm serve M -sc '{"method": "mtp", "num_speculative_tokens": 1}' --spec-tokens 2""")
    assert "num_speculative_tokens" in refused("vllm serve M --spec-method mtp")
    assert "kv_cache_dtype" in refused(
        """vllm serve M -sc '{"method": "eagle3", "num_speculative_tokens": 3, """
        """"kv_cache_dtype": "fp8"}'""")
    assert "not a vllm 0.33 SpeculativeConfig field" in refused(
        """vllm serve M -sc '{"method": "mtp", "num_speculative_tokens": 1, "bogus": 1}'""",
        V033)


def test_shell_around_the_command() -> None:
    out = t("nohup vllm serve M -tp 2 > server.log 2>&1 &")
    assert out.options == {"--tensor-parallel-size": "2"}
    assert any("server.log" in note for note in out.notes)


# -- classes -------------------------------------------------------------------------------


def test_inert_flags_are_listed_by_name_without_values() -> None:
    out = t("vllm serve M --api-key sk-secret --host 0.0.0.0 --port 8001 --served-model-name x")
    assert out.ignored == {"inert": ["--served-model-name", "--port", "--host", "--api-key"]}
    assert "sk-secret" not in str(out.to_json())


def test_flags_at_their_default_are_ignored() -> None:
    out = t("vllm serve M --offload-group-size 0 --no-enforce-eager --mamba-cache-dtype auto")
    assert set(out.ignored["default"]) == {"--offload-group-size", "--mamba-cache-dtype"}
    assert "--cuda-graph-bytes" not in out.options
    # --cpu-offload-gb 0 is vLLM's "no offload": no kvledger option.
    assert "--cpu-offload-gb" not in t("vllm serve M --cpu-offload-gb 0").options


def test_estimate_flags_are_ignored_with_a_note() -> None:
    out = t("vllm serve M --max-cudagraph-capture-size 64 -O3 --all2all-backend deepep_low_latency")
    assert set(out.ignored["estimate"]) == {"--max-cudagraph-capture-size",
                                            "--optimization-level", "--all2all-backend"}
    assert any("estimates" in line for line in out.summary())


def test_weights_flags_refused_by_name_unless_the_kv_budget_is_given() -> None:
    # Prefetch offload (--offload-group-size) is not modelled; --cpu-offload-gb and LoRA are
    # (test_launch_lines.py).
    message = refused("vllm serve M --offload-group-size 8")
    assert "--offload-group-size" in message and "--kv-cache-memory-bytes" in message
    out = t("vllm serve M --offload-group-size 8 --kv-cache-memory-bytes 8G")
    assert out.ignored["weights"] == ["--offload-group-size"]
    assert out.options["--kv-cache-memory-bytes"] == str(8 << 30)
    assert t("vllm serve M --cpu-offload-params experts",
             Context(kv_budget_given=True)).ignored == {"weights": ["--cpu-offload-params"]}


def test_kv_flags_always_refused_and_all_named_in_one_line() -> None:
    message = refused("""vllm serve M --hf-overrides '{"num_hidden_layers": 2}'"""
                      " --num-gpu-blocks-override 100 --kv-cache-memory-bytes 8G")
    assert "--hf-overrides" in message and "--num-gpu-blocks-override" in message


def test_auto_max_model_len_refused() -> None:
    for form in ("-1", "auto", "AUTO"):
        assert "_auto_fit_max_model_len" in refused(f"vllm serve M --max-model-len {form}")


def test_kv_dtypes_kvledger_does_not_plan_are_refused() -> None:
    assert "fp8_inc" in refused("vllm serve M --kv-cache-dtype fp8_inc")


def test_flags_vllm_refuses_are_refused_with_its_reason() -> None:
    assert "not a vllm 0.33 flag" in refused("vllm serve M --no-such-flag 3", V033)
    assert "ambiguous option" in refused("vllm serve M --max-num 4")
    # vLLM 0.32's parser lists the KV dtypes (invalid choice); 0.33's takes any string and
    # leaves float32 to CacheConfig, where kvledger's own --kv-cache-dtype refuses it too.
    assert "invalid choice" in refused("vllm serve M --kv-cache-dtype float32",
                                       Context(engine_spec="vllm==0.32"))
    assert t("vllm serve M --kv-cache-dtype float32").options == {"--kv-cache-dtype": "float32"}
    assert "decimals are not allowed" in refused("vllm serve M --max-model-len 1.5K")
    assert "ignored explicit argument" in refused("vllm serve M --enforce-eager=true")
    assert "10GiB" in refused("vllm serve M --kv-cache-memory-bytes 10GiB")


def test_no_model_and_not_a_serve_line() -> None:
    assert "names no model" in refused("vllm serve --port 8000")
    assert "expected a serve line" in refused("curl localhost:8000/v1/models")
    # vllm/vllm-openai's ENTRYPOINT is `vllm serve`: the words after the image are its argv
    # (tests/serve/test_serve_wrappers.py).
    assert t("docker run vllm/vllm-openai --model M").model == "M"


def test_config_file_refused() -> None:
    assert "--config" in refused("vllm serve M --config serve.yaml")


# -- mapped behaviours ---------------------------------------------------------------------


def test_enforce_eager_means_no_graph_memory() -> None:
    assert t("vllm serve M --enforce-eager").options["--cuda-graph-bytes"] == "0"


def test_zero_kv_cache_memory_bytes_is_unset_to_vllm() -> None:
    out = t("vllm serve M --kv-cache-memory-bytes 0")
    assert "--kv-cache-memory-bytes" not in out.options
    assert any("not set" in note for note in out.notes)


def test_cudagraph_estimate_env() -> None:
    out = t("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 vllm serve M")
    assert out.options["--cuda-graph-bytes"] == "0"
    assert "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS" in refused(
        "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=no vllm serve M")


def test_kv_changing_env_refused() -> None:
    assert "VLLM_VIDEO_LOADER_BACKEND" in refused(
        "VLLM_VIDEO_LOADER_BACKEND=pynvvideocodec vllm serve M")
    assert t("VLLM_VIDEO_LOADER_BACKEND=opencv vllm serve M").env == {}
    out = t("VLLM_NOT_A_VARIABLE=1 vllm serve M", V033)
    assert any("not a vllm 0.33 environment variable" in note for note in out.notes)


@pytest.mark.parametrize(("gpu", "total", "expected"), [
    # EngineArgs.get_batch_defaults, OPENAI_API_SERVER: ≥ 160 GiB → 1024 / 16384;
    # ≥ 70 GiB and not an A100 → 1024 / 8192; else 256 / 2048.
    ("B200", 183359 << 20, ("1024", "16384")),
    ("H100-80GB", 81559 << 20, ("1024", "8192")),
    ("A100-80GB", 81920 << 20, ("256", "2048")),
    ("L40S", 46068 << 20, ("256", "2048")),
])
def test_vllm_serve_batch_defaults_follow_the_gpu(gpu: str, total: int,
                                                  expected: tuple[str, str]) -> None:
    out = t("vllm serve M", Context(gpu_total_bytes=total, gpu_name=gpu))
    assert (out.defaults["--max-num-seqs"], out.defaults["--max-num-batched-tokens"]) == expected
    doubled = t("vllm serve M --performance-mode throughput",
                Context(gpu_total_bytes=total, gpu_name=gpu))
    assert doubled.defaults["--max-num-seqs"] == str(2 * int(expected[0]))


def test_vllm_default_utilization_is_left_to_the_plan() -> None:
    """A line that states no utilization passes none: the plan's own default is vLLM 0.32's
    (CacheConfig.gpu_memory_utilization 0.92, config/cache.py), labelled as not given."""
    assert "--gpu-memory-utilization" not in t("vllm serve M").defaults
    assert "--gpu-memory-utilization" not in t("vllm serve M").argv()


def test_chunked_prefill_off_needs_batched_tokens() -> None:
    assert "--max-num-batched-tokens" in refused("vllm serve M --no-enable-chunked-prefill")
    assert t("vllm serve M --no-enable-chunked-prefill --max-num-batched-tokens 32k").options


def test_dtype_and_quantization_are_checked_against_the_model() -> None:
    out = t("vllm serve M --dtype half --quantization fp8")
    assert out.requires == {"dtype": "float16", "quantization": "fp8"}


# -- SGLang --------------------------------------------------------------------------------


def test_sglang_launch_server_line() -> None:
    out = t("python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2 --context-length "
            "32k --mem-fraction-static 0.85 --page-size 16 --kv-cache-dtype bf16 "
            "--cuda-graph-max-bs-decode 64 --disable-radix-cache --port 30000")
    assert out.engine == "sglang" and out.model == "Qwen/Qwen3-8B"
    assert out.options == {
        "--tensor-parallel-size": "2", "--max-model-len": "32000", "--block-size": "16",
        "--mem-fraction-static": "0.85", "--cuda-graph-max-bs": "64",
        "--disable-radix-cache": None, "--kv-cache-dtype": "bfloat16"}
    assert out.ignored == {"inert": ["--port"]}


def test_sglang_serve_positional_model_and_sizes() -> None:
    out = t("sglang serve M --context-length 1M --max-total-tokens 64Ki")
    assert out.model == "M"
    # SGLang's own grammar: 1M = 10**6 (vLLM's 1M would be 2**20), 64Ki = 65,536.
    assert out.options == {"--max-model-len": "1000000", "--max-total-tokens": "65536"}
    assert "case-sensitive" in refused("sglang serve M --context-length 32K")


def test_sglang_speculative_and_refusals() -> None:
    out = t("python -m sglang.launch_server --model-path M --speculative-algorithm NEXTN "
            "--speculative-num-steps 3")
    assert out.options["--speculative-method"] == "mtp"
    assert "--cuda-graph-max-bs" in refused(
        "python -m sglang.launch_server --model-path M --cuda-graph-max-bs 64")  # ambiguous
    # HiCache's host tier is planned (hicache.py); its storage backends are not.
    hicache = t("python -m sglang.launch_server --model-path M --enable-hierarchical-cache "
                "--hicache-size 40")
    assert "--enable-hierarchical-cache" in hicache.options
    assert hicache.options["--hicache-size"] == "40"
    assert "--hicache-storage-backend" in refused(
        "python -m sglang.launch_server --model-path M --enable-hierarchical-cache "
        "--hicache-storage-backend file")
    assert "--disable-prefill-cuda-graph" in refused(
        "python -m sglang.launch_server --model-path M --disable-prefill-cuda-graph")
    out = t("python -m sglang.launch_server --model-path M --disable-prefill-cuda-graph "
            "--mem-fraction-static 0.8")
    assert out.ignored["reserve"] == ["--disable-prefill-cuda-graph"]


def test_split_keeps_argv_as_given() -> None:
    assert split(["vllm", "serve", "M"]) == ["vllm", "serve", "M"]
    assert read(["vllm serve 'a b' -tp 2"]).args == ["a b", "-tp", "2"]


def test_revision_and_offline_are_kvledger_source_options() -> None:
    out = t("HF_HUB_OFFLINE=1 vllm serve org/model --revision abc123")
    assert out.options == {"--revision": "abc123", "--offline": None}
    assert t("sglang serve org/model --revision v2").options == {"--revision": "v2"}


def test_expert_parallel_is_a_plan_option() -> None:
    """vLLM's EP is planned (plan/engines/vllm/experts.py), with or without DP, and so is
    EPLB (plan/engines/vllm/eplb.py; tests/plan/engines/vllm/test_eplb.py)."""
    for line in ("vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --enable-expert-parallel",
                 "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 -dp 2 -ep"):
        assert "--enable-expert-parallel" in t(line).options
    out = t("vllm serve deepseek-ai/DeepSeek-V3 -dp 8 --enable-expert-parallel --enable-eplb "
            "--eplb-config '{\"num_redundant_experts\": 8}'")
    assert "--enable-eplb" in out.options
    assert json.loads(out.options["--eplb-config"]) == {"num_redundant_experts": 8}
    out = t("python -m sglang.launch_server --model-path M --tp 8 --ep-size 8")
    assert any("same bytes per GPU" in note for note in out.notes)
    # DP attention's tp_size counts every GPU: --ep-size equal to it is the same bytes too.
    out = t("python -m sglang.launch_server --model-path M --tp 8 --dp 8 "
            "--enable-dp-attention --ep-size 8")
    assert "--enable-dp-attention" in out.options
    # moe_tp_size = tp // ep (runtime_context.py): EP 4 × moe-TP 2 is 1/8 of the experts.
    out = t("python -m sglang.launch_server --model-path M --tp 8 --ep-size 4")
    assert any("1/8 of the expert bytes" in note for note in out.notes)
    assert "--ep-size" in refused("python -m sglang.launch_server --model-path M --tp 8 "
                                  "--ep-size 3")
