"""The C extension (the C core plus its CPython glue, abi3) and, on Linux, the a3s-init program.

Everything else about the package lives in pyproject.toml. Per system: Linux builds the
extension with the init's digest and the init (the native sandbox's PID 1); macOS builds the
extension alone (its sandbox is Seatbelt, /usr/bin/sandbox-exec, and needs no program of ours;
INIT_SHA256 is None); Windows builds the extension with MSVC, exporting the C ABI
(A3S_BUILDING), and nothing sandboxes there. ci/cross_compile.py builds the same extension for
macOS and Windows with zig cc, and docs/packaging.md says what each wheel does.

On Linux both binaries are linked stripped (-s): a wheel carries no debug information.
a3s-init is linked statically unless A3S_INIT_DYNAMIC=1; on a machine without a static C
library the build stops at once with one line naming the package to install
(docs/packaging.md).
"""

import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
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
    "native/init/janitor.c",
    "native/init/warden.c",
    "native/init/names.c",
    "native/init/exectrace.c",
    "native/src/error.c",
    "native/src/landlock_linux.c",
    "native/src/seccomp_linux.c",
    "native/src/session_msg_linux.c",
    "native/src/cgroup_linux.c",
    "native/src/mountinfo_linux.c",
    "native/src/exec_match.c",
    "native/src/glob.c",
    "native/src/bash_split.c",
    "native/src/sha256.c",
]

LINUX = sys.platform.startswith("linux")
if sys.platform == "win32":
    compile_args = ["/std:c11", "/W4", "/DA3S_BUILDING"]
    libraries: list[str] = []
else:
    compile_args = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden", "-O2"]
    libraries = ["pthread"] if LINUX else []
link_args = ["-s"] if LINUX else []
STATIC_INIT = os.environ.get("A3S_INIT_DYNAMIC") != "1"

# The package that holds the static C library (libc.a), by /etc/os-release ID or ID_LIKE.
STATIC_LIBC_PACKAGES = {
    "debian": "libc6-dev",
    "ubuntu": "libc6-dev",
    "fedora": "glibc-static",
    "rhel": "glibc-static",
    "centos": "glibc-static",
    "suse": "glibc-devel-static",
    "alpine": "musl-dev",
    "arch": "glibc",
}


def static_libc_package() -> str:
    """The name of the package to install for libc.a on this distribution, or a list."""
    ids: list[str] = []
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            key, _, value = line.partition("=")
            if key in ("ID", "ID_LIKE"):
                ids += value.strip('"').split()
    except OSError:
        pass
    for distro in ids:
        if distro in STATIC_LIBC_PACKAGES:
            return STATIC_LIBC_PACKAGES[distro]
    return "libc6-dev (Debian, Ubuntu), glibc-static (Fedora, RHEL) or musl-dev (Alpine)"


def links(cc: list[str], extra: list[str]) -> bool:
    """Whether cc compiles and links a trivial C program with the extra flags."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text("int main(void) { return 0; }\n")
        argv = [*cc, *extra, str(src), "-o", str(Path(tmp) / "probe")]
        try:
            return subprocess.run(argv, capture_output=True).returncode == 0
        except OSError:
            return False


def require_static_libc() -> None:
    """Stops the build, before compiling anything, if the compiler works but cannot link -static.

    The compiler is the one build_ext uses: $CC, else the one Python was built with.
    """
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    if not links(cc, ["-static"]) and links(cc, []):
        sys.exit(
            "codeward: a3s-init is linked statically and this machine has no static C library: "
            f"install {static_libc_package()}, or set A3S_INIT_DYNAMIC=1 to link it dynamically "
            "(docs/packaging.md)"
        )


class BuildWithInit(build_ext):
    """Also builds a3s-init, the supervisor that is PID 1 in the sandbox (static by default).

    The init is built first: the extension is compiled with its SHA-256 (A3S_INIT_SHA256), which
    the core checks the init against whenever it is given one, so that an init changed after the
    build (a package installed in a workspace a command can write) is refused (docs/security.md).
    """

    def run(self) -> None:
        if LINUX and STATIC_INIT:
            require_static_libc()
        super().run()

    def build_extensions(self) -> None:
        if LINUX:  # the compiler is set up by now, the extension not yet compiled
            self.build_init()
        super().build_extensions()

    def build_init(self) -> None:
        # an editable install (setuptools' editable_mode) runs the package from the source
        # tree, where the extension is copied too: its init must be the one it was built with
        in_tree = self.inplace or getattr(self, "editable_mode", False)
        package_dir = ROOT / "python" / "codeward" if in_tree else Path(self.build_lib) / "codeward"
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
            extra_postargs=[*link_args, *(["-static"] if STATIC_INIT else [])],
        )
        init = out_dir / "a3s-init"
        digest = hashlib.sha256(init.read_bytes()).hexdigest()
        for ext in self.extensions:
            ext.define_macros = [
                *(m for m in ext.define_macros if m[0] != "A3S_INIT_SHA256"),
                ("A3S_INIT_SHA256", f'"{digest}"'),
            ]
            ext.depends = [*ext.depends, str(init)]  # a new init: rebuilt with its digest


setup(
    ext_modules=[
        Extension(
            "codeward._native",
            sources=["python/codeward/_native.c", *CORE],
            include_dirs=["native/include"],
            extra_compile_args=compile_args,
            libraries=libraries,
            extra_link_args=link_args,
            define_macros=[("Py_LIMITED_API", "0x030A0000")],
            py_limited_api=True,
        )
    ],
    cmdclass={"build_ext": BuildWithInit},
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
