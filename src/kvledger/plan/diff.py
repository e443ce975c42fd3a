"""Two plans of one model side by side, and why each number moved: ``diff_plans``.

"Why did my KV capacity change after I upgraded?" is a question about two plans of the same
model: the same launch under two engine releases (``vllm==0.32`` → ``vllm==0.33``), two
engines (vLLM → SGLang) or two GPUs. ``diff_plans(model, request_a, request_b)`` calls
``plan_model`` once for each side and lines the two plans up (``DiffLine``): the block size,
every KV pool (vLLM's groups: blocks, bytes a block, blocks a request), tokens, concurrency,
the refusal flag, and every budget line by its key.

Each line that differs names what differs between the two questions (``Cause``):

- between two releases of one engine, the fields of the release profiles
  (``engines/<engine>/releases/profile.py``) whose values differ, each with the citation its
  release module gives (``CITES``: field → the file and function of that release's source the
  value was read in), for every release between the two that changed it;
- between engines, the engine; between GPUs, the GPU; and any other field of the two
  requests that differs (``--from-gpu`` / ``--to-gpu``, a flag given on one side only).

Which of the differing fields moved a given line is found by planning again: side A with one
field at side B's value, and side B with one field back at side A's (``_moved_by``); a line
that moves then is named with that field. A line no single field moves between the two ends
(two fields acting together across several releases) is named by walking the known releases
between them: the fields of each step where it moved (``_by_steps``).
Where a field cannot be planned alone (the engine, the release of another engine), every
difference is named on every line it could touch, and the JSON says so (``attributed``).
"""

from __future__ import annotations

from contextlib import contextmanager

from kvledger import records
from kvledger.records import record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping
    from typing import Any

    from kvledger.plan.engines.release import Release
    from kvledger.plan.request import PlanRequest
    from kvledger.plan.result import PlanResult


# Profile fields that say which release it is or what it is called, not how it plans.
_NAMING_FIELDS = frozenset({"engine", "product", "version", "flag_table", "transformers"})
# Request fields that say the same question in another spelling (``engine_release`` is part of
# ``engine``), or that every side resolves for itself (the batch defaults of its engine and GPU).
_SAME_QUESTION = frozenset({"engine_release", "batch_defaults"})


@record(frozen=True)
class Cause:
    """One thing that differs between the two questions: a release profile's field (with the
    citations of the releases that set it), the engine, or a request field."""

    kind: str  # "release" (a profile field), "engine", or "request" (a request field)
    name: str  # the field: "gdn_checkpoint_alignment", "engine", "gpu"
    a: Any
    b: Any
    cites: tuple[str, ...] = ()  # "vLLM 0.33.0: platforms/interface.py …"
    # The line keys it moves alone (diff_plans); None where it cannot be planned alone.
    moves: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "from": _plain(self.a),
                "to": _plain(self.b), "cites": list(self.cites),
                "moves": None if self.moves is None else list(self.moves)}


@record(frozen=True)
class DiffLine:
    """One line of the two plans: its key, a label for people, and each side's value."""

    key: str  # "block_size", "pool[0].entries", "budget.weights"
    label: str
    a: Any
    b: Any
    causes: tuple[str, ...] = ()  # Cause.name of each cause named for this line

    @property
    def differs(self) -> bool:
        return bool(self.a != self.b)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "label": self.label, "from": self.a,
                               "to": self.b, "differs": self.differs}
        if self.differs:
            out["causes"] = list(self.causes)
            if isinstance(self.a, int | float) and isinstance(self.b, int | float) and \
                    not isinstance(self.a, bool) and not isinstance(self.b, bool):
                out["change"] = self.b - self.a
                if self.a:
                    out["change_pct"] = round(100.0 * (self.b - self.a) / self.a, 2)
        return out


@record(frozen=True)
class PlanDiff:
    """What ``diff_plans`` returns: both plans, their lines, and what differs between the
    questions. ``attributed``: each differing line names the causes that move it alone (by
    planning again); False where it names every cause that could."""

    model: str
    side_a: str  # "vLLM 0.32.0" (+ " on H100-80GB")
    side_b: str
    a: PlanResult
    b: PlanResult
    lines: tuple[DiffLine, ...]
    causes: tuple[Cause, ...]
    attributed: bool

    @property
    def differences(self) -> tuple[DiffLine, ...]:
        return tuple(line for line in self.lines if line.differs)

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "from": self.side_a,
            "to": self.side_b,
            "lines": [line.to_json() for line in self.lines],
            "differences": [line.key for line in self.differences],
            "causes": [c.to_json() for c in self.causes],
            "attributed": self.attributed,
            "plans": {"from": self.a.to_json(), "to": self.b.to_json()},
        }


def _plain(value: Any) -> Any:
    """A profile value as JSON: sets sorted, mappings as dicts, the rest as given."""
    if isinstance(value, frozenset | set):
        return sorted(str(v) for v in value)
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


# -- the lines -------------------------------------------------------------------------------


_HEADLINE = (
    ("engine_release", "release planned"),
    ("block_size", "block size (tokens)"),
    ("num_blocks", "blocks"),
    ("kv_cache_tokens", "KV cache tokens"),
    ("max_concurrency", "max concurrency at max_model_len"),
    ("max_model_len", "max_model_len"),
    ("kv_cache_dtype", "KV cache dtype"),
    ("max_num_seqs", "max_num_seqs"),
    ("available_bytes", "KV budget per GPU (bytes)"),
    ("reserved_bytes", "KV bytes allocated per GPU"),
    ("bytes_per_token", "KV bytes per token (one rank)"),
    ("bytes_per_request", "state bytes per request (one rank)"),
)
_POOL_FIELDS = (("entries", "blocks"), ("entry_bytes", "bytes a block"),
                ("entries_per_req", "blocks a request"), ("reserved_bytes", "bytes"))
_GROUP_FIELDS = (("spec", "spec"), ("num_layers", "layers"), ("block_size", "block size"),
                 ("page_size_bytes", "page bytes"), ("blocks_per_request", "blocks a request"))
# Engine-only keys worth a line when either side has them.
_ENGINE_KEYS = (("vllm_refuses_to_start", "vLLM refuses to start"),
                ("max_running_requests", "max running requests"))


def plan_lines(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[DiffLine, ...]:
    """The two plans' JSON (``PlanResult.to_json``) line by line: the headline numbers,
    every pool (by position), the engine's own keys, and every budget line (by key)."""
    lines = [DiffLine(k, label, a.get(k), b.get(k)) for k, label in _HEADLINE]
    pools_a, pools_b = list(a.get("pools") or ()), list(b.get("pools") or ())
    for i in range(max(len(pools_a), len(pools_b))):
        pa = pools_a[i] if i < len(pools_a) else {}
        pb = pools_b[i] if i < len(pools_b) else {}
        name = pa.get("name") or pb.get("name") or str(i)
        if pa.get("name") != pb.get("name"):
            lines.append(DiffLine(f"pool[{i}].name", f"pool {i}", pa.get("name"),
                                  pb.get("name")))
        lines += [DiffLine(f"pool[{i}].{k}", f"pool {i} ({name}): {label}", pa.get(k),
                           pb.get(k)) for k, label in _POOL_FIELDS]
    lines += [DiffLine(k, label, a.get(k), b.get(k)) for k, label in _ENGINE_KEYS
              if k in a or k in b]
    groups_a, groups_b = list(a.get("kv_cache_groups") or ()), list(b.get("kv_cache_groups") or ())
    if groups_a or groups_b:
        lines.append(DiffLine("kv_cache_groups", "KV cache groups", len(groups_a) or None,
                              len(groups_b) or None))
        for i in range(max(len(groups_a), len(groups_b))):
            ga = groups_a[i] if i < len(groups_a) else {}
            gb = groups_b[i] if i < len(groups_b) else {}
            name = ga.get("spec") or gb.get("spec")
            lines += [DiffLine(f"group[{i}].{k}", f"group {i} ({name}): {label}", ga.get(k),
                               gb.get(k)) for k, label in _GROUP_FIELDS]
    budget_a = {line["key"]: line for line in a.get("budget") or ()}
    budget_b = {line["key"]: line for line in b.get("budget") or ()}
    for key in [*budget_a, *(k for k in budget_b if k not in budget_a)]:
        la, lb = budget_a.get(key, {}), budget_b.get(key, {})
        label = la.get("label") or lb.get("label") or key
        lines.append(DiffLine(f"budget.{key}", f"budget: {label}", la.get("bytes"),
                              lb.get("bytes")))
    return tuple(lines)


# -- the causes ------------------------------------------------------------------------------


def release_causes(releases: Iterable[Release], a: Release, b: Release,
                   cites_of: Callable[[Release], Mapping[str, str]]) -> tuple[Cause, ...]:
    """The profile fields whose values differ between releases ``a`` and ``b`` of one engine,
    each with a citation for every step between neighbouring releases from the older to the
    newer where it changed: the newer neighbour's ``CITES`` entry, else the older one's
    (``releases``: that engine's profiles, oldest first; ``cites_of(release)``: its module's
    ``CITES``)."""
    order = list(releases)
    lo, hi = sorted((order.index(a), order.index(b)))
    out = []
    for field in records.fields(a):
        name = field.name
        if name in _NAMING_FIELDS:
            continue
        va, vb = getattr(a, name), getattr(b, name)
        if va == vb:
            continue
        cites = []
        for before, after in zip(order[lo:hi], order[lo + 1:hi + 1], strict=True):
            if getattr(before, name) == getattr(after, name):
                continue
            # A newer release's module cites what it changed (v0_33.py); an older one's, what
            # it still does differently from its newer neighbour (v0_31.py).
            by = next((r for r in (after, before) if cites_of(r).get(name)), None)
            said = cites_of(by)[name] if by is not None else "(no citation in either profile)"
            cites.append(f"{before.label} -> {after.label}: {said}")
        out.append(Cause("release", name, va, vb, tuple(cites)))
    return tuple(out)


def request_causes(a: PlanRequest, b: PlanRequest) -> tuple[Cause, ...]:
    """The request fields the two sides ask differently (the engine as one cause when the
    engines differ; a release pin is not a request difference: the profiles say it)."""
    out = []
    if a.engine != b.engine:
        out.append(Cause("engine", "engine", a.engine, b.engine))
    # A batch size a side was not given is its engine's default for its GPU: a consequence
    # of the engine and GPU, not a cause of its own (an engine other than vLLM records none).
    resolved = set(_applied(a)) | set(_applied(b))
    if a.engine != b.engine:
        resolved |= {"max_num_seqs", "max_num_batched_tokens"}
    for field in records.fields(a):
        name = field.name
        if name in _SAME_QUESTION or name == "engine" or name in resolved:
            continue
        va, vb = getattr(a, name), getattr(b, name)
        if va != vb:
            out.append(Cause("request", name, va, vb))
    return tuple(out)


def _applied(request: PlanRequest) -> tuple[str, ...]:
    """The request fields its batch defaults filled in (``PlanRequest.batch_defaults``)."""
    defaults = getattr(request, "batch_defaults", None)
    return tuple(getattr(defaults, "applied", ()) or ())


def release_cites(release: Release) -> Mapping[str, str]:
    """The ``CITES`` of the module that defines ``release`` (``engines/vllm/releases/
    v0_33.py`` for vLLM 0.33.0: field → where in that release's source its value was read);
    empty when the module states none."""
    import sys

    major, minor, *rest = release.version.split(".")
    patch = [p for p in rest if p != "0"]
    stem = "_".join([f"v{major}", minor, *patch])
    module = f"kvledger.plan.engines.{release.engine}.releases.{stem}"
    try:
        __import__(module)
    except ImportError:
        return {}
    cites: Mapping[str, str] = getattr(sys.modules[module], "CITES", {})
    return cites


def _version_key(release: Release) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in release.version.split("."))


def _side(request: PlanRequest, plan: PlanResult) -> str:
    from kvledger.plan.engines.base import get_layout

    release = get_layout(request.engine, request.engine_release).release
    name = release.label if release is not None else plan.engine_label or request.engine
    return f"{name} on {request.gpu}" if request.gpu else name


def _moved(base: Mapping[str, Any], other: Mapping[str, Any]) -> set[str]:
    return {line.key for line in plan_lines(base, other) if line.differs}


def diff_plans(model: Any, request_a: PlanRequest, request_b: PlanRequest) -> PlanDiff:
    """Plan ``model`` for ``request_a`` and for ``request_b`` (``plan_model`` each) and line
    the two plans up, each differing line named with the causes that move it (module
    docstring). Errors are ``plan_model``'s, for the side that raised them."""
    from kvledger.plan.api import plan_model
    from kvledger.plan.engines.base import get_layout

    plan_a = plan_model(model, request_a)
    plan_b = plan_model(model, request_b)
    json_a, json_b = plan_a.to_json(), plan_b.to_json()
    lines = plan_lines(json_a, json_b)
    causes = list(request_causes(request_a, request_b))
    if request_a.engine == request_b.engine:
        layout = get_layout(request_a.engine, request_a.engine_release)
        ra = layout.release
        rb = get_layout(request_b.engine, request_b.engine_release).release
        if ra is not None and rb is not None and ra != rb:
            ordered = sorted(layout.releases.values(), key=_version_key)
            causes = [*release_causes(ordered, ra, rb, release_cites), *causes]
    differing = {line.key for line in lines if line.differs} - {"engine_release"}
    named: dict[str, list[str]] = {key: [] for key in differing}
    attributed = True
    alone: set[str] = set()
    for i, cause in enumerate(causes):
        moved = _moved_by(model, request_a, json_a, request_b, json_b, cause)
        if moved is None:
            attributed = False
            continue
        alone.add(cause.name)
        causes[i] = records.replace(cause, moves=tuple(
            line.key for line in lines if line.key in moved & differing))
        for key in moved & differing:
            named[key].append(cause.name)
    # A line no single cause moves between the two ends may move at one release step only
    # through two fields together (0.19's fixed hybrid alignment hides 0.33's checkpoint
    # alignment until 0.20 drops it): walk the known releases between the two and name the
    # fields of the steps where the line moved (``_by_steps``).
    unnamed = {key for key, names in named.items() if not names}
    if unnamed and request_a.engine == request_b.engine and request_a.engine_release != \
            request_b.engine_release:
        known = {c.name for c in causes}
        for key, names in _by_steps(model, request_a, request_b, unnamed).items():
            names = [n for n in names if n in known]
            named[key] = names
            for i, cause in enumerate(causes):
                moves = cause.moves or ()
                if cause.name in names and key not in moves:
                    causes[i] = records.replace(cause, moves=(*moves, key))
    # A line still unnamed (or whose causes cannot be planned alone) names every cause that
    # was not shown to leave it alone.
    for key, names in named.items():
        if not names:
            named[key] = [c.name for c in causes if c.name not in alone] or \
                [c.name for c in causes]
    if request_a.engine_release != request_b.engine_release or \
            request_a.engine != request_b.engine:
        named["engine_release"] = ["engine" if request_a.engine != request_b.engine
                                   else "release"]
    lines = tuple(records.replace(line, causes=tuple(named.get(line.key, ())))
                  if line.differs else line for line in lines)
    return PlanDiff(model=plan_a.model, side_a=_side(request_a, plan_a),
                    side_b=_side(request_b, plan_b), a=plan_a, b=plan_b, lines=lines,
                    causes=tuple(causes), attributed=attributed)


def _by_steps(model: Any, request_a: PlanRequest, request_b: PlanRequest,
              keys: set[str]) -> dict[str, list[str]]:
    """For each line key in ``keys``: the profile fields that moved it at the release steps
    where it moved, walking every known release of the engine from side A's to side B's
    (each planned with side A's question pinned to that release). At a step where the line
    moved, the fields that changed there and move it alone (``_moved_by`` between the two
    neighbours) are named, else every field that changed there. A key with no such step,
    or a walk the engine refuses somewhere, is left out."""
    from kvledger.errors import KvledgerError
    from kvledger.plan.api import plan_model
    from kvledger.plan.engines.base import get_layout

    layout = get_layout(request_a.engine, request_a.engine_release)
    ra = layout.release
    rb = get_layout(request_b.engine, request_b.engine_release).release
    ordered = sorted(layout.releases.values(), key=_version_key)
    if ra not in ordered or rb not in ordered:
        return {}
    i, j = ordered.index(ra), ordered.index(rb)
    path = ordered[i:j + 1] if i <= j else ordered[j:i + 1][::-1]
    name = request_a.engine.partition("==")[0]

    def pinned(release: Release) -> PlanRequest:
        return records.replace(request_a, engine=f"{name}=={release.version}",
                               engine_release=None)

    try:
        plans = [plan_model(model, pinned(r)).to_json() for r in path]
    except (KvledgerError, ValueError):
        return {}
    out: dict[str, list[str]] = {}
    for before, after, plan_before, plan_after in zip(path, path[1:], plans, plans[1:],
                                                      strict=False):
        moved = _moved(plan_before, plan_after) & keys
        if not moved:
            continue
        step = release_causes(ordered, before, after, release_cites)
        alone: dict[str, set[str]] = {}
        for cause in step:
            by = _moved_by(model, pinned(before), plan_before, pinned(after), plan_after,
                           cause)
            alone[cause.name] = by or set()
        for key in moved:
            names = [c.name for c in step if key in alone[c.name]] or [c.name for c in step]
            out.setdefault(key, [])
            out[key] += [n for n in names if n not in out[key]]
    return out


def _moved_by(model: Any, request_a: PlanRequest, json_a: Mapping[str, Any],
              request_b: PlanRequest, json_b: Mapping[str, Any],
              cause: Cause) -> set[str] | None:
    """The line keys ``cause`` moves alone: side A's plan with only that cause at side B's
    value, and side B's with only that cause back at side A's (a rule that acts only beside
    another moved one shows in the second); None when it cannot be planned alone (the
    engine) or when neither mix is a question the engine answers. A release field is
    planned as that side's profile with the one field changed (``_with_profile``)."""
    if cause.kind not in ("request", "release"):
        return None
    forward = _mixed(model, request_a, cause.name, cause.b, cause.kind)
    backward = _mixed(model, request_b, cause.name, cause.a, cause.kind)
    if forward is None and backward is None:
        return None
    moved: set[str] = set()
    if forward is not None:
        moved |= _moved(json_a, forward)
    if backward is not None:
        moved |= _moved(json_b, backward)
    return moved


def _mixed(model: Any, request: PlanRequest, name: str, value: Any,
           kind: str) -> Mapping[str, Any] | None:
    """The plan (JSON) of ``request`` with one request or release field at ``value``; None
    when the engine refuses that mix."""
    from kvledger.errors import KvledgerError
    from kvledger.plan.api import plan_model

    try:
        if kind == "request":
            return plan_model(model, records.replace(request, **{name: value})).to_json()
        with _with_profile(request, name, value) as pinned:
            return plan_model(model, pinned).to_json()
    except (KvledgerError, ValueError):  # that mix is refused: nothing shown by it
        return None


@contextmanager
def _with_profile(request: PlanRequest, name: str, value: Any) -> Iterator[PlanRequest]:
    """``request`` pinned to its release's profile with field ``name`` at ``value``, known to
    the engine for the block only (``engines/bound_release.bound``), so the layout
    ``plan_model`` binds holds it and every rule reads it."""
    from kvledger.plan.engines.base import get_layout
    from kvledger.plan.engines.bound_release import bound

    layout = get_layout(request.engine, request.engine_release)
    release = layout.release
    assert release is not None
    with bound(layout.releases, release, name, **{name: value}) as version:
        yield records.replace(request, engine=f"{request.engine}=={version}",
                              engine_release=None)
