"""Typed event records that round-trip to plain data.

Parts of voicesnap talk by passing small frozen dataclasses on queues, and a
game *is* its event log. Every record registered here can be written as one
JSON object (``to_data``) and read back into an equal record (``from_data``),
so logs can be replayed and rulings re-judged later.

Times in events are always seconds on the one audio clock (the input stream's
sample position divided by its rate), never wall-clock time.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from typing import Any, Callable, TypeVar, Union, get_args, get_origin, get_type_hints

__all__ = ["EventError", "event", "to_data", "from_data", "dumps", "loads", "registered"]

T = TypeVar("T")

_REGISTRY: dict[str, type] = {}


class EventError(ValueError):
    """Plain data that cannot become an event: the message says what and where."""


def event(name: str) -> Callable[[type[T]], type[T]]:
    """Register a dataclass as an event type under a stable wire name.

    The wire name, not the Python class name, goes into logs, so classes can be
    renamed or moved without breaking old logs.
    """

    def register(cls: type[T]) -> type[T]:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"{cls.__name__} must be a dataclass to be an event")
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise TypeError(f"event type {name!r} registered twice")
        setattr(cls, "EVENT_TYPE", name)
        _REGISTRY[name] = cls
        return cls

    return register


def registered() -> dict[str, type]:
    """Every known event type by wire name (for documentation and tests)."""
    return dict(_REGISTRY)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        to = getattr(value, "to_data", None)
        if callable(to):
            return to()
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, float) and value != value:  # NaN has no JSON form
        return None
    return value


def to_data(ev: Any) -> dict[str, Any]:
    """The event as plain JSON-compatible data, tagged with its wire name."""
    name = getattr(type(ev), "EVENT_TYPE", None)
    if name is None:
        raise TypeError(f"{type(ev).__name__} is not a registered event")
    own = getattr(ev, "to_data", None)
    if callable(own):  # records with a compact wire form of their own (audio)
        return {"type": name, **own()}
    data = {f.name: _plain(getattr(ev, f.name)) for f in dataclasses.fields(ev)}
    return {"type": name, **data}


def _coerce(hint: Any, value: Any, where: str) -> Any:
    """Turn plain data back into the annotated type (tuples, enums, nested records)."""
    if hint is Any or value is None and _allows_none(hint):
        return value
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(hint) if a is not type(None)]
        last: Exception | None = None
        for option in options:
            try:
                return _coerce(option, value, where)
            except (EventError, TypeError, ValueError) as exc:
                last = exc
        raise EventError(f"{where}: {value!r} fits none of {hint}") from last
    if origin is typing.Literal:
        if value not in get_args(hint):
            raise EventError(f"{where}: {value!r} is not one of {get_args(hint)}")
        return value
    if origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise EventError(f"{where}: expected a list, got {type(value).__name__}")
        args = get_args(hint)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            items = [_coerce(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
        elif origin is tuple and args:
            if len(args) != len(value):
                raise EventError(f"{where}: expected {len(args)} items, got {len(value)}")
            items = [_coerce(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value))]
        else:
            inner = args[0] if args else Any
            items = [_coerce(inner, v, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            raise EventError(f"{where}: expected an object, got {type(value).__name__}")
        kt, vt = get_args(hint) or (Any, Any)
        return {_coerce(kt, k, where): _coerce(vt, v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            try:
                return hint(value)
            except ValueError as exc:
                raise EventError(f"{where}: {value!r} is not a valid {hint.__name__}") from exc
        from_data_fn = getattr(hint, "from_data", None)
        if callable(from_data_fn) and not isinstance(value, hint):
            try:
                return from_data_fn(value)
            except EventError:
                raise
            except (TypeError, ValueError, KeyError) as exc:
                raise EventError(f"{where}: {exc}") from exc
        if dataclasses.is_dataclass(hint):
            if not isinstance(value, dict):
                raise EventError(f"{where}: expected an object for {hint.__name__}")
            return _build(hint, value, where)
        if hint is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if hint is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if hint in (str, bool) and isinstance(value, hint):
            return value
        if hint in (int, float, str, bool):
            raise EventError(f"{where}: expected {hint.__name__}, got {value!r}")
    return value


def _allows_none(hint: Any) -> bool:
    return hint is type(None) or (
        get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint)
    )


def _build(cls: type[T], data: dict[str, Any], where: str) -> T:
    hints = get_type_hints(cls)
    # Every caller passes a dataclass (checked by is_dataclass or by the registry); T is unbound.
    known = {f.name for f in dataclasses.fields(typing.cast(Any, cls)) if f.init}
    unknown = set(data) - known
    if unknown:
        raise EventError(f"{where}: unknown {'field' if len(unknown) == 1 else 'fields'} {sorted(unknown)} for {cls.__name__}")
    kwargs = {k: _coerce(hints.get(k, Any), v, f"{where}.{k}") for k, v in data.items()}
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise EventError(f"{where}: {exc}") from exc


def from_data(data: Any, where: str = "event") -> Any:
    """Rebuild an event from ``to_data`` output; raises EventError with a reason."""
    if not isinstance(data, dict):
        raise EventError(f"{where}: expected an object, got {type(data).__name__}")
    name = data.get("type")
    if name not in _REGISTRY:
        raise EventError(f"{where}: unknown event type {name!r}")
    body = {k: v for k, v in data.items() if k != "type"}
    cls = _REGISTRY[name]
    own = getattr(cls, "from_data", None)
    if callable(own):
        try:
            return own(body)
        except (TypeError, ValueError, KeyError) as exc:
            raise EventError(f"{where} ({name}): {exc}") from exc
    return _build(cls, body, f"{where} ({name})")


def dumps(ev: Any) -> str:
    """One event as one compact JSON line (no newline)."""
    return json.dumps(to_data(ev), separators=(",", ":"), sort_keys=False)


def loads(line: str, where: str = "event") -> Any:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise EventError(f"{where}: not JSON ({exc.msg} at column {exc.colno})") from exc
    return from_data(data, where)
