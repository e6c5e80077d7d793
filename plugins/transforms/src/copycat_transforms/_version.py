"""The distribution version, the single source for pyproject.toml and ``version()``."""

__version__ = "0.1.13"
