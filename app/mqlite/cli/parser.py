"""argparse with the manners a first-time user needs (every parser of ``mqlite`` is one).

- A mistyped command or choice suggests the nearest one (``did you mean receive?``),
  from ``difflib``: Python 3.14's ``suggest_on_error`` does the same, we run on 3.11.
- A value that starts with ``-`` and a digit is a value, not an unknown flag, so
  ``--wait -1s`` reaches the duration check and is refused with what a duration is
  (argparse already does this for plain negative numbers; none of our flags is a digit).
- A stray argument is reported by the command it was given to, with that command's
  usage, instead of by the top-level parser with the top-level usage.
- Every parser records itself as ``command_parser`` in the namespace (the innermost
  wins), so a usage error found later by a handler prints the right usage too.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Sequence
from typing import Any


class Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d")
        self.set_defaults(command_parser=self)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is None or value in choices:
            return
        names = [str(c) for c in choices]
        nearest = difflib.get_close_matches(str(value), names, n=1, cutoff=0.6)
        if nearest:
            hint = f"; did you mean {nearest[0]}?"
        elif isinstance(action, argparse._SubParsersAction):
            hint = f" (`{self.prog} help` lists them)"
        else:
            hint = f" (choose from {', '.join(names)})"
        raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint}")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and self._subparsers is None:  # a command's own parser: the extras are its
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras
