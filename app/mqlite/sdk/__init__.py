"""Client surfaces over the engine (embedded) and, later, over HTTP."""
