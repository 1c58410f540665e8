"""The package version: the single source (pyproject reads it; so does every banner)."""

VERSION = "0.1.0"
