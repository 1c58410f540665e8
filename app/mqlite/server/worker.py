"""The gunicorn worker class: a shim so uvicorn and the app load only in the forked worker.

gunicorn imports ``worker_class`` and instantiates it in the MASTER before forking, and a
forked child's inherited pages count in both processes' RSS. So this module imports only
gunicorn; ``init_process`` (in the child) builds the real uvicorn worker
(``drain_worker.DrainWorker``) and hands it the heartbeat file the master watches. The
master stays at python + gunicorn + config (the appliance's idle tree target is < 70 MB).
"""

from __future__ import annotations

from gunicorn.workers.base import Worker as GunicornWorker


class Worker(GunicornWorker):  # type: ignore[misc]
    """Exactly one of these serves the broker (the engine is a single writer)."""

    def init_process(self) -> None:
        from mqlite.server.drain_worker import DrainWorker

        real = DrainWorker(
            self.age, self.ppid, self.sockets, self.app, self.timeout, self.cfg, self.log
        )
        real.tmp.close()
        real.tmp = self.tmp  # the master's liveness check reads THIS file's mtime
        real.pid = self.pid
        real.init_process()  # runs the server; never returns (sys.exit)
