"""The asyncio client: ``mqlite.aio.connect(endpoint, token)`` (see ``mqlite.sdk.aio``)."""

from mqlite.sdk.aio import *  # noqa: F403
from mqlite.sdk.aio import __all__  # noqa: F401
