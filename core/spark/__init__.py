"""The Spark data plane: connector tasks run on Spark executors (``task.runtime=spark``).

The worker stays the coordinator (configs, offsets, status, restarts) and is the Spark
driver; each task runs on an executor as a long-running, one-partition Spark job, through the
same task runtime the local worker uses (``core.runtime``). See docs/spark.md.

* :mod:`core.spark.driver` -- the SparkSession, the control endpoint, task slots, status API.
* :mod:`core.spark.gateway` -- the driver JVM, started in a session of its own; its errors.
* :mod:`core.spark.runner` -- the worker's thread per task on Spark: submit, resubmit, status.
* :mod:`core.spark.shipping` -- plugin environments shipped as Spark archives.
* :mod:`core.spark.executor` -- what runs on the executor: the task loop, heartbeats, offsets.
* :mod:`core.spark.envcache` -- envs built offline on executors, plugin hosts started from them.
* :mod:`core.spark.control` -- the JSON control channel between them.

Nothing here imports pyspark at module level, except where it runs on Spark only.
"""

from __future__ import annotations

__all__: list[str] = []
