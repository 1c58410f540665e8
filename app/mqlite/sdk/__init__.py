"""Client surfaces: the embedded facade, the remote clients (sync and asyncio) and the
Receiver, all with the one method set of ``mqlite.Client`` (see ``calls`` and ``protocol``)."""
