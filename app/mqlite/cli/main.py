"""``mqlite``: the command-line entry point (serve and version for now).

Exit codes: 0 ok, 1 runtime error (``error: ...`` on stderr), 2 usage error.
"""

from __future__ import annotations

import argparse
import os
import sys

from mqlite import __version__, errors


def _bool_flag(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "on", "yes"):
        return True
    if value in ("0", "false", "off", "no"):
        return False
    raise argparse.ArgumentTypeError(f"want true/false, got {text!r}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mqlite", description="A message broker on one SQLite file."
    )
    parser.add_argument("-v", "--version", action="version", version=f"mqlite {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="<command>")
    serve = commands.add_parser("serve", help="run the HTTP broker")
    serve.add_argument("--addr", help="listen address HOST:PORT (default MQLITE_ADDR or :6754)")
    serve.add_argument(
        "--metrics",
        nargs="?",
        const=True,
        default=None,
        type=_bool_flag,
        help="enable authenticated /metrics (--metrics=false disables)",
    )
    serve.add_argument(
        "--insecure-allow-remote",
        action="store_true",
        default=None,
        help="with auth off, allow a non-loopback bind",
    )
    commands.add_parser("version", help="print the version")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "version":
        print(f"mqlite {__version__}")
        return 0
    if args.command == "serve":
        from mqlite.config import Settings
        from mqlite.server.serve import run

        try:
            settings = Settings.from_env(os.environ).with_flags(
                addr=args.addr,
                metrics=args.metrics,
                insecure_allow_remote=args.insecure_allow_remote,
            )
            return run(settings)
        except errors.MQLiteError as exc:
            print(f"error: {exc.message}", file=sys.stderr)
            return 1
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
