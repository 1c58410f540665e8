"""The admin console's static files (package data, served by ``mqlite.server.ui``).

Plain HTML, CSS and JavaScript modules: no build step, no CDN, no inline script or
style (the page's Content-Security-Policy forbids both). Nothing here is Python but
this docstring; the directory is a package only so ``importlib.resources`` finds it.
"""
