"""SGLang 0.5.23 refuses pp_size > 1 for a Transformers-backend model with no pipeline plan.

SGLang has no ``SupportsPP`` registry like vLLM's; its per-model pipeline refusals are in the
model classes. The one a model kvledger plans for SGLang can meet is the Transformers backend's
(srt/models/transformers.py ``TransformersBase.pipeline_parallel``). Expected values come from
``tests/oracles/sglang-0.5.23-pp-plans.json``, which ``tests/oracles/run_sglang_pp_plans.py``
wrote by evaluating SGLang's own ``_get_model_pp_plan`` expression with transformers 5.19.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

from kvledger.cli.main import main
from kvledger.plan.engines.sglang import served
from kvledger.plan.fit import fit_model
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS, LOCAL_DIR, needs_shared

PLANS = json.loads((LOCAL_DIR / "sglang-0.5.23-pp-plans.json").read_text())
MINITRON = CONFIGS / "nvidia--Minitron-4B-Base.CONVERTED.json"
SGLANG_WORDS = "does not support pipeline parallel yet!"


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_the_table_is_what_sglangs_expression_gave() -> None:
    assert set(PLANS) == set(served.TRANSFORMERS_BACKEND)
    assert set(served.TRANSFORMERS_BACKEND_NO_PP) == {
        arch for arch, row in PLANS.items() if not row["has_pp_plan"]}
    for arch, base in served.TRANSFORMERS_BACKEND_NO_PP.items():
        assert base.endswith("." + PLANS[arch]["base_model"])


def test_only_transformers_backend_models_without_a_plan_are_refused() -> None:
    assert SGLANG_WORDS in served.pipeline_parallel_refusal(("NemotronForCausalLM",))
    assert served.pipeline_parallel_refusal(("GPTNeoXForCausalLM",)) == ""  # has a plan
    assert served.pipeline_parallel_refusal(("LlamaForCausalLM",)) == ""  # SGLang's own class
    assert served.pipeline_parallel_refusal(()) == ""


@needs_shared
def test_plan_refuses_pp_for_minitron_with_sglangs_words() -> None:
    argv = ("plan", str(MINITRON), "--engine", "sglang", "--kv-cache-memory-bytes", "16GiB",
            "--json")
    code, out, _ = _run(*argv)
    assert code == 0 and json.loads(out)["engine"] == "sglang"
    for budget in (("--kv-cache-memory-bytes", "16GiB"), ("--gpu", "H100-80GB")):
        code, out, err = _run("plan", str(MINITRON), "--engine", "sglang", *budget,
                              "--pipeline-parallel-size", "2", "--json")
        line = err.strip()
        assert code == 2 and out == "" and "\n" not in line
        assert "SGLang 0.5.23 refuses to start" in line and SGLANG_WORDS in line


@needs_shared
def test_fit_proposes_no_pp_layout_for_it_with_sglang_only() -> None:
    sglang = fit_model(str(MINITRON), PlanRequest(engine="sglang"), gpu="L4", concurrency=64,
                       context=4096)
    assert {a.pipeline_parallel_size for a in sglang.attempts} == {1}
    vllm = fit_model(str(MINITRON), PlanRequest(engine="vllm"), gpu="L4", concurrency=64,
                     context=4096, tp_sizes=(1,))  # vLLM's NemotronForCausalLM: SupportsPP
    assert 2 in {a.pipeline_parallel_size for a in vllm.attempts}
