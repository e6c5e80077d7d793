"""The host side of the plugin boundary: modules that run inside plugin host processes.

The host's bootstrap puts this directory itself on ``sys.path`` and imports ``copycat_host``
as a top-level module, so these modules import each other by their bare names and may import
only the standard library and ``plugin_api`` (tests/unit/test_import_rules.py checks it). The
worker side reaches them through :mod:`isolation`'s public names only.
"""
