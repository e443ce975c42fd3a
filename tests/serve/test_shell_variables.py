"""Shell variables in a pasted line: set on an earlier line (expanded, as the shell does), or
left unset (``--port $PORT``: planned when the flag changes no memory, refused by name
otherwise). Lines written for these tests; no model is read (``translate`` is pure)."""

from __future__ import annotations

import pytest

from kvledger.cli.serve.errors import ServeLineError
from kvledger.cli.serve.line import read
from kvledger.cli.serve.translate import translate
from kvledger.cli.serve.translation import Context, Translation

CTX = Context(kv_cache_dtypes=("auto", "bfloat16", "fp8"))


def t(line: str) -> Translation:
    return translate([line], CTX)


def refused(line: str) -> str:
    with pytest.raises(ServeLineError) as info:
        t(line)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_variables_set_on_earlier_lines_are_expanded() -> None:
    out = t("export MODEL=org/model-a\n"
            "# comment lines between are skipped\n"
            "TP=4 PP=2\n"
            "vllm serve $MODEL --tensor-parallel-size ${TP} -pp $PP")
    assert out.model == "org/model-a"
    assert out.options["--tensor-parallel-size"] == "4"
    assert out.options["--pipeline-parallel-size"] == "2"


def test_only_exported_variables_are_the_environment() -> None:
    # export: the engine process sees it; a plain assignment line sets a shell variable only.
    line = read(["export VLLM_ALLOW_LONG_MAX_MODEL_LEN=1\nSEQS=64\nvllm serve org/m "
                 "--max-num-seqs $SEQS"])
    assert line.env == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}
    assert line.args[-2:] == ["--max-num-seqs", "64"]


def test_a_prefix_on_the_command_line_is_not_expanded_in_its_arguments() -> None:
    # bash expands the words before it runs `TP=4 vllm serve …`, so $TP is still unset there.
    assert "argument -tp: $TP is a shell variable this paste does not set" in refused(
        "TP=4 vllm serve org/m -tp $TP")


def test_an_unset_variable_in_a_flag_that_changes_no_memory_is_planned_with_a_note() -> None:
    # Before: "argument --port: invalid int value: '$PORT' (vllm refuses it too)".
    out = t("vllm serve org/m --port $PORT --data-parallel-rpc-port ${RPC_PORT} "
            "--host $HOST -tp 2")
    assert out.options["--tensor-parallel-size"] == "2"
    notes = " ".join(out.notes)
    assert "--port $PORT: a shell variable this paste does not set" in notes
    assert "--data-parallel-rpc-port ${RPC_PORT}" in notes
    out = t("python -m sglang.launch_server --model-path org/m --port $PORT --tp 2")
    assert any(n.startswith("--port $PORT") for n in out.notes)


@pytest.mark.parametrize(("line", "words"), [
    ("vllm serve org/m --tensor-parallel-size $TP",
     "argument --tensor-parallel-size: $TP is a shell variable this paste does not set, and "
     "--tensor-parallel-size can change the plan"),
    ("vllm serve org/m --kv-cache-dtype ${KV_DTYPE}", "argument --kv-cache-dtype: ${KV_DTYPE}"),
    ("vllm serve $MODEL -tp 2", "the model is the shell variable $MODEL, which this paste does "
     "not set: write the model id, or paste the line that sets it (MODEL=org/name)"),
    ("python -m sglang.launch_server --model-path ${MODEL_PATH} --tp 2",
     "the model is the shell variable ${MODEL_PATH}"),
    ("python -m sglang.launch_server --model-path org/m --mem-fraction-static $FRAC",
     "argument --mem-fraction-static: $FRAC is a shell variable"),
])
def test_an_unset_variable_that_could_change_the_plan_is_refused_by_name(line: str,
                                                                         words: str) -> None:
    assert words in refused(line)
