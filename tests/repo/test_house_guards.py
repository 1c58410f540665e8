"""House rules a reviewer would otherwise have to remember (issue 27, item 4).

- Only ``app/mqlite/config.py`` reads or writes the process environment: everything else
  is handed values by an entry point (``config.process_environ()``), so a test can give a
  module any configuration without touching ``os.environ``, and no module changes another's
  behaviour behind its back.
- Tests wait for signals, not for time: no ``time.sleep`` / ``asyncio.sleep(n)`` /
  ``threading.Event().wait(n)`` (a sleep in disguise) outside the end-to-end tiers of real
  processes and the one helper for polling a real process (``tests/waiting.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app" / "mqlite"
TESTS = ROOT / "tests"

ENV_ALLOWED = {APP / "config.py"}
ENV_NAMES = {"environ", "getenv", "putenv", "unsetenv", "environb", "getenvb"}

# Tiers whose tests drive real processes (brokers, containers, sqld, litestream, browsers):
# they have no hook to signal through, so they may poll. bench measures time itself.
# push: a real HTTP receiver on sockets whose delays ARE the input (deadlines, slow,
# silent and trickling endpoints) against the broker's own network loop, which has no
# hook to signal through; test_push_serve.py drives a real broker process.
SLEEP_DIRS = ("bench", "e2e", "appliance", "ops", "replication", "drills", "browser", "push")
# (file, enclosing function) -> why it may wait on time. Each is a real process, or time
# itself is what the test is about; a new entry needs a reason a reviewer accepts.
SLEEP_ALLOWED = {
    ("waiting.py", "poll_real_process"): "THE helper for polling another process",
    ("sqld_harness.py", "start"): "sqld is a real process: polled until it answers",
    ("sqld_harness.py", "_pump"): "the stall proxy holds bytes until released (a server)",
    ("sqld_harness.py", "wait_until"): "polls a real sqld / litestream pair",
    (
        "engine/test_remote_retries.py",
        "test_a_server_that_closed_an_idle_connection_costs_no_retry_and_no_doubt",
    ): ("the kernel delivers a FIN from the real proxy socket: no hook in between"),
    (
        "engine/test_remote_store.py",
        "test_a_stalled_server_fails_the_call_within_the_timeout_while_other_threads_run",
    ): ("the test measures that this thread runs while the call waits on a real socket"),
    ("cli/test_cli_receive.py", "test_renewer_keeps_the_lease_alive_while_output_is_slow"): (
        "a real CLI process against a real broker's reaper: wall-clock lease renewal"
    ),
    ("sdk/test_aio_hostile.py", "write"): "a hostile real server: the stall IS the input",
    ("sdk/test_transport_reuse.py", "_stall_after_a_gap"): (
        "a connection's kept timer against the next exchange's deadline: time IS the input"
    ),
    ("sdk/test_receiver.py", "handler"): "real-time auto-renew against the real reaper",
    ("sdk/test_receiver.py", "test_stop_timeout_abandons_in_flight_messages_with_no_delay"): (
        "the Receiver's stats have no change signal yet"
    ),
    ("sdk/test_receiver_remote.py", "wait_until"): "a remote Receiver against a real broker",
    ("sdk/test_receiver_remote.py", "handler"): "real-time auto-renew against a real broker",
    ("mcp/test_mcp_http_limits.py", "test_idle_sockets_beyond_the_cap_do_not_lock_clients_out"): (
        "a real mqlite-mcp process accepts sockets on its own schedule"
    ),
    ("mcp/test_mcp_http_limits.py", "test_parked_receives_do_not_delay_short_tool_calls"): (
        "receives parked in a real broker process"
    ),
    (
        "conformance/test_s16_inbox.py",
        "test_16_5_transactional_receiver_completes_with_the_handlers_writes",
    ): ("the Receiver's stats have no change signal yet"),
    ("engine/test_integrity.py", "consumer"): "N real consumers racing: a back-off, not a wait",
    ("server/test_observations.py", "until"): "a collector thread's progress, polled",
    ("kombu/test_kombu_close.py", "until"): "kombu's own threads, polled",
    ("kombu/test_kombu_rate_limit.py", "receive"): "a fake client's slow answer",
}


def _py_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "vendor" not in p.parts)


def _attr_chain(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def env_uses(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(), str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ENV_NAMES:
            os_attr = _attr_chain(node.value) == "os"
            lines += [node.lineno] if os_attr else []
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            imported = any(a.name in ENV_NAMES for a in node.names)
            lines += [node.lineno] if imported else []
    return lines


def _is_wait(call: ast.Call, sleep_names: set[str]) -> bool:
    func = call.func
    name = _attr_chain(func)
    if name == "time.sleep" or (isinstance(func, ast.Name) and func.id in sleep_names):
        return True
    if name == "asyncio.sleep":  # sleep(0) is a yield to the loop, not a wait
        arg = call.args[0] if call.args else None
        return not (isinstance(arg, ast.Constant) and arg.value == 0)
    # threading.Event().wait(n): an event nobody sets, i.e. a sleep in disguise
    if isinstance(func, ast.Attribute) and func.attr == "wait":
        inner = func.value
        return isinstance(inner, ast.Call) and _attr_chain(inner.func).endswith("Event")
    return False


def waits(path: Path) -> list[tuple[str, int]]:
    """(enclosing function, line) of every wait on time in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    sleep_names = {
        a.asname or a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module in ("time", "asyncio")
        for a in n.names
        if a.name == "sleep"
    }
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, func: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
                continue
            if isinstance(child, ast.Call) and _is_wait(child, sleep_names):
                found.append((func, child.lineno))
            visit(child, func)

    visit(tree, "<module>")
    return sorted(found, key=lambda f: f[1])


def test_only_config_touches_the_process_environment() -> None:
    offenders = [
        f"{p.relative_to(ROOT)}:{line}"
        for p in _py_files(APP)
        if p not in ENV_ALLOWED
        for line in env_uses(p)
    ]
    assert not offenders, (
        "read the environment in mqlite/config.py only (an entry point passes "
        f"config.process_environ() down): {offenders}"
    )


def test_tests_wait_for_signals_not_for_time() -> None:
    offenders = []
    for path in _py_files(TESTS):
        rel = path.relative_to(TESTS)
        if rel.parts[0] in SLEEP_DIRS:
            continue
        for func, line in waits(path):
            if (rel.as_posix(), func) not in SLEEP_ALLOWED:
                offenders.append(f"tests/{rel.as_posix()}:{line} (in {func})")
    assert not offenders, (
        "wait for a signal (an Event/Condition the code sets, tests/waiting.py, the "
        "FakeClock), or poll a real process through waiting.poll_real_process: "
        f"{offenders}"
    )


def test_the_allow_list_names_only_places_that_still_wait() -> None:
    """A stale entry would let a new sleep in under an old excuse."""
    used = set()
    for path in _py_files(TESTS):
        rel = path.relative_to(TESTS).as_posix()
        used |= {(rel, func) for func, _ in waits(path)}
    assert set(SLEEP_ALLOWED) <= used, sorted(set(SLEEP_ALLOWED) - used)


def test_the_guards_see_what_they_guard(tmp_path: Path) -> None:
    """Planted uses, each spelling once: the scanners must find every one."""
    planted = tmp_path / "planted.py"
    planted.write_text(
        "import os, time, asyncio, threading\n"
        "from time import sleep as nap\n"
        "a = os.environ.get('X')\n"
        "b = os.getenv('X')\n"
        "def f():\n"
        "    time.sleep(0.1)\n"
        "    nap(1)\n"
        "    threading.Event().wait(0.2)\n"
        "async def g():\n"
        "    await asyncio.sleep(0.01)\n"
        "    await asyncio.sleep(0)\n"
    )
    assert sorted(env_uses(planted)) == [3, 4]
    assert waits(planted) == [("f", 6), ("f", 7), ("f", 8), ("g", 10)]
