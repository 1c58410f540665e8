"""House rules a reviewer would otherwise have to remember (issue 27, item 4).

- Only ``app/mqlite/config.py`` reads or writes the process environment: everything else
  is handed values by an entry point (``config.process_environ()``), so a test can give a
  module any configuration without touching ``os.environ``, and no module changes another's
  behaviour behind its back.
- Tests wait for signals, not for time: no ``time.sleep`` / ``asyncio.sleep(n)`` / a sleep
  in disguise (``Event().wait(n)``, an event the file never sets waited on with a
  timeout, a timed wait under 0.1 s in a loop: polling on a timer, ``threading.Timer``)
  outside the end-to-end tiers of real processes and the one helper for polling a real
  process (``tests/waiting.py``), but for the few places SLEEP_ALLOWED names with their
  reason.
"""

from __future__ import annotations

import ast
import contextlib
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
# itself is what the test is about; a new entry needs a reason a reviewer accepts. Every
# other wait outside SLEEP_DIRS is a signal (tests/waiting.py: the writer's test signals,
# the Receiver's condition, the FakeClock) or a poll of a real process through the helper.
SLEEP_ALLOWED = {
    ("waiting.py", "poll_real_process"): "THE helper for polling another process",
    ("sdk/test_aio_hostile.py", "write"): (
        "a slowloris trickle paced under the client's real-time idle timeout: the pace IS "
        "the input, and the asyncio client has no clock to inject"
    ),
    ("sdk/test_remote.py", "test_long_poll_is_woken_by_a_send"): (
        "the send follows a Receive parked in a real broker process, which exposes no "
        "'parked' state to poll (a send that came first still passes: weaker, never wrong)"
    ),
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


POLL_TICK_S = 0.1  # a timed wait this short, in a loop, is a poll: a sleep in disguise


def _number(node: ast.AST | None) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.BinOp):  # 1 / 100, 0.5 * 0.1: still a constant
        left, right = _number(node.left), _number(node.right)
        if left is not None and right is not None:
            with contextlib.suppress(ZeroDivisionError):
                return float(eval(compile(ast.Expression(node), "<n>", "eval")))
    return None


def _timeout(call: ast.Call) -> float | None:
    """The constant timeout a ``wait``/``get``/``select``-like call is given, if any."""
    for kw in call.keywords:
        if kw.arg == "timeout":
            return _number(kw.value)
    name = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    if name == "select" and len(call.args) == 4:
        return _number(call.args[3])
    if name in ("wait", "poll") and call.args:
        return _number(call.args[0])
    return None


def _is_wait(call: ast.Call, sleep_names: set[str], unset: set[str], in_loop: bool) -> bool:
    func = call.func
    name = _attr_chain(func)
    if name == "time.sleep" or (isinstance(func, ast.Name) and func.id in sleep_names):
        return True
    if name.endswith("Timer") and call.args:  # threading.Timer(n, act): act after a sleep
        return True
    if name == "asyncio.sleep":  # sleep(0) is a yield to the loop, not a wait
        arg = call.args[0] if call.args else None
        return not (isinstance(arg, ast.Constant) and arg.value == 0)
    if isinstance(func, ast.Attribute) and func.attr == "wait":
        inner = func.value
        # threading.Event().wait(n): an event nobody sets, i.e. a sleep in disguise;
        # likewise ``e = threading.Event()`` waited on in a file that never sets ``e``.
        if isinstance(inner, ast.Call) and _attr_chain(inner.func).endswith("Event"):
            return True
        if _last(inner) in unset and (call.args or call.keywords):
            return True
    # A short timed wait on anything (an event set elsewhere, a queue, select) inside a
    # loop: polling on a timer, whatever the event is.
    tick = _timeout(call)
    return in_loop and tick is not None and 0 < tick < POLL_TICK_S


def _last(node: ast.AST) -> str:
    """``x`` of ``x``, ``self.x`` or ``fake.x``: the name an event goes by in a file."""
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _unset_events(tree: ast.AST) -> set[str]:
    """Names bound to a new ``Event()`` that nothing in the file ever sets (no
    ``x.set()``, no ``x.set`` handed over as a callback)."""
    made = {
        _last(target)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and _attr_chain(node.value.func).endswith("Event")
        for target in node.targets
    }
    set_ = {
        _last(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "set"
    }
    return made - set_ - {""}


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
    unset = _unset_events(tree)
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, func: str, in_loop: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name, False)
                continue
            if isinstance(child, ast.Call) and _is_wait(child, sleep_names, unset, in_loop):
                found.append((func, child.lineno))
            visit(child, func, in_loop or isinstance(child, ast.While | ast.For | ast.AsyncFor))

    visit(tree, "<module>", False)
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


def sleep_offenders(tests: Path) -> list[str]:
    """Every wait on time under ``tests`` outside SLEEP_DIRS and SLEEP_ALLOWED."""
    offenders = []
    for path in _py_files(tests):
        rel = path.relative_to(tests)
        if rel.parts[0] in SLEEP_DIRS:
            continue
        for func, line in waits(path):
            if (rel.as_posix(), func) not in SLEEP_ALLOWED:
                offenders.append(f"tests/{rel.as_posix()}:{line} (in {func})")
    return offenders


def test_tests_wait_for_signals_not_for_time() -> None:
    offenders = sleep_offenders(TESTS)
    assert not offenders, (
        "wait for a signal (an Event/Condition the code sets, tests/waiting.py, the "
        "FakeClock), or poll a real process through waiting.poll_real_process: "
        f"{offenders}"
    )


def test_the_allow_list_names_only_places_that_still_wait() -> None:
    """A stale entry would let a new sleep in under an old excuse."""
    stale = [
        (rel, func)
        for rel, func in SLEEP_ALLOWED
        if not (TESTS / rel).is_file() or func not in {f for f, _ in waits(TESTS / rel)}
    ]
    assert not stale, stale


def test_the_guards_see_what_they_guard(tmp_path: Path) -> None:
    """Planted uses, each spelling once: the scanners must find every one, and nothing
    that waits on a signal."""
    planted = tmp_path / "planted.py"
    planted.write_text(
        "import os, time, asyncio, threading, select\n"
        "from time import sleep as nap\n"
        "a = os.environ.get('X')\n"
        "b = os.getenv('X')\n"
        "def f(q, sock):\n"
        "    time.sleep(0.1)\n"
        "    nap(1)\n"
        "    threading.Event().wait(0.2)\n"
        "    idle = threading.Event()\n"
        "    idle.wait(0.5)\n"
        "    while q.empty():\n"
        "        done.wait(0.01)\n"
        "    for _ in range(9):\n"
        "        q.get(timeout=1 / 100)\n"
        "        select.select([sock], [], [], 0.005)\n"
        "async def g():\n"
        "    await asyncio.sleep(0.01)\n"
        "    await asyncio.sleep(0)\n"
        "    threading.Timer(0.2, print).start()\n"
        "def signals(register):\n"
        "    done = threading.Event()\n"
        "    woken = threading.Event()\n"
        "    register(woken.set)\n"
        "    assert woken.wait(5) and done.wait(10)\n"
        "    while not done.wait(1.0):\n"
        "        pass\n"
        "    done.set()\n"
    )
    assert sorted(env_uses(planted)) == [3, 4]
    assert waits(planted) == [
        ("f", 6),
        ("f", 7),
        ("f", 8),
        ("f", 10),
        ("f", 12),
        ("f", 14),
        ("f", 15),
        ("g", 17),
        ("g", 19),
    ]


def test_a_new_sleep_fails_the_guard_outside_the_real_process_tiers(tmp_path: Path) -> None:
    """The guard's verdict on a tree: a sleep in a core tier fails it, the same sleep in a
    real-process tier, or in the one polling helper, does not."""
    for rel in ("sdk/test_new.py", "e2e/test_new.py", "waiting.py"):
        path = tmp_path / rel
        path.parent.mkdir(exist_ok=True)
        path.write_text(
            "import time\n"
            "def poll_real_process():\n"
            "    time.sleep(0.05)\n"
            "def test_new():\n"
            "    time.sleep(0.05)\n"
        )
    assert sleep_offenders(tmp_path) == [
        "tests/sdk/test_new.py:3 (in poll_real_process)",
        "tests/sdk/test_new.py:5 (in test_new)",
        "tests/waiting.py:5 (in test_new)",
    ]
