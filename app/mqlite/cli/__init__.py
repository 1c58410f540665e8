"""The ``mqlite`` command."""
