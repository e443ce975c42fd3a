"""Random serve lines and sizes: a Translation or one clean refusal, never anything else."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from kvledger.cli.serve.errors import ServeLineError
from kvledger.cli.serve.table import load
from kvledger.cli.serve.translate import translate
from kvledger.cli.serve.translation import Context
from kvledger.sizes import MAX_SIZE, SizeError, size

VALUES = ["0", "1", "-1", "2", "8", "0.9", "1.5", "nan", "inf", "32k", "32K", "1.5K", "10GiB",
          "1e9", "auto", "true", "", "None", "{}", '{"method": "mtp"}', "[1, 2]", "x" * 50,
          "9" * 400, "fp8", "bfloat16", "--", "-", "M2", "a b", "{"]


def _line(rng: random.Random, engine: str) -> list[str]:
    table = load(engine)
    options = [o for f in table.flags for o in f.options]
    head = ["vllm", "serve"] if engine == "vllm" else ["python", "-m", "sglang.launch_server"]
    words = [*head] + (["org/model"] if engine == "vllm" else ["--model-path", "org/model"])
    for _ in range(rng.randint(0, 8)):
        option = rng.choice(options)
        if rng.random() < 0.1:
            option = option[: rng.randint(2, len(option))]  # an abbreviation (or not)
        if rng.random() < 0.2:
            words.append(f"{option}={rng.choice(VALUES)}")
        else:
            words += [option] + [rng.choice(VALUES)] * rng.randint(0, 2)
    return words


def test_random_serve_lines_never_crash() -> None:
    rng = random.Random(20261201)
    outcomes = {"planned": 0, "refused": 0}
    for i in range(600):
        engine = "vllm" if i % 3 else "sglang"
        words = _line(rng, engine)
        try:
            translate(words, Context(kv_budget_given=rng.random() < 0.5))
            outcomes["planned"] += 1
        except ServeLineError as exc:
            assert "\n" not in str(exc) and str(exc)
            outcomes["refused"] += 1
    assert outcomes["planned"] > 30 and outcomes["refused"] > 30


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80))
def test_any_text_is_a_size_or_a_clean_refusal(text: str) -> None:
    for unit, minimum in (("bytes", 0), ("tokens", 1)):
        try:
            value = size(text, unit=unit, minimum=minimum)
        except SizeError as exc:
            assert "\n" not in str(exc)
        else:
            assert minimum <= value <= MAX_SIZE


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=-(10**30), max_value=10**30),
       st.sampled_from(["", "k", "K", "G", "g", "GiB", "MiB", "GB", "e3", "T"]))
def test_number_with_unit(number: int, unit: str) -> None:
    try:
        value = size(f"{number}{unit}", unit="bytes")
    except SizeError:
        return
    assert 0 <= value <= MAX_SIZE
