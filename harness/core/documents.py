"""The one strict reader of every JSON and YAML document the harness reads, whoever wrote it.

A document is refused, naming its file, the key path and what was expected, where a lenient reader
would silently pick a meaning: a key given twice (a merge that "accepted both" sides), a key no
schema reads, a number as a string, a float where an integer is meant, ``"false"`` or ``1`` as a
bool, NaN or infinity, a number of thousands of digits. Bombs are bounded before they cost
anything: the document's size (:data:`MAX_BYTES`, :data:`MAX_YAML_BYTES` for YAML), its nesting
depth (:data:`MAX_DEPTH`), and YAML aliases and anchors (refused outright: no file the harness reads
needs them).

:func:`parse_json` / :func:`parse_yaml` (text) and :func:`read_json` / :func:`read_yaml` (a file)
give plain Python values; :class:`Fields` reads one object of them typed, key by key, and
:meth:`Fields.done` refuses the keys nobody read.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn

from harness.core.errors import HarnessError

MAX_BYTES = 64 * 1024 * 1024  # the largest document read (a COCO file of a big validation set fits)
# The largest YAML document: YAML is read by the pure-Python loader, at about 0.3 MB/s (dataset and
# export yamls are a few kB), so that a large one is refused in about 3 s rather than read for minutes.
MAX_YAML_BYTES = 1024 * 1024
MAX_DEPTH = 64  # objects and lists nested deeper than any file the harness reads
MAX_DIGITS = 40  # the longest integer literal (an int64 has 19 digits)


class DocumentError(HarnessError):
    """A JSON or YAML document refused: names the file, the key path and what was expected."""


def _where(source: str, path: str) -> str:
    return f"{source}: field {path}" if path else source


def _place(source: str, path: str) -> str:
    """Where a value is: its field, or the document's top level."""
    return _where(source, path) if path else f"{source}: (top level)"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# --- JSON --------------------------------------------------------------------------------------


class _Refused:
    """What a JSON hook refused, left in the value's place until the refusal's key path is found."""

    def __init__(self, found: str, expected: str) -> None:
        self.found, self.expected = found, expected


class _Hooks:
    """The parse hooks of one JSON document: each refusal is kept in place (:class:`_Refused`), so that
    the error can name its key path, which the hooks themselves cannot see."""

    def __init__(self) -> None:
        self.refused = False

    def _refuse(self, found: str, expected: str) -> _Refused:
        self.refused = True
        return _Refused(found, expected)

    def pairs(self, items: list[tuple[str, Any]]) -> dict[str, Any] | _Refused:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                return self._refuse(f"key {key!r} given twice in one object", "each key once")
            out[key] = value
        return out

    def integer(self, text: str) -> int | _Refused:
        digits = len(text.lstrip("-"))
        if digits > MAX_DIGITS:
            return self._refuse(f"an integer of {digits} digits", f"at most {MAX_DIGITS}")
        return int(text)

    def number(self, text: str) -> float | _Refused:
        value = float(text)
        if not math.isfinite(value):
            return self._refuse(f"the number {text[:40]!r} is too large", "a finite number")
        return value

    def constant(self, name: str) -> _Refused:
        return self._refuse(f"{name} is not a JSON number", "a finite number or null")


def _first_refused(value: Any, path: str = "") -> tuple[str, _Refused] | None:
    """The key path and the refusal first met in document order (depth is bounded before parsing)."""
    if isinstance(value, _Refused):
        return path, value
    if isinstance(value, dict):
        children = [(f"{path}.{key}" if path else str(key), child) for key, child in value.items()]
    elif isinstance(value, list):
        children = [(f"{path}[{index}]", child) for index, child in enumerate(value)]
    else:
        return None
    for child_path, child in children:
        found = _first_refused(child, child_path)
        if found is not None:
            return found
    return None


def _text(text: str | bytes, source: str, limit: int, sized: str, decoded: str) -> str:
    """``text`` as a string; refused where longer than ``limit`` or not UTF-8 (``sized``, ``decoded``: what the
    two refusals expected)."""
    if len(text) > limit:
        raise DocumentError(f"{source}: {len(text)} bytes, expected {sized} of at most {limit}")
    if isinstance(text, bytes):
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise DocumentError(f"{source}: not UTF-8 text (byte {error.start}), expected {decoded}") from None
    return text


def parse_json(text: str | bytes, source: str) -> Any:
    """The JSON value in ``text`` (``source`` names it in errors), strictly: see the module."""
    text = _text(text, source, MAX_BYTES, "a document", "a JSON document")
    _check_json_depth(text, source)
    hooks = _Hooks()
    try:
        value = json.loads(
            text,
            object_pairs_hook=hooks.pairs,
            parse_int=hooks.integer,
            parse_float=hooks.number,
            parse_constant=hooks.constant,
        )
    except json.JSONDecodeError as error:
        raise DocumentError(
            f"{source}: not valid JSON at line {error.lineno} column {error.colno} ({error.msg})"
        ) from None
    except (ValueError, RecursionError) as error:  # a limit of Python's own (int digits, recursion)
        raise DocumentError(f"{source}: not a readable JSON document ({type(error).__name__}: {error})") from None
    found = _first_refused(value) if hooks.refused else None
    if found is not None:
        path, refused = found
        where = f" (field {path})" if path else ""
        raise DocumentError(f"{source}: {refused.found}{where}, expected {refused.expected}")
    return value


def _check_json_depth(text: str, source: str) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH` before parsing (brackets inside strings aside)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise DocumentError(f"{source}: nested deeper than {MAX_DEPTH} levels, expected a flatter document")
        elif char in "]}":
            depth -= 1


# --- YAML --------------------------------------------------------------------------------------


def parse_yaml(text: str | bytes, source: str) -> Any:
    """The YAML value in ``text`` (``source`` names it in errors), strictly: see the module. Plain
    YAML 1.1 scalars keep their YAML types (``yes`` is a bool, as in Ultralytics' own reads)."""
    import yaml

    text = _text(text, source, MAX_YAML_BYTES, "a YAML document", "a YAML document")

    # The pure-Python loader: the C one composes nodes where aliases and depth cannot be seen.
    class Loader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                raise DocumentError(
                    f"{source}: line {mark.line + 1}: a YAML alias, expected plain values (aliases are not read)"
                )
            event = self.peek_event()
            if getattr(event, "anchor", None) is not None:
                raise DocumentError(
                    f"{source}: line {event.start_mark.line + 1}: a YAML anchor &{event.anchor}, "
                    "expected plain values (anchors are not read)"
                )
            if not isinstance(event, yaml.CollectionStartEvent):  # a scalar: no deeper (depth counts as in JSON)
                return super().compose_node(parent, index)
            Loader.depth += 1
            try:
                if Loader.depth > MAX_DEPTH:
                    raise DocumentError(f"{source}: nested deeper than {MAX_DEPTH} levels, expected a flatter document")
                return super().compose_node(parent, index)
            finally:
                Loader.depth -= 1

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if not isinstance(key, str | int) or isinstance(key, bool):
                    raise DocumentError(
                        f"{source}: line {key_node.start_mark.line + 1}: key {_show(key)}, expected a string or "
                        "an integer"
                    )
                if key in seen:
                    raise DocumentError(
                        f"{source}: line {key_node.start_mark.line + 1}: key {key!r} given twice in one mapping, "
                        "expected each key once"
                    )
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_int(self, node: Any) -> int:
            if len(str(node.value).lstrip("+-").replace("_", "")) > MAX_DIGITS:
                raise DocumentError(
                    f"{source}: line {node.start_mark.line + 1}: an integer of {len(node.value)} digits, "
                    f"expected at most {MAX_DIGITS}"
                )
            return int(super().construct_yaml_int(node))

        def construct_yaml_float(self, node: Any) -> float:
            value = float(super().construct_yaml_float(node))
            if not math.isfinite(value):
                raise DocumentError(
                    f"{source}: line {node.start_mark.line + 1}: {str(node.value)[:40]!r} is not a finite number"
                )
            return value

    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    Loader.add_constructor("tag:yaml.org,2002:float", Loader.construct_yaml_float)
    try:
        loader = Loader(text)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as error:
        raise DocumentError(f"{source}: not valid YAML ({' '.join(str(error).split())})") from None
    except (ValueError, RecursionError, TypeError) as error:
        raise DocumentError(f"{source}: not a readable YAML document ({type(error).__name__}: {error})") from None


# --- files -------------------------------------------------------------------------------------


def read_bytes(path: str | os.PathLike[str], what: str = "document") -> bytes:
    """A document file's bytes, at most :data:`MAX_BYTES` (a device, a pipe or a huge file is refused
    unread), or a :class:`DocumentError` naming the file and why it cannot be read."""
    file = Path(path)
    try:
        with open(file, "rb", opener=_open_regular) as fh:
            size = os.fstat(fh.fileno()).st_size
            data = fh.read(min(size, MAX_BYTES) + 1)  # a buffer of the file's size, not of the bound
            if len(data) > size:  # grown since: read on, up to the bound
                data += fh.read(MAX_BYTES + 1 - len(data))
    except FileNotFoundError:
        raise DocumentError(f"{file}: no such {what} file") from None
    except IsADirectoryError:
        raise DocumentError(f"{file}: a folder, expected a {what} file") from None
    except _NotRegular:
        raise DocumentError(
            f"{file}: not a regular file (a device, a pipe or a socket), expected a {what} file"
        ) from None
    except OSError as error:
        raise DocumentError(f"{file}: the {what} cannot be read ({error.strerror or error})") from None
    if len(data) > MAX_BYTES:
        raise DocumentError(f"{file}: larger than {MAX_BYTES} bytes, expected a {what} of at most that")
    return data


class _NotRegular(OSError):
    """A path that opens as something else than a file or a folder."""


def _open_regular(name: str, flags: int) -> int:
    """Open without blocking (a pipe without a writer would wait forever) and keep only a regular file."""
    fd = os.open(name, flags | getattr(os, "O_NONBLOCK", 0))
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        os.close(fd)
        raise IsADirectoryError(name)
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _NotRegular(name)
    return fd


def read_json(path: str | os.PathLike[str], what: str = "JSON document") -> Any:
    return parse_json(read_bytes(path, what), str(path))


def read_yaml(path: str | os.PathLike[str], what: str = "YAML document") -> Any:
    return parse_yaml(read_bytes(path, what), str(path))


# --- typed reads ---------------------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


_MISSING = object()


class Fields:
    """Typed reads of one object (a mapping) of a parsed document. Each read names the key it
    took; :meth:`done` refuses any key no read took. Errors name ``source``, the key path from the
    document's top and what was expected."""

    def __init__(self, data: Any, source: str, path: str = "") -> None:
        self.source, self.path = source, path
        if not isinstance(data, Mapping):
            self.fail(None, data, "an object of fields")
        self.data: Mapping[Any, Any] = data
        self.taken: set[Any] = set()

    def key_path(self, key: Any) -> str:
        return f"{self.path}.{key}" if self.path else str(key)

    def fail(self, key: Any, value: Any, expected: str) -> NoReturn:
        where = self.path if key is None else self.key_path(key)
        raise DocumentError(f"{_place(self.source, where)} is {_show(value)}, expected {expected}")

    def has(self, key: Any) -> bool:
        return key in self.data

    def raw(self, key: Any, default: Any = _MISSING, expected: str = "") -> Any:
        """The value itself, unchecked (the caller checks it and names the key through :meth:`fail`)."""
        self.taken.add(key)
        if key not in self.data:
            if default is _MISSING:
                said = f", expected {expected}" if expected else ""
                raise DocumentError(f"{_where(self.source, self.key_path(key))} is missing{said}")
            return default
        return self.data[key]

    def _absent(self, key: Any, default: Any) -> bool:
        """``key`` is absent and ``default`` stands for it (the key counts as read)."""
        if key in self.data or default is _MISSING:
            return False
        self.taken.add(key)
        return True

    def value(self, key: Any, check: Callable[[Any], bool], expected: str, default: Any = _MISSING) -> Any:
        """The value of ``key`` where ``check`` holds (``default`` where the key is absent, if given)."""
        if self._absent(key, default):
            return default
        value = self.raw(key, expected=expected)
        if not check(value):
            self.fail(key, value, expected)
        return value

    def _of_type(self, key: Any, kind: type, words: str, default: Any, nonempty: bool) -> Any:
        """The value of ``key`` where it is a ``kind`` (``words``: "string", "list"), not empty if ``nonempty``."""
        expected = f"a non-empty {words}" if nonempty else f"a {words}"
        return self.value(key, lambda v: isinstance(v, kind) and (bool(v) or not nonempty), expected, default)

    def string(self, key: Any, default: Any = _MISSING, *, nonempty: bool = False) -> Any:
        return self._of_type(key, str, "string", default, nonempty)

    def boolean(self, key: Any, default: Any = _MISSING) -> Any:
        return self.value(key, lambda v: isinstance(v, bool), "true or false", default)

    def integer(self, key: Any, default: Any = _MISSING, *, lo: int | None = None, hi: int | None = None) -> Any:
        return self.value(key, lambda v: _is_int(v) and _within(v, lo, hi), _range("an integer", lo, hi), default)

    def number(
        self,
        key: Any,
        default: Any = _MISSING,
        *,
        lo: float | None = None,
        hi: float | None = None,
        nullable: bool = False,
    ) -> Any:
        if self._absent(key, default):
            return default
        expected = _range("a number", lo, hi) + (" or null" if nullable else "")
        value = self.value(key, lambda v: (nullable and v is None) or (_is_number(v) and _within(v, lo, hi)), expected)
        return None if value is None else float(value)

    def object(self, key: Any, default: Any = _MISSING) -> Any:
        if self._absent(key, default):
            return default
        return Fields(self.raw(key, expected="an object of fields"), self.source, self.key_path(key))

    def list(self, key: Any, default: Any = _MISSING, *, nonempty: bool = False) -> Any:
        return self._of_type(key, list, "list", default, nonempty)

    def objects(self, key: Any, default: Any = _MISSING) -> Any:
        """A list of objects, each as :class:`Fields` named ``key[i]``."""
        if self._absent(key, default):
            return default
        items = self.list(key)
        return [Fields(item, self.source, f"{self.key_path(key)}[{i}]") for i, item in enumerate(items)]

    def items(self) -> Iterator[tuple[Any, Any]]:
        """Every key and value (all taken: the caller reads each)."""
        self.taken.update(self.data)
        return iter(self.data.items())

    def done(self) -> None:
        """Refuse the keys no read took (hand-edited or misspelt keys are never silently ignored)."""
        unknown = [key for key in self.data if key not in self.taken]
        if unknown:
            expected = sorted(map(str, self.taken))
            raise DocumentError(
                f"{_place(self.source, self.path)} has unknown keys {sorted(map(str, unknown))}, "
                f"expected only {expected}"
            )


def _within(value: float, lo: float | None, hi: float | None) -> bool:
    return (lo is None or value >= lo) and (hi is None or value <= hi)


def _range(kind: str, lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f"{kind} from {lo:g} to {hi:g}"
    if lo is not None:
        return f"{kind} >= {lo:g}"
    if hi is not None:
        return f"{kind} <= {hi:g}"
    return kind
