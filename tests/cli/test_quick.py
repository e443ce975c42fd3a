"""``cli.quick`` reads a plain command line exactly as argparse does, and declines the rest.

The expected reading is always argparse's own (``command_parser(name).parse_args``), the
parser every declined line still goes to; ``cli.quick`` exists only to skip building it
(bench/startup.py). tests/conftest.py makes the same comparison for every command line the
rest of the suite runs in-process.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from kvledger.cli import main as cli
from kvledger.cli.quick import Options, read
from quick_reading import argparse_reading, same_reading

MODEL = "meta-llama/Meta-Llama-3.1-8B"


# Lines people and scripts write: each must be read without argparse (else the start-up gain
# is gone without a failing test), and read as argparse reads it.
PLAIN = [
    ("plan", [MODEL, "--engine", "vllm", "--kv-cache-memory-bytes", "10737418240", "--json"]),
    ("plan", [MODEL, "--gpu", "H100-80GB", "--json"]),
    ("plan", ["--gpu=H200", MODEL, "-tp", "2", "--max-model-len", "32k", "--kv-cache-dtype",
              "fp8", "--enable-prefix-caching", "--block-size", "auto"]),
    ("plan", [MODEL, "--gpu", "A100-80GB", "--no-enable-prefix-caching", "--engine", "sglang",
              "--mem-fraction-static", "0.85", "--disable-radix-cache", "--concurrency", "16"]),
    ("plan", [MODEL, "--kv-cache-memory-bytes", "16GiB", "--model-local-kv-charged", "a",
              "--model-local-kv-charged", "b", "--model-local-kv-stage", "a=1", "--offline",
              "--revision", "main", "--page-size", "32", "--context-length", "8192"]),
    ("fit", [MODEL, "--gpu", "H100-80GB", "--concurrency", "8", "--context", "8192", "--json"]),
    ("fit", [MODEL, "--gpu", "H200", "--concurrency", "1", "--context", "128k", "-pp", "2"]),
    ("inspect", [MODEL, "--json", "--kv-cache-dtype", "fp8_e5m2"]),
    ("models", ["--json"]),
    ("catalog", []),
]


@pytest.mark.parametrize(("name", "args"), PLAIN)
def test_a_plain_command_line_is_read_as_argparse_reads_it(name: str, args: list[str]) -> None:
    quick = cli.quick_parse(name, args)
    assert quick is not None
    assert same_reading(vars(quick), argparse_reading(name, args))


# Lines whose argparse reading has a subtlety cli.quick does not model, or that argparse
# refuses: cli.quick declines them all, and the real parser answers as before.
DECLINED = [
    ("plan", [MODEL, "--kv-cache-mem", "1024", "--json"]),  # an abbreviation argparse accepts
    ("plan", [MODEL, "--help"]),
    ("plan", ["-h"]),
    ("plan", [MODEL, "--gpu-memory-utilization", "2", "--gpu", "H200"]),  # refused value
    ("plan", [MODEL, "--gpu"]),  # no value
    ("plan", [MODEL, "--json=1", "--gpu", "H200"]),
    ("plan", [MODEL, "--max-num-seqs", "-5", "--gpu", "H200"]),
    ("plan", [MODEL, "--gpu=", "--json"]),
    ("plan", [MODEL, "--flag-nobody-defined", "--gpu", "H200"]),
    ("plan", [MODEL, "another-model", "--gpu", "H200"]),
    ("plan", ["--gpu", "H200"]),  # no MODEL
    ("plan", [MODEL, "--kv-cache-dtype", "int3", "--gpu", "H200"]),  # not a choice
    ("plan", [MODEL, "--gpu", "H200", "--", "vllm", "serve", MODEL]),
    ("plan", [MODEL, "-tp=2", "--gpu", "H200"]),  # argparse's explicit short value
    ("plan", [MODEL, "-tp2", "--gpu", "H200"]),
    ("plan", ["", "--gpu", "H200"]),
    ("fit", [MODEL, "--concurrency", "8", "--context", "8192"]),  # required --gpu missing
    ("explain", ["vllm.log"]),  # not a quick command
]


@pytest.mark.parametrize(("name", "args"), DECLINED)
def test_a_line_with_a_subtlety_is_left_to_argparse(name: str, args: list[str]) -> None:
    assert cli.quick_parse(name, args) is None


def test_an_abbreviation_still_means_what_argparse_says() -> None:
    # Declined above; through main the real parser still takes it (its unique prefix).
    reading = argparse_reading("plan", [MODEL, "--kv-cache-mem", "1024"])
    assert reading is not None and reading["kv_cache_memory_bytes"] == 1024


def _fill_with(*calls: tuple[tuple[str, ...], dict[str, Any]]) -> Any:
    def fill(p: Any) -> None:
        for spellings, kwargs in calls:
            p.add_argument(*spellings, **kwargs)
    return fill


@pytest.mark.parametrize("definition", [
    (("--many",), {"nargs": "+"}),  # nargs is not modelled
    (("--count",), {"action": "count"}),  # nor is another action
    (("--x",), {"dest": "y"}),  # nor an explicit dest
])
def test_a_definition_it_does_not_model_declines_every_line(
        definition: tuple[tuple[str, ...], dict[str, Any]]) -> None:
    fill = _fill_with((("model",), {}), definition)
    assert read(fill, ["m"]) is None


def test_two_actions_on_one_dest_decline() -> None:
    # "--a-b" and "--a_b" both store to dest "a_b": argparse's first-default rule, not modelled.
    assert read(_fill_with((("--a-b",), {}), (("--a_b",), {})), []) is None
    assert read(_fill_with((("--a-b",), {}), (("--a-c",), {})), []) is not None


def test_a_default_set_over_an_option_declines() -> None:
    options = Options()
    options.add_argument("--other")
    options.set_defaults(other="x")  # argparse would change --other's default: not modelled
    assert options.parse([]) is None


# -- generated lines -------------------------------------------------------------------------

VALUES = ["1", "2", "0", "8", "16GiB", "32k", "0.9", "1e9", "abc", "auto", "fp8", "H200",
          "-1", "-", "x=1", "", "sglang", "vllm", "2.5", "inf", "nan", "1_000", " 3 "]


def _spellings(name: str) -> tuple[list[str], dict[str, Any]]:
    options = Options()
    cli.QUICK[name](options)
    return sorted(options.flags), {s: a for s, (a, _) in options.flags.items()}


# fit's required options, given in most generated lines (else nearly all are refused).
REQUIRED = {"fit": ["--gpu", "H200", "--concurrency", "8", "--context", "8192"]}


def _line(rng: random.Random, name: str) -> list[str]:
    spellings, actions = _spellings(name)
    words: list[str] = list(REQUIRED.get(name, [])) if rng.random() < 0.9 else []
    for _ in range(rng.randint(0, 7)):
        spelling = rng.choice(spellings)
        action = actions[spelling]
        choices = list(action.choices or ())
        value = rng.choice(choices + VALUES if choices else VALUES)
        form = rng.random()
        if form < 0.08 and len(spelling) > 5:
            spelling = spelling[:rng.randint(3, len(spelling) - 1)]  # a prefix
        if action.kind in ("store_true", "boolean_optional"):
            words.append(spelling + ("=1" if form > 0.95 else ""))
        elif form > 0.8 and spelling.startswith("--"):
            words.append(f"{spelling}={value}")
        elif form > 0.03:
            words += [spelling, value]
        else:
            words.append(spelling)  # its value forgotten
    if name != "models" and rng.random() < 0.9:
        words.insert(rng.randint(0, len(words)), rng.choice([MODEL, "org/other", "-x"]))
    if rng.random() < 0.05:
        words.append(rng.choice(["--", "-h", "extra"]))
    return words


@pytest.mark.parametrize("name", sorted(cli.QUICK))
def test_generated_lines_read_as_argparse_or_decline(name: str) -> None:
    rng = random.Random(f"quick-{name}")
    accepted = 0
    for _ in range(1000):
        args = _line(rng, name)
        quick = cli.quick_parse(name, args)
        if quick is None:
            continue
        accepted += 1
        assert same_reading(vars(quick), argparse_reading(name, args)), args
    # The generator reaches the accepting path often enough to mean something.
    assert accepted >= 60
