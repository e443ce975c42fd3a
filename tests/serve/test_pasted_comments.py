"""Shell comments in a pasted line are dropped as the shell drops them: a word starting with
``#`` to the end of its physical line, outside quotes. Lines written for these tests (pure:
no model is read)."""

from __future__ import annotations

from kvledger.cli.serve.line import read

LINE = "vllm serve org/m \\\n  --tensor-parallel-size 2"


def test_a_trailing_comment_is_dropped() -> None:
    # Before: "unrecognized arguments: # tp over two GPUs".
    assert read([LINE + "   # tp over two GPUs"]).args == ["org/m", "--tensor-parallel-size",
                                                           "2"]


def test_a_comment_line_inside_a_continuation_is_dropped() -> None:
    pasted = ("vllm serve org/m \\\n  # the parallel layout:\n  --tensor-parallel-size 2 \\\n"
              "  --max-model-len 8192  # a short context")
    assert read([pasted]).args == ["org/m", "--tensor-parallel-size", "2", "--max-model-len",
                                   "8192"]


def test_a_hash_inside_quotes_or_a_word_is_kept() -> None:
    pasted = ("vllm serve org/m --served-model-name a#b "
              "--chat-template '{# a jinja comment #}'  # but this goes")
    assert read([pasted]).args == ["org/m", "--served-model-name", "a#b", "--chat-template",
                                   "{# a jinja comment #}"]


def test_a_root_prompt_on_the_first_line_is_not_a_comment() -> None:
    assert read(["# vllm serve org/m -tp 2"]).args == ["org/m", "-tp", "2"]
