"""mqlite over HTTP under an efficient load client: wrk (one thread, keep-alive
connections, a fixed JSON body) against the ``mqlite serve`` the runner started, for a
fixed duration. The SDK side (``MqliteHttpSdk``) shows what one Python client gets; this
shows what the broker serves when the client costs little.

Only 2xx responses count as messages; wrk runs as a child of this process, so its CPU is
the client's (RUSAGE_CHILDREN), the broker's comes from /proc as for every cell.
"""

from __future__ import annotations

import json
import resource
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import probes
from cells import Result
from side import Side

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # http_bench.py

import http_bench

SCENARIOS = {  # scenario -> (connections, messages per Send; 0: Receive 256 + CompleteBatch)
    # one and four connections: what produce_1 / produce_p4 of the SDKs do, at wrk's cost
    "http_send_c1": (1, 1),
    "http_send_c4": (4, 1),
    "http_send_c8": (8, 1),
    "http_send_c32": (32, 1),
    "http_batch64_c32": (32, 64),
    "http_recv256_complete_c8": (8, 0),
}
PREFILL_PER_S = 25_000  # messages put in before a Receive cell, per second of wrk load
# Receive 256 then CompleteBatch of what came back, on any of the thread's connections:
# a Receive's answer queues its CompleteBatch, the next request sends it. Only the
# messages CompleteBatch answers ok for count. Bodies are base64 and there are no
# properties, so the two patterns below cannot match inside a message.
LUA_RECEIVE = """
local pending = {}
completed = 0  -- a global: done() reads it per thread with thread:get
request = function()
  local b = table.remove(pending)
  if b then return wrk.format("POST", COMPLETE_PATH, nil, b) end
  return wrk.format("POST", RECEIVE_PATH, nil, RECEIVE_BODY)
end
response = function(status, headers, body)
  if status ~= 200 then return end
  if string.find(body, '"results"', 1, true) then
    local _, k = string.gsub(body, '"ok":true', "")
    completed = completed + k
    return
  end
  local seqs, toks, items = {}, {}, {}
  for x in string.gmatch(body, '"seq_number":(%d+)') do seqs[#seqs + 1] = x end
  for x in string.gmatch(body, '"lock_token":"([^"]+)"') do toks[#toks + 1] = x end
  for i = 1, #seqs do
    items[#items + 1] = '{"seq_number":' .. seqs[i] .. ',"lock_token":"' .. toks[i] .. '"}'
  end
  if #items > 0 then
    local list = table.concat(items, ",")
    pending[#pending + 1] = '{"queue":' .. QUEUE .. ',"messages":[' .. list .. ']}'
  end
end
local threads = {}
setup = function(thread) threads[#threads + 1] = thread end
"""
LUA_DONE = """
done = function(summary, latency, requests)
  local e = summary.errors
  local completed = 0
  for _, t in ipairs(threads or {}) do completed = completed + (t:get("completed") or 0) end
  io.write(string.format("BENCH %d %d %d %.0f %.0f %d\\n", summary.requests, summary.duration,
    e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(99), completed))
end
"""


class WrkSide(Side):
    name = "mqlite-http-wrk"
    durability = "WAL, synchronous=NORMAL (mqlite serve's default)"

    def __init__(self, server: Any) -> None:
        self.server = server


def missing() -> str | None:
    return None if shutil.which("wrk") else "Debian package wrk is not installed"


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def wrk_cell(side: WrkSide, scenario: str, rep: int, seconds: int, tmp: Path) -> Result:
    server, (conns, batch) = side.server, SCENARIOS[scenario]
    queue = f"{scenario.replace('_', '-')}-{secrets.token_hex(4)}"
    status, answer = http_bench.http_call(server.port, http_bench.CREATE_QUEUE,
                                          {"name": queue}, server.token)  # fmt: skip
    if status != 200:
        raise RuntimeError(f"CreateQueue {queue}: {status} {answer}")
    script = tmp / f"{scenario}.lua"
    head = (
        'wrk.method = "POST"\n'
        'wrk.headers["Content-Type"] = "application/json"\n'
        f'wrk.headers["Authorization"] = "Bearer {server.token}"\n'
    )
    if batch:
        body = http_bench.send_body(batch, queue).decode()
        script.write_text(head + f"wrk.body = {json.dumps(body)}\n" + LUA_DONE)
    else:  # the queue is filled first (not measured), deep enough not to run dry
        http_bench.fill(server.port, server.token, queue, PREFILL_PER_S * seconds, 4)
        receive = json.dumps({"queue": queue, "max_messages": http_bench.RECEIVE_MAX})
        script.write_text(
            head
            + f"QUEUE = {json.dumps(json.dumps(queue))}\n"
            + f"RECEIVE_PATH = {json.dumps(http_bench.RECEIVE)}\n"
            + f"COMPLETE_PATH = {json.dumps(http_bench.COMPLETE_BATCH)}\n"
            + f"RECEIVE_BODY = {json.dumps(receive)}\n"
            + LUA_RECEIVE
            + LUA_DONE
        )
    url = f"http://127.0.0.1:{server.port}{http_bench.SEND}"
    broker = server.pids()
    probes.reset_peak_rss(broker)
    w0, b0, c0 = probes.write_bytes(broker), probes.cpu_seconds(broker), _children_cpu()
    argv = ["wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "-s", str(script), url]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed: {done.stderr or done.stdout}")
    line = next((x for x in done.stdout.splitlines() if x.startswith("BENCH ")), None)
    if line is None:
        raise RuntimeError(f"no summary from wrk:\n{done.stdout}")
    requests, dur_us, errors, p50, p99, completed = (float(x) for x in line.split()[1:])
    ok = int(requests - errors)  # errors.status: the non-2xx/3xx responses
    wall = dur_us / 1e6
    n = max(1, ok * batch if batch else int(completed))
    return Result(
        system=side.name,
        scenario=scenario,
        rep=rep,
        n=n,
        body=256,
        wall_s=round(wall, 4),
        rate=round(n / wall, 1),
        client_cpu_us=round((_children_cpu() - c0) / n * 1e6, 2),
        broker_cpu_us=round((probes.cpu_seconds(broker) - b0) / n * 1e6, 2),
        client_peak_rss_kb=None,  # wrk is a child reaped by subprocess.run: not read
        broker_peak_rss_kb=probes.peak_rss_kb(broker),
        written_b=round((probes.write_bytes(broker) - w0) / n, 1),
        db_b=None,
        p50_us=p50 if batch == 1 else None,
        p99_us=p99 if batch == 1 else None,
    )
