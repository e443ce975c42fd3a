"""What a serve line means to kvledger: the ``plan`` options, what was ignored, and why."""

from __future__ import annotations

from typing import Any

from kvledger.cli.serve.errors import ServeLineError
from kvledger.cli.serve.rules import ESTIMATE, INERT, KV, RESERVE, WEIGHTS, Rule, changes
from kvledger.cli.serve.scan import Given, Scanned
from kvledger.records import field, record


@record(frozen=True)
class Context:
    """What the rest of the kvledger command line tells the translation."""

    kv_budget_given: bool = False  # kvledger's own --kv-cache-memory-bytes was given
    gpu_total_bytes: int | None = None  # from --gpu / --gpu-total-bytes, for engine defaults
    gpu_name: str | None = None
    kv_cache_dtypes: tuple[str, ...] = ()  # what kvledger's --kv-cache-dtype accepts
    # kvledger's --engine as given ("vllm==0.32", "vllm"), pinned to an installed release
    # kvledger knows: the line is read with that release's flags when it names that engine.
    engine_spec: str = ""
    # kvledger's --draft-config was given before '--' (a hub-id draft then needs no reading).
    draft_config_given: bool = False


@record()
class Translation:
    engine: str  # kvledger's --engine
    engine_label: str  # "vllm 0.32"
    launcher: str  # "vllm serve", "python -m sglang.launch_server", ...
    model: str = ""
    # kvledger plan flag → value (None: a switch). Set from the line; always applied.
    options: dict[str, str | None] = field(default_factory=dict)
    # The engine's own defaults where kvledger's differ; applied unless the user set them.
    defaults: dict[str, str] = field(default_factory=dict)
    # Flags read but not planned, by class (rules.py): INERT, ESTIMATE, WEIGHTS, "default".
    ignored: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # One line each for what a person should fix in the line though it plans (an old
    # flag spelling read as the current one).
    warnings: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # memory-relevant variables, with values
    env_ignored: list[str] = field(default_factory=list)  # names only (values may be secrets)
    # Facts the model must match (checked once the config is read): {"dtype": "float16"}.
    requires: dict[str, str] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)

    def ignore(self, cls: str, name: str) -> None:
        names = self.ignored.setdefault(cls, [])
        if name not in names:
            names.append(name)

    def argv(self) -> list[str]:
        out = [self.model]
        for flag, value in self.options.items():
            out += [flag] if value is None else [flag, value]
        return out

    def raise_refusals(self) -> None:
        if self.refused:
            raise ServeLineError(
                f"{self.launcher}: cannot plan this line: {'; '.join(self.refused)}"
            )

    def summary(self) -> list[str]:
        """Lines for a person: what was ignored and why (the plan itself says the rest)."""
        lines = list(self.notes)
        labels = {
            INERT: "ignored (cannot change memory)",
            "default": "ignored (set to the engine's default)",
            ESTIMATE: "ignored (they change only reserves kvledger estimates: activation "
                      "peak, CUDA graphs, communication buffers)",
            WEIGHTS: "ignored (they change the weights, which do not count against a given "
                     "--kv-cache-memory-bytes)",
            RESERVE: "ignored (they change only the default memory fraction's reserve, and "
                     "the fraction or the KV budget is given)",
        }
        for cls, label in labels.items():
            if self.ignored.get(cls):
                lines.append(f"{label}: {', '.join(self.ignored[cls])}")
        if self.env_ignored:
            lines.append(f"environment not read by kvledger: {', '.join(self.env_ignored)}")
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine, "engine_version": self.engine_label,
            "launcher": self.launcher, "model": self.model, "kvledger_argv": self.argv(),
            "engine_defaults": dict(self.defaults), "ignored": {k: list(v) for k, v in
                                                                self.ignored.items()},
            "env": dict(self.env), "env_ignored": list(self.env_ignored),
            "requires": dict(self.requires), "notes": list(self.notes),
            "warnings": list(self.warnings),
        }


def classify(scanned: Scanned, rules: dict[str, Rule], out: Translation, *,
             kv_budget_given: bool, skip: set[str], fraction_given: bool = False) -> None:
    """Apply the class rules to every flag not in ``skip`` (the mapped ones)."""
    seen: set[str] = set()
    for item in reversed(scanned.given):  # the last occurrence of a flag is the one used
        dest = item.flag.dest
        if dest in seen or dest in skip:
            continue
        seen.add(dest)
        rule = rules.get(dest)
        if rule is None:  # pragma: no cover - the tests keep the tables complete
            raise ServeLineError(f"{out.launcher}: {item.flag.name} is not classified "
                                 "by kvledger yet (please report it)")
        _apply(item, rule, out, kv_budget_given, fraction_given)


def _apply(item: Given, rule: Rule, out: Translation, kv_budget_given: bool,
           fraction_given: bool) -> None:
    name = item.option  # as the line spelled it (an abbreviation resolved to the full flag)
    if rule.cls == INERT:
        out.ignore(INERT, name)
    elif not changes(rule, item.value, item.flag.default):
        out.ignore("default", name)
    elif rule.cls == ESTIMATE:
        out.ignore(ESTIMATE, name)
    elif rule.cls == WEIGHTS and kv_budget_given:
        out.ignore(WEIGHTS, name)
    elif rule.cls == WEIGHTS:
        out.refused.append(f"{name} {rule.why}, which kvledger does not model (drop it, or "
                           "give the KV budget with --kv-cache-memory-bytes)")
    elif rule.cls == RESERVE and (kv_budget_given or fraction_given):
        out.ignore(RESERVE, name)
    elif rule.cls == RESERVE:
        out.refused.append(f"{name} {rule.why}, which kvledger does not model (drop it, or "
                           "give --mem-fraction-static)")
    elif rule.cls == KV:
        out.refused.append(f"{name} {rule.why}, which kvledger does not model")
