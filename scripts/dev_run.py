"""``make run``'s launcher: a development token that survives restarts, then ``exec`` the
broker (``scripts/dev_run.py TOKEN_FILE COMMAND...``).

Without MQLITE_TOKENS / MQLITE_TOKENS_FILE the broker generates a new token at every
start, so the ``$T`` a developer exported went stale (401) at the next ``make run``.
Here the first run writes a generated token to TOKEN_FILE (mode 0600, in ./data/ beside
the database, ignored by git) and every later run reuses it; the broker reads it through
MQLITE_TOKENS_FILE. One JSON line on stdout (like the broker's own) gives the token, the
exports and the console URL. A token the developer configured is left alone.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mqlite.config import generate_token
from mqlite.server import jsonlog


def dev_token(path: Path) -> str:
    """The token in ``path``, created (0600) on first use; a stray mode is tightened."""
    if not path.exists() or not path.read_text().strip():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(generate_token() + "\n")
    path.chmod(0o600)
    return path.read_text().strip()


def main(argv: list[str]) -> int:
    token_file, command = Path(argv[0]), argv[1:]
    if not os.environ.get("MQLITE_TOKENS") and not os.environ.get("MQLITE_TOKENS_FILE"):
        token = dev_token(token_file)
        os.environ["MQLITE_TOKENS_FILE"] = str(token_file)
        addr = os.environ.get("MQLITE_ADDR", "127.0.0.1:6754")
        host, _, port = addr.rpartition(":")
        base = f"http://{host if host not in ('', '0.0.0.0') else '127.0.0.1'}:{port}"
        jsonlog.write_line(
            sys.stdout,
            f"dev token kept in {token_file} (0600) and reused by every make run: "
            f"export BASE_URL={base} T=$(cat {token_file}); console {base}/ui/ "
            "(set MQLITE_TOKENS to choose your own)",
            token=token,
            token_file=str(token_file),
            ui=f"{base}/ui/",
        )
        sys.stdout.flush()
    os.execvp(command[0], command)
    return 1  # not reached


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
