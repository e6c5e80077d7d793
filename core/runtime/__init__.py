"""The task runtime: what a task is (:mod:`.spec`), how it is built from services (:mod:`.build`),
and the loops that move its records (:mod:`.source`, :mod:`.sink`, :mod:`.hosted`).

Any process that has the services runs it: a worker thread, a Spark executor, and the task's
own plugin host (:mod:`.in_host`, ``task.data.path=host``). It therefore imports nothing of
the control plane (an import-linter contract in pyproject.toml) and, from
``core.runtime.in_host`` on, nothing beyond the standard library, plugin_api and
confluent_kafka (tests/unit/test_import_rules.py).
"""

__all__: list[str] = []
