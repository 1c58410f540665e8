"""The ``mqlite`` commands, one module per family; each exposes ``register``."""

from __future__ import annotations

import argparse

Subparsers = argparse._SubParsersAction


def register_all(sub: Subparsers, common: argparse.ArgumentParser) -> None:  # type: ignore[type-arg]
    from mqlite.cli.commands import (
        audit,
        backup,
        cron,
        dlq,
        keys,
        local,
        messages,
        observe,
        push,
        queues,
        receive,
        settle,
        status,
    )

    for module in (
        queues,
        status,
        observe,
        messages,
        receive,
        settle,
        dlq,
        keys,
        local,
        backup,
        cron,
        audit,
        push,
    ):
        module.register(sub, common)
