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


# -- line breaks without a backslash --------------------------------------------------------


def test_lines_broken_without_a_backslash_are_read_as_one_command_and_counted() -> None:
    # A shell would run "vllm serve org/m --port 8001" alone; a page that wrapped the line
    # meant one command, so it is read as one, and the count lets the plan say so.
    pasted = "vllm serve org/m --port 8001\n  --max-model-len 4096\n  -tp 2"
    got = read([pasted])
    assert got.args == ["org/m", "--port", "8001", "--max-model-len", "4096", "-tp", "2"]
    assert got.joined_lines == 2


def test_backslash_continuations_and_variables_above_are_not_counted() -> None:
    assert read([LINE]).joined_lines == 0
    assert read(["export TP=2\nMODEL=org/m\nvllm serve $MODEL \\\n  -tp $TP"]).joined_lines == 0


def test_a_comment_line_inside_a_continuation_is_a_break_to_a_shell() -> None:
    # bash reads "vllm serve org/m \<newline>  # a comment line" as one line whose comment
    # runs to its end; with no backslash after the comment the command ends there.
    assert read(["vllm serve org/m \\\n  # a comment line\n  -tp 2"]).joined_lines == 1


def test_the_plan_says_the_lines_were_joined() -> None:
    from kvledger.cli.serve.translate import translate

    out = translate(["vllm serve org/m --port 8001\n  --max-model-len 4096"])
    assert out.options["--max-model-len"] == "4096"
    assert any("1 more line(s) after a line break with no backslash" in n for n in out.notes)
