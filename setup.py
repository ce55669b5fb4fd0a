"""The one C extension: the a3s C core plus its CPython glue, built for the abi3 limited API.

Everything else about the package lives in pyproject.toml.
"""

import sys
from pathlib import Path

from setuptools import Extension, setup

ROOT = Path(__file__).parent
CORE = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "native" / "src").glob("*.c"))

if sys.platform == "win32":
    compile_args = ["/std:c11", "/W4", "/DA3S_BUILDING"]
    libraries: list[str] = []
else:
    compile_args = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden", "-O2"]
    libraries = ["pthread"] if sys.platform.startswith("linux") else []

setup(
    ext_modules=[
        Extension(
            "a3s_code._native",
            sources=["python/a3s_code/_native.c", *CORE],
            include_dirs=["native/include"],
            extra_compile_args=compile_args,
            libraries=libraries,
            define_macros=[("Py_LIMITED_API", "0x030A0000")],
            py_limited_api=True,
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
