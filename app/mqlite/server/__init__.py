"""The HTTP broker: a starlette app served by gunicorn with exactly one uvicorn worker.

Nothing imports this package but its entry points (``mqlite serve``)."""
