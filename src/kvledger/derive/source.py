"""Where a model's config comes from: a path, a directory, a dict, a config object, or a
catalog id of the bundled real configs. Nothing here touches the network.

Start-up: a catalog id is the CLI's common case, and it is resolved with ``os.path`` only.
``pathlib`` (≈ 10 ms with the ``urllib.parse`` / ``ipaddress`` it imports on Python 3.11) is
imported when the name may be on disk, and ``importlib.resources`` not at all: the catalog is
package data beside this file, and ``resources.files`` of a package on the file system is
that same directory (a zipped install would not work either way: ``Path(str(...))`` of a
zip entry is no file).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kvledger.derive.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

_CATALOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalog")


@dataclass(frozen=True)
class ModelSource:
    """A loaded config plus the companion files that change cache sizing."""

    label: str
    config: dict[str, Any]
    hf_quant_config: dict[str, Any] | None = None
    directory: Path | None = None
    notes: tuple[str, ...] = field(default=())


def _catalog_dir() -> Path:
    from pathlib import Path

    return Path(_CATALOG)


def catalog_ids() -> list[str]:
    """The bundled model ids (``org--name.json`` is ``org/name``), sorted."""
    out = []
    for path in _catalog_dir().glob("*.json"):
        if path.name.endswith(".hf_quant_config.json"):
            continue
        out.append(path.stem.replace("--", "/", 1))
    return sorted(out)


def _read_json(path: Path | str) -> dict[str, Any]:
    try:
        with open(path) as handle:  # the default encoding, as Path.read_text()
            data = json.loads(handle.read())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: malformed JSON ({exc.msg} at line {exc.lineno})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _from_directory(directory: Path, label: str) -> ModelSource:
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise ConfigError(f"{directory}: no config.json in this directory")
    quant_path = directory / "hf_quant_config.json"
    quant = _read_json(quant_path) if quant_path.is_file() else None
    notes = ("hf_quant_config.json found beside config.json",) if quant else ()
    return ModelSource(label, _read_json(config_path), quant, directory, notes)


def _from_catalog(model_id: str) -> ModelSource | None:
    stem = model_id.replace("/", "--", 1)
    path = os.path.join(_CATALOG, f"{stem}.json")
    if not os.path.isfile(path):
        return None
    quant_path = os.path.join(_CATALOG, f"{stem}.hf_quant_config.json")
    quant = _read_json(quant_path) if os.path.isfile(quant_path) else None
    return ModelSource(model_id, _read_json(path), quant, None, ("bundled catalog config",))


def _may_be_on_disk(text: str) -> bool:
    """False only when ``Path(text).expanduser()`` certainly names nothing on disk.

    Without ``~``, empty, ``.`` or empty components (``Path`` drops the last two, and turns
    ``""`` into ``"."``), ``Path`` normalization only merges repeated slashes, which ``stat``
    ignores; if ``lstat`` then finds nothing, ``Path.is_dir()`` and ``is_file()`` find nothing
    either. Anything else takes the ``pathlib`` road, exactly as before.
    """
    parts = text.replace(os.sep, "/").split("/")
    if text.startswith("~") or "" in parts or "." in parts:
        return True
    return os.path.lexists(text)


def load_source(model: Any, *, hf_quant_config: Mapping[str, Any] | None = None) -> ModelSource:
    """Resolve ``model`` to a config.

    Accepts: a ``ModelSource``; a dict; an object with ``to_dict()`` (a transformers
    ``PretrainedConfig``, duck-typed so transformers is never imported); a path to a
    ``config.json``; a model directory (its ``config.json`` and ``hf_quant_config.json``); or a
    catalog id such as ``meta-llama/Meta-Llama-3.1-8B``.
    """
    if isinstance(model, ModelSource):
        return model
    quant = dict(hf_quant_config) if hf_quant_config is not None else None
    if isinstance(model, Mapping):
        return ModelSource("<dict>", dict(model), quant)
    to_dict = getattr(model, "to_dict", None)
    if callable(to_dict):
        data = to_dict()
        if not isinstance(data, Mapping):
            raise ConfigError("config object's to_dict() did not return a mapping")
        label = str(data.get("_name_or_path") or type(model).__name__)
        return ModelSource(label, dict(data), quant)
    from_text = isinstance(model, str)
    if not from_text:
        from pathlib import Path

        from_text = isinstance(model, Path)
    if from_text:
        text = str(model)
        if _may_be_on_disk(text):
            from pathlib import Path

            path = Path(text).expanduser()
            if path.is_dir():
                return _from_directory(path, text)
            if path.is_file():
                return ModelSource(text, _read_json(path), quant)
        found = _from_catalog(text)
        if found is not None:
            return found
        raise ConfigError(
            f"{text!r} is neither a config.json, a model directory, nor a catalog id "
            "(run 'kvledger models' for the bundled ids)"
        )
    raise ConfigError(
        f"cannot read a model config from a {type(model).__name__}; pass a path, a directory, "
        "a dict, a config object or a catalog id"
    )
