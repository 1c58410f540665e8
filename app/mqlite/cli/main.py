"""``mqlite``: the command-line entry point.

Exit codes: 0 ok, 1 runtime error (one line ``error: ...`` on stderr), 2 usage error.
Commands run embedded on ``MQLITE_DB`` or against a broker (``MQLITE_ENDPOINT`` /
``--endpoint``); see ``mqlite help`` and the CLI reference.
"""

from __future__ import annotations

import argparse
import os
import sys

from mqlite import errors
from mqlite.version import VERSION as __version__


def _bool_flag(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "on", "yes"):
        return True
    if value in ("0", "false", "off", "no"):
        return False
    raise argparse.ArgumentTypeError(f"want true/false, got {text!r}")


def build_parser(*, serve_only: bool = False) -> argparse.ArgumentParser:
    """Every command's parser; ``serve_only`` builds just ``serve`` (the broker's master
    process imports no command module, keeping its idle memory small)."""
    from mqlite.cli.parser import Parser

    parser = Parser(prog="mqlite", description="A message broker on one SQLite file.")
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
        "--diagnostic-log",
        metavar="PATH",
        help="append failure events to this private JSONL file (MQLITE_DIAGNOSTIC_LOG)",
    )
    serve.add_argument(
        "--insecure-allow-remote",
        action="store_true",
        default=None,
        help="with auth off, allow a non-loopback bind",
    )
    if serve_only:
        return parser
    from mqlite.cli.args import client_flags
    from mqlite.cli.commands import register_all

    commands.add_parser("version", help="print the version")
    commands.add_parser("help", help="show this help")
    register_all(commands, client_flags())
    return parser


def _serve(args: argparse.Namespace, argv: list[str]) -> int:
    from mqlite.config import Settings, process_environ
    from mqlite.server.serve import note, refuse, run

    try:
        settings = Settings.from_env(process_environ()).with_flags(
            addr=args.addr,
            metrics=args.metrics,
            insecure_allow_remote=args.insecure_allow_remote,
            diagnostic_log=args.diagnostic_log,
        )
    except errors.MQLiteError as exc:
        return refuse(exc.message)  # a JSON line too: the broker's stderr is a log
    from mqlite.cli import replicate

    if replicate.is_launch(process_environ()):  # MQLITE_REPLICA_URL: under litestream (exec)
        return refuse(replicate.launch(process_environ(), argv[1:], settings.db, note))
    return run(settings)


def _fail(text: str, code: int) -> int:
    line = " ".join(str(text).split())  # one line, always
    sys.stderr.write(f"error: {line}\n")
    sys.stderr.flush()
    return code


def main(argv: list[str] | None = None) -> int:
    from mqlite.cli.stdio import probe_stdio

    undeliverable = probe_stdio()  # before any file is opened
    args_list = sys.argv[1:] if argv is None else argv
    if args_list[:1] == ["serve"]:
        return _serve(build_parser(serve_only=True).parse_args(args_list), args_list)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "version":
        print(f"mqlite {__version__}")
        return 0
    if args.command == "help":
        parser.print_help()
        return 0
    if args.command == "serve":
        return _serve(args, args_list)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    return run_command(handler, args, undeliverable)


def run_command(handler: object, args: argparse.Namespace, undeliverable: bool) -> int:
    from mqlite.cli.context import Context, Failure, UsageError, unreachable
    from mqlite.sdk.endpoint import ConnectionFailed

    ctx = Context(args, undeliverable)
    try:
        try:
            result = handler(ctx)  # type: ignore[operator]
            sys.stdout.flush()
            return int(result)
        finally:
            ctx.close()
    except UsageError as exc:
        args.command_parser.print_usage(sys.stderr)  # this command's usage, not mqlite's
        return _fail(str(exc), 2)
    except ConnectionFailed as exc:
        return _fail(f"{unreachable(str(ctx.target.endpoint), exc)} ({exc.code})", 1)
    except errors.Unauthenticated as exc:
        return _fail(f"{exc.message} ({exc.code}){_no_token_hint(ctx)}", 1)
    except errors.MQLiteError as exc:
        return _fail(f"{exc.message} ({exc.code})" if exc.code != "internal" else exc.message, 1)
    except Failure as exc:
        return _fail(str(exc), 1)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return _fail("output closed before it was written", 1)
    except OSError as exc:
        return _fail(f"{exc.strerror or exc}", 1)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)


def _no_token_hint(ctx: object) -> str:
    """A 401 with no credential sent: say where the broker's token goes."""
    target = getattr(ctx, "_target", None)
    if target is None or target.token is not None:
        return ""
    return (
        f"; no token was sent to {target.endpoint}: set MQLITE_TOKEN to the broker's token "
        "(its start-up line prints a generated one) or pass --token-file PATH"
    )


if __name__ == "__main__":
    raise SystemExit(main())
