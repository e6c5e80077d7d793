"""Copycat's worker runtime: connectors, tasks, the REST API and the dev broker."""

__all__: list[str] = []
