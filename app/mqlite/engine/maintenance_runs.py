"""What each maintenance task did (observability, "Maintenance failure diagnosis").

A task (``locks``, ``scheduled``, ``ttl``, ``dedup``, ``receipts``, ``retention``,
``reclaim``) runs as a pass of one or more steps. Every step runs even when an earlier one
failed; the pass then counts ONE failure however many steps failed, and each failed step
joins the task's latest eight (timestamp, category, generated explanation, fingerprint).
A closing engine interrupts a pass: ``interrupted``, neither a success nor an error, and
no last-success advance. A success after failures clears the streak and records (and
logs, once per streak) the recovery; cumulative counts and history stay.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

from mqlite.engine import diagnostics
from mqlite.engine.measure import Histogram

TASKS = ("locks", "scheduled", "ttl", "dedup", "receipts", "retention", "reclaim")
OUTCOMES = ("success", "error", "interrupted")
HISTORY = 8


@dataclass(frozen=True, slots=True)
class StepFailure:
    at_ms: int
    step: str
    failure: diagnostics.Failure


@dataclass
class TaskState:
    enabled: bool = False
    runs: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    duration: Histogram = field(default_factory=Histogram)
    last_run_at_ms: int = 0
    last_outcome: str = "never"
    last_success_at_ms: int = 0
    consecutive_failures: int = 0
    recovered_at_ms: int = 0
    history: deque[StepFailure] = field(default_factory=lambda: deque(maxlen=HISTORY))


Step = tuple[str, Callable[[], Any]]


class MaintenanceRuns:
    """Per-task outcomes; ``run`` is called on the writer (serialized engine methods)."""

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now_ms = now_ms
        self.tasks = {task: TaskState() for task in TASKS}

    def enable(self, tasks: Sequence[str]) -> None:
        for task in tasks:
            self.tasks[task].enabled = True

    def run(self, task: str, steps: Sequence[Step]) -> list[Any]:
        """Run every step; return their results (None for a failed one). Re-raises an
        interruption at once, and the first failure once every step has run (after it is
        recorded): a failed pass stays an error for its caller."""
        state = self.tasks[task]
        started = perf_counter()
        results: list[Any] = []
        failed: list[tuple[str, BaseException]] = []
        for step, fn in steps:
            try:
                results.append(fn())
            except diagnostics.INTERRUPTIONS as exc:
                self._finish(state, task, "interrupted", started)
                diagnostics.emit(
                    "maintenance.interrupted",
                    f"maintenance task {task} interrupted at step {step}",
                    logging.INFO,
                    task=task,
                    step=step,
                    category=diagnostics.classify(exc),
                )
                raise
            except Exception as exc:
                failed.append((step, exc))
                results.append(None)
        if failed:
            now = self._finish(state, task, "error", started)
            state.consecutive_failures += 1
            for step, error in failed:
                fail = diagnostics.failure(f"{task}/{step}", error)
                state.history.append(StepFailure(now, step, fail))
                diagnostics.emit(
                    "maintenance.failure",
                    f"maintenance task {task} failed at step {step}: {fail.explanation}",
                    logging.ERROR,
                    task=task,
                    step=step,
                    category=fail.category,
                    fingerprint=fail.fingerprint,
                    sqlite_code=fail.sqlite_code,
                    detail=fail.detail,
                    consecutive_failures=state.consecutive_failures,
                )
            raise failed[0][1]
        now = self._finish(state, task, "success", started)
        state.last_success_at_ms = now
        if state.consecutive_failures:
            diagnostics.emit(
                "maintenance.recovered",
                f"maintenance task {task} recovered after "
                f"{state.consecutive_failures} failed pass(es)",
                logging.WARNING,
                task=task,
                failed_passes=state.consecutive_failures,
            )
            state.consecutive_failures = 0
            state.recovered_at_ms = now
        return results

    def _finish(self, state: TaskState, task: str, outcome: str, started: float) -> int:
        now = self._now_ms()
        state.runs[outcome] += 1
        state.duration.observe(perf_counter() - started)
        state.last_run_at_ms = now
        state.last_outcome = {"success": "ok", "error": "failed"}.get(outcome, outcome)
        return now
