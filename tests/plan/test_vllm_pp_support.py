"""vLLM refuses pipeline parallelism for a model class without ``SupportsPP``.

Expected values are vLLM's own answers, written by ``tests/oracles/run_pp_oracle.py`` for each
release (0.32's beside it, 0.33's under ``vllm-0.33/``, ``--vllm 0.33``), each replayed as that
release (``--engine vllm==0.32``; ``--engine vllm``, the newest, for 0.33):

- ``vllm-0.32-pp-support.json``: for each architecture a derivable model type carries, what
  vLLM's registry says (``ModelRegistry._try_inspect_model_cls(arch).supports_pp``, the value
  ``is_pp_supported_model`` returns) and which module/class it comes from;
- ``vllm-0.32-pp-startup.jsonl``: real configs through vLLM's ``create_engine_config`` at
  ``pipeline_parallel_size=2`` — accepted, refused for PP, or refused earlier for another
  setting (which rule vLLM meets first).
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.derive import derive_model
from kvledger.derive.errors import ConfigError
from kvledger.derive.model_types import MODEL_TYPES, resolve, supported_types
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.engines.vllm.errors import VllmLayoutError
from kvledger.plan.engines.vllm.pp_support import (
    PP_SUPPORT,
    TRANSFORMERS_BACKEND,
    pp_table,
    pp_verdict,
)
from kvledger.plan.engines.vllm.releases import vllm_release
from kvledger.plan.engines.vllm.startup import VllmStartupError, pipeline_parallel_refusal
from kvledger.plan.fit import fit_model
from kvledger.plan.request import PlanRequest
from kvledger.source.catalog import catalog_ids
from kvledger.source.resolve import load_source
from oracle_cases import CONFIGS, LOCAL_DIR, bundled_id

R033 = vllm_release("0.33")  # the release these verdicts were asked of
ROOT = Path(__file__).resolve().parents[2]
# release -> (its table file, its start-up file, the --engine that plans as it)
RELEASE_FILES = {
    "0.32": (LOCAL_DIR / "vllm-0.32" / "vllm-0.32-pp-support.json",
             LOCAL_DIR / "vllm-0.32" / "vllm-0.32-pp-startup.jsonl",
             "vllm==0.32"),
    "0.33": (LOCAL_DIR / "vllm-0.33" / "vllm-0.33-pp-support.json",
             LOCAL_DIR / "vllm-0.33" / "vllm-0.33-pp-startup.jsonl", "vllm==0.33"),
}
STARTUP = [(release, json.loads(line)) for release, (_, path, _) in RELEASE_FILES.items()
           if path.is_file() for line in path.read_text().splitlines() if line.strip()]
VLLM_PP_WORDS = ("Pipeline parallelism is not supported for this model. Supported models "
                 "implement the `SupportsPP` interface.")
GEMMA3N = CONFIGS / "unsloth--gemma-3n-E2B-it.json"
WHISPER = "openai/whisper-tiny"  # a catalog id
BUDGET = 16 << 30


def _config(name: str) -> str:
    """A config the oracle ran: the catalog id that reproduces it, else the shared file."""
    return bundled_id(name) or str(CONFIGS / name)


def _served_by_vllm(model_type: str, release: str | None = None) -> bool:
    # A type only a vLLM-Omni stage builds (its talker) is in no table of vLLM's registry.
    from kvledger.plan.omni.pipelines import STAGE_ONLY_MODEL_TYPES

    return not vllm_release(release).not_served.get(model_type) and \
        model_type not in STAGE_ONLY_MODEL_TYPES


# -- the table is vLLM's answer ------------------------------------------------------------------


@pytest.mark.parametrize("release", list(RELEASE_FILES))
def test_the_table_is_what_vllms_registry_answered(release: str) -> None:
    path = RELEASE_FILES[release][0]
    answered = json.loads(path.read_text())
    assert answered["vllm"] == vllm_release(release).version
    rows = answered["architectures"]
    table = pp_table(vllm_release(release))
    assert set(table) == set(rows)
    for arch, row in rows.items():
        supported, where = table[arch]
        if row.get("registered") is False:
            assert (supported, where) == (None, ""), arch
            assert (arch in TRANSFORMERS_BACKEND) is row["transformers_backend"], arch
            continue
        assert supported is row["supports_pp"], arch
        module = row["module"].replace(".", "/")
        assert where.startswith(module) and where.endswith(" " + row["class"]), (arch, where)


def _answered(release: str) -> dict[str, Any]:
    answered: dict[str, Any] = json.loads(RELEASE_FILES[release][0].read_text())
    return answered


@pytest.mark.parametrize("release", list(RELEASE_FILES))
def test_every_transformers_backend_class_supports_pp(release: str) -> None:
    # why an unregistered architecture vLLM hands to its Transformers backend is a yes
    backend = _answered(release)["transformers_backend_supports_pp"]
    assert backend and all(backend.values())


@pytest.mark.parametrize("release", list(RELEASE_FILES))
def test_every_derivable_model_type_has_a_pp_verdict(release: str) -> None:
    """Each model type kvledger derives and the release serves is either carried by an
    architecture with a verdict, or only ever a wrapper's language model — then vLLM judges
    the wrapper's architecture (config.json's ``architectures``), which has one."""
    table = pp_table(vllm_release(release))
    judged = {t for arch, row in _answered(release)["architectures"].items()
              for t in row["model_types"]
              if table[arch][0] is not None or arch in TRANSFORMERS_BACKEND}
    inner_of: dict[str, list[str]] = {}
    for name in MODEL_TYPES:
        row = resolve(name)
        for inner in row.inner:
            inner_of.setdefault(inner, []).append(name)
    covered = set(judged)
    grew = True
    while grew:  # a wrapper may hold a wrapper (Qwen2.5-Omni → its thinker → its text model)
        more = {t for t, wrappers in inner_of.items() if any(w in covered for w in wrappers)}
        grew = not more <= covered
        covered |= more
    missing = [t for t in supported_types()
               if _served_by_vllm(t, release) and t not in covered]
    assert not missing, f"model types with no PP verdict: {missing}"
    assert len(judged) > 80  # the walk saw the table (not an empty file)


def _real_configs() -> list[str]:
    """Every catalog id, and every real config in ../shared/configs when it is there."""
    found = [str(p) for p in CONFIGS.glob("*.json")
             if not p.name.endswith(".hf_quant_config.json")]
    return catalog_ids() + sorted(found)


@pytest.mark.parametrize("path", _real_configs(), ids=lambda p: Path(p).name[:60])
def test_every_real_config_gets_vllms_verdict(path: str) -> None:
    """Every real config kvledger derives for vLLM resolves to a verdict: PP > 1 is planned or
    refused in vLLM's words, never refused for want of data."""
    try:
        facts = derive_model(path)
    except (ConfigError, ValueError):
        return  # kvledger refuses the config itself (its own tests cover why)
    if facts.model_type not in MODEL_TYPES or not _served_by_vllm(facts.model_type):
        return
    refusal = pipeline_parallel_refusal(facts, vllm_release("0.33"))
    if not facts.architectures:  # vLLM cannot pick a class either (Zamba2's native file)
        assert refusal is not None and "names no architectures" in str(refusal)
        return
    assert refusal is None or isinstance(refusal, VllmStartupError), str(refusal)


# -- how vLLM resolves the architecture ----------------------------------------------------------


def test_the_first_registered_architecture_decides() -> None:
    # vLLM inspect_model_cls walks architectures in order and takes the first its registry
    # holds: PhiModel is not registered, so ["PhiModel", "PhiForCausalLM"] is PhiForCausalLM.
    assert PP_SUPPORT["PhiModel"] == (None, "")
    verdict = pp_verdict(("PhiModel", "PhiForCausalLM"), R033)
    assert verdict is not None and verdict[:2] == ("PhiForCausalLM", True)
    # no registered architecture at all: vLLM's Transformers backend takes the first
    verdict = pp_verdict(("PhiModel",), R033)
    assert verdict is not None and verdict[:2] == ("PhiModel", True)
    assert pp_verdict(("Ernie4_5_ForCausalLM",), R033) is None  # unregistered, no backend either
    # a wrapper is judged as the wrapper class: Gemma-3n's (no SupportsPP), Gemma-3's (has it)
    assert pp_verdict(("Gemma3nForConditionalGeneration",), R033)[1:2] == (False,)  # type: ignore[index]
    assert pp_verdict(("Gemma3ForConditionalGeneration",), R033)[1:2] == (True,)  # type: ignore[index]
    # an architecture kvledger has no row for stops the walk: no guess
    assert pp_verdict(("SomethingNewForCausalLM", "LlamaForCausalLM"), R033) is None
    assert pp_verdict((), R033) is None


def test_an_unknown_architecture_is_refused_naming_it(tmp_path: Path) -> None:
    data = load_source("meta-llama/Meta-Llama-3.1-8B").config
    data["architectures"] = ["LlamaForSomethingNew"]
    (tmp_path / "config.json").write_text(json.dumps(data))
    facts = derive_model(str(tmp_path / "config.json"))
    request = PlanRequest(kv_cache_memory_bytes=BUDGET, max_model_len=4096,
                          pipeline_parallel_size=2)
    with pytest.raises(VllmLayoutError, match=r"\[LlamaForSomethingNew\]") as caught:
        plan_vllm(facts, request, BUDGET)
    assert not isinstance(caught.value, VllmStartupError)
    # at PP 1 the architecture is never looked up
    plan_vllm(facts, PlanRequest(kv_cache_memory_bytes=BUDGET, max_model_len=4096), BUDGET)


# -- vLLM's own start-up, replayed -----------------------------------------------------------------


def test_the_startup_file_has_both_answers() -> None:
    for release in RELEASE_FILES:
        cases = [c for r, c in STARTUP if r == release]
        assert any(c["ok"] for c in cases), release
        assert any(not c["ok"] and c["error_type"] == "NotImplementedError" for c in cases)
        assert any(not c["ok"] and c["error_type"] != "NotImplementedError" for c in cases)


@pytest.mark.parametrize(("release", "case"), STARTUP,
                         ids=[f"{r}-{c['why'][:50]}" for r, c in STARTUP])
def test_pp_startup_as_vllm(release: str, case: dict[str, Any]) -> None:
    args = case["engine_args"]
    request = PlanRequest(
        engine=RELEASE_FILES[release][2], kv_cache_memory_bytes=BUDGET,
        pipeline_parallel_size=case["pipeline_parallel_size"],
        max_model_len=args["max_model_len"],
        tensor_parallel_size=args.get("tensor_parallel_size", 1))
    facts = derive_model(_config(case["config"]))
    if case["ok"]:
        plan = plan_vllm(facts, request, BUDGET)
        assert len(plan.stages) == 2
        return
    with pytest.raises(VllmStartupError) as caught:
        plan_vllm(facts, request, BUDGET)
    ours = str(caught.value)
    assert ours.startswith(f"{vllm_release(release).short} refuses to start")
    if case["error_type"] == "NotImplementedError":
        assert case["error"] == VLLM_PP_WORDS
        assert VLLM_PP_WORDS in ours
    else:  # vLLM met another rule first, and so must kvledger: its words, not PP's
        assert VLLM_PP_WORDS not in ours
        vllm_reason = case["error"].split("Value error, ", 1)[1]
        first = re.split(r"[.(]", vllm_reason, maxsplit=1)[0].strip()
        assert first in ours, (first, ours)


# -- the CLI and fit -------------------------------------------------------------------------------


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_plan_refuses_pp_in_one_line_with_vllms_reason_first() -> None:
    code, out, err = _run("plan", WHISPER, "--engine", "vllm==0.32",
                          "--pipeline-parallel-size", "2", "--kv-cache-memory-bytes", "16GiB",
                          "--json")
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    line = json.loads(err)["error"]  # --json: the error is one JSON object
    assert line.index("vLLM 0.32 refuses to start: Pipeline parallelism is not supported") < 12
    assert "WhisperForConditionalGeneration" in line


def test_pp_refusal_comes_before_the_gpu_budget() -> None:
    # vLLM refuses the setting while it builds its config, before it profiles memory: at a
    # utilization that leaves no KV budget, PP 2 is still refused for PP, not for memory.
    base = ("plan", str(GEMMA3N), "--gpu", "L4", "--gpu-memory-utilization", "0.05", "--json")
    code, _, err = _run(*base)
    assert code == 2 and VLLM_PP_WORDS not in err
    code, _, err = _run(*base, "--pipeline-parallel-size", "2")
    assert code == 2 and VLLM_PP_WORDS in err


def test_fit_proposes_no_pp_layout_for_a_model_without_supportspp() -> None:
    result = fit_model(str(GEMMA3N), PlanRequest(), gpu="L4", concurrency=512, context=32768)
    assert {a.pipeline_parallel_size for a in result.attempts} == {1}
    assert [a.tensor_parallel_size for a in result.attempts] == [1, 2, 4, 8]
    assert not result.fits and "pipeline parallelism not tried" in result.reason
    assert VLLM_PP_WORDS in result.reason
    # the same load on a model with SupportsPP does try PP (Llama-3.1-8B: 2 GPUs as 1 × 2)
    llama = fit_model("meta-llama/Meta-Llama-3.1-8B", PlanRequest(), gpu="L4",
                      concurrency=512, context=32768)
    assert (1, 2) in [(a.tensor_parallel_size, a.pipeline_parallel_size)
                      for a in llama.attempts]


def test_a_pp_1_catalog_plan_does_not_import_the_table() -> None:
    code = ("import sys; from kvledger.cli.main import main; "
            "main(['plan', 'meta-llama/Meta-Llama-3.1-8B', '--kv-cache-memory-bytes', '16GiB', "
            "'--json']); print('kvledger.plan.engines.vllm.pp_support' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip().splitlines()[-1] == "False"
