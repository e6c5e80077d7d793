"""What StringConverter's UTF-8 check costs per value, and what compiled code would save.

Run from the repository root (needs a C compiler, ``cc``):

    uv run python bench/utf8_check_costs.py

Times, on one column of 2,000 ASCII values (100 B and 1 KiB, best of ``REPEATS``): the check
Copycat makes (``bytes.isascii`` mapped over the column, as ``plugin_api.Utf8Texts`` does), the
same done once on the joined column (the join included), and a C function compiled here into a
temporary directory (never shipped: docs/benchmarks.md says why) that checks the whole column
in one call, portable (``-O3``, SSE2 on x86-64) and for this machine (``-march=native``).
Only the "is every byte below 0x80" part is compared: non-ASCII values take the same UTF-8
decode in every variant.
"""

from __future__ import annotations

import importlib.util
import random
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

REPEATS = 300
VALUES = 2_000

C_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static int ascii_only(const unsigned char *p, Py_ssize_t n) {
    uint64_t seen = 0;
    Py_ssize_t i = 0;
    for (; i + 64 <= n; i += 64) {
        uint64_t w[8];
        memcpy(w, p + i, 64);
        seen |= w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7];
    }
    for (; i < n; i++) seen |= p[i];
    return !(seen & 0x8080808080808080ULL);
}

static PyObject *all_ascii(PyObject *self, PyObject *column) {
    if (!PyList_Check(column)) {
        PyErr_SetString(PyExc_TypeError, "a list of bytes");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(column); i++) {
        PyObject *value = PyList_GET_ITEM(column, i);
        if (!PyBytes_CheckExact(value)) {
            PyErr_SetString(PyExc_TypeError, "a list of bytes");
            return NULL;
        }
        if (!ascii_only((const unsigned char *)PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value)))
            Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {{"all_ascii", all_ascii, METH_O, NULL}, {NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "NAME", NULL, -1, methods};
PyMODINIT_FUNC PyInit_NAME(void) { return PyModule_Create(&module); }
"""


def compiled(work: Path, name: str, flags: list[str]) -> ModuleType:
    """The C check built with ``flags`` as module ``name``."""
    source = work / f"{name}.c"
    source.write_text(C_SOURCE.replace("NAME", name))
    target = work / f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    include = sysconfig.get_paths()["include"]
    subprocess.run(
        ["cc", *flags, "-shared", "-fPIC", f"-I{include}", str(source), "-o", str(target)],
        check=True,
    )
    spec = importlib.util.spec_from_file_location(name, target)
    assert spec is not None and spec.loader is not None
    found = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(found)
    return found


def per_value(check: Callable[[list[bytes]], object], column: list[bytes]) -> float:
    """Best time of ``check(column)`` over REPEATS runs, in ns per value."""
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter_ns()
        check(column)
        best = min(best, time.perf_counter_ns() - start)
    return best / VALUES


def main() -> None:
    if shutil.which("cc") is None:
        sys.exit("needs a C compiler (cc)")
    rng = random.Random(19)
    with tempfile.TemporaryDirectory(prefix="copycat-utf8-") as tmp:
        portable = compiled(Path(tmp), "check_portable", ["-O3"])
        native = compiled(Path(tmp), "check_native", ["-O3", "-march=native"])
        rows: dict[str, Callable[[list[bytes]], object]] = {
            "bytes.isascii per value (Copycat)": lambda c: all(map(bytes.isascii, c)),
            "joined, then isascii": lambda c: b"\n".join(c).isascii(),
            "C, portable (-O3)": portable.all_ascii,
            "C, -march=native": native.all_ascii,
        }
        print("ns per value, a column of 2,000 ASCII values (best of 300)")
        for size in (100, 1024):
            alphabet = b"abcdefghijklmnopqrstuvwxyz 0123456789"
            column = [bytes(rng.choices(alphabet, k=size)) for _ in range(VALUES)]
            assert all(check(column) for check in rows.values())
            for label, check in rows.items():
                print(f"  {size:>5} B  {label:<36}{per_value(check, column):6.1f}")


if __name__ == "__main__":
    main()
