"""Shell variables a pasted line leaves unexpanded (``--port $PORT``, ``vllm serve $MODEL``).

The line was copied from a script whose shell set them. A flag that cannot change memory
(class INERT) is planned without its value, with a note; anywhere else the value could change
the plan, so the line is refused naming the variable and the two ways to a plan (write the
value, or paste the line that sets it: ``line.py`` expands variables set on earlier lines).
"""

from __future__ import annotations

from typing import Any

from kvledger.cli.serve.errors import ServeLineError
from kvledger.cli.serve.rules import INERT, Rule
from kvledger.cli.serve.scan import SHELL_VARIABLE, Scanned, Unexpanded

_MODEL_DESTS = frozenset({"model", "model_path"})


def _variable(value: Any) -> str | None:
    if isinstance(value, Unexpanded):
        return value.text
    if isinstance(value, list):
        return next((v.text for v in value if isinstance(v, Unexpanded)), None)
    return None


def _model_refusal(launcher: str, text: str) -> ServeLineError:
    name = text.strip("${}")
    return ServeLineError(f"{launcher}: the model is the shell variable {text}, which this paste "
                          f"does not set: write the model id, or paste the line that sets it "
                          f"({name}=org/name) before the command")


def settle(scanned: Scanned, rules: dict[str, Rule], launcher: str) -> list[str]:
    """Drop the inert flags whose value is an unset variable (their notes returned); raise on
    any other flag, or a positional model, that is one."""
    for word in scanned.positionals:
        if SHELL_VARIABLE.fullmatch(word):
            raise _model_refusal(launcher, word)
    notes: list[str] = []
    kept = []
    for item in scanned.given:
        text = _variable(item.value)
        if text is None:
            kept.append(item)
            continue
        if item.flag.dest in _MODEL_DESTS:
            raise _model_refusal(launcher, text)
        rule = rules.get(item.flag.dest)
        if rule is not None and rule.cls == INERT:
            notes.append(f"{item.option} {text}: a shell variable this paste does not set; the "
                         "flag changes no memory, so its value is not needed")
            continue
        name = text.strip("${}")
        raise ServeLineError(f"{launcher}: argument {item.option}: {text} is a shell variable "
                             f"this paste does not set, and {item.option} can change the plan: "
                             f"write its value, or paste the line that sets it "
                             f"(export {name}=…) before the command")
    scanned.given[:] = kept
    return notes
