"""Publish to a topic with 10 filtered subscriptions vs a plain send (issue: <= 3x).

One of the ten filters matches each message, so both sides insert exactly one row per
message and the ratio isolates filter evaluation plus fan-out resolution. File DB,
synchronous=NORMAL, 256-byte bodies, one process; a ratio, not a timed assertion.

    .venv/bin/python tests/bench/topic_bench.py
"""

from __future__ import annotations

import os
import tempfile
import time

import mqlite
from mqlite import OutMessage

N = 5000
REGIONS = ["eu", "us", "apac", "latam", "mea", "cn", "in", "jp", "au", "ca"]


def rate(fn, n: int) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    for i in range(n):
        fn(i)
    return n / (time.perf_counter() - started)


def main() -> None:
    body = os.urandom(256)
    with tempfile.TemporaryDirectory() as tmp:
        mq = mqlite.open_embedded(f"file:{tmp}/bench.db", background=False, sync="NORMAL")
        mq.create_queue("plain")
        for region in REGIONS:
            mq.subscribe(
                "orders",
                f"orders-{region}",
                f'subject_parts[0] == "orders" && properties["region"] == "{region}"',
            )
        msgs = [
            OutMessage(body=body, subject="orders.created", properties={"region": REGIONS[i % 10]})
            for i in range(10)
        ]
        best_plain = best_topic = 0.0
        for _ in range(3):  # interleave rounds so machine noise hits both sides alike
            best_plain = max(best_plain, rate(lambda i: mq.send_one("plain", msgs[i % 10]), N))
            best_topic = max(best_topic, rate(lambda i: mq.send_one("orders", msgs[i % 10]), N))
        total = sum(mq.stats(f"orders-{r}").total for r in REGIONS)
        assert total == 3 * N, total
        mq.close()
    print("| figure | msgs/s |")
    print("|---|---|")
    print(f"| plain send_one | {best_plain:,.0f} |")
    print(f"| publish to topic with 10 filtered subscriptions | {best_topic:,.0f} |")
    print(f"| slowdown (plain / topic), target <= 3.0 | {best_plain / best_topic:.2f}x |")


if __name__ == "__main__":
    main()
