"""The one option table (:mod:`harness.pipeline.options`) on an argparse parser: each command's options,
parsed and checked by the table."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from harness.core.errors import HarnessError
from harness.pipeline.options import OPTIONS, Option


def add_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup, names: Iterable[str]) -> None:
    """The options ``names`` on an argparse parser, parsed and checked by the table."""
    for name in names:
        option = OPTIONS[name]

        def parse(text: str, option: Option = option) -> Any:
            try:
                return option.value(text)
            except HarnessError as error:
                raise argparse.ArgumentTypeError(str(error).removeprefix(f"{option.flag} ")) from None

        shown = f" (default {_shown(option.default)})" if option.default not in (None, False, ()) else ""
        common: dict[str, Any] = {"dest": name, "help": option.help + shown}
        if option.kind == "flag":
            parser.add_argument(option.flag, action="store_true", **common)
        elif option.kind == "toggle":
            parser.add_argument(option.flag, action=argparse.BooleanOptionalAction, default=option.default, **common)
        elif option.kind == "repeat":
            parser.add_argument(option.flag, action="append", type=parse, default=[], metavar=option.metavar, **common)
        else:
            parser.add_argument(
                option.flag, type=parse, default=option.default, metavar=option.metavar or _metavar(option), **common
            )


def _shown(value: Any) -> str:
    return str(getattr(value, "value", value))


def _metavar(option: Option) -> str:
    return "{" + ",".join(option.choices) + "}" if option.choices else option.name.upper()
