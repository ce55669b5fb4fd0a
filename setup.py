"""The C extension (the C core plus its CPython glue, abi3) and, on Linux, the a3s-init program.

Everything else about the package lives in pyproject.toml.
"""

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).parent
CORE = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "native" / "src").glob("*.c"))
INIT_SOURCES = [
    "native/init/a3s_init.c",
    "native/init/server.c",
    "native/init/probe_seccomp.c",
    "native/init/limits.c",
    "native/init/grant.c",
    "native/src/error.c",
    "native/src/landlock_linux.c",
    "native/src/seccomp_linux.c",
    "native/src/session_msg_linux.c",
]

if sys.platform == "win32":
    compile_args = ["/std:c11", "/W4", "/DA3S_BUILDING"]
    libraries: list[str] = []
else:
    compile_args = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden", "-O2"]
    libraries = ["pthread"] if sys.platform.startswith("linux") else []


class BuildWithInit(build_ext):
    """Also builds a3s-init, the static supervisor that runs as PID 1 in the sandbox."""

    def run(self) -> None:
        super().run()
        if not sys.platform.startswith("linux"):
            return
        package_dir = (
            ROOT / "python" / "codeward" if self.inplace else Path(self.build_lib) / "codeward"
        )
        out_dir = package_dir / "_bin"
        out_dir.mkdir(parents=True, exist_ok=True)
        objects = self.compiler.compile(
            INIT_SOURCES,
            output_dir=self.build_temp,
            include_dirs=["native/include"],
            extra_postargs=compile_args,
        )
        self.compiler.link_executable(
            objects,
            "a3s-init",
            output_dir=str(out_dir),
            extra_postargs=["-static"] if os.environ.get("A3S_INIT_DYNAMIC") != "1" else [],
        )


setup(
    ext_modules=[
        Extension(
            "codeward._native",
            sources=["python/codeward/_native.c", *CORE],
            include_dirs=["native/include"],
            extra_compile_args=compile_args,
            libraries=libraries,
            define_macros=[("Py_LIMITED_API", "0x030A0000")],
            py_limited_api=True,
        )
    ],
    cmdclass={"build_ext": BuildWithInit},
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
