"""Builds the gulpdb wheel with the project's own CMake build.

Why setuptools: the package must build offline from Debian 12's packages,
which have setuptools (66), wheel and build but not scikit-build-core. So the
build backend is setuptools, whose ``build_ext`` step is replaced by one that
drives CMake: CMakeLists.txt stays the only place that knows the sources, the
compile flags, the files of the Python package and the version, and there is
no second build system to keep in sync.

The step configures and builds a CMake tree (``build/wheel``: optimised,
static, without tests, benchmarks and fuzzers), then installs its ``python``
component (the package: .py files, type stubs, the extension module) and its
``python_command`` component (the ``gulpdb`` command, bundled as
``gulpdb/_bin/gulpdb``) into the wheel's staging directory. The ``gulpdb``
script the wheel installs runs that command (``gulpdb/__main__.py``).

Wheels are built from the source tree; there is no source distribution
(setuptools' file discovery skips the directories that the build tree links
to, so an sdist would miss sources).

Environment:
  GULPDB_CMAKE_BUILD_DIR  use this already configured CMake tree instead of
                          build/wheel, as it is configured (scripts/package.sh
                          makes the wheel from the tree that makes the .deb)
  CMAKE_ARGS              extra arguments for configuring build/wheel
  CMAKE_BUILD_PARALLEL_LEVEL  build jobs (default: one per core)
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def project_version() -> str:
    """The version CMakeLists.txt's project() declares: the one version of gulpdb."""
    cmake_lists = os.path.join(ROOT, "CMakeLists.txt")
    if not os.path.exists(cmake_lists):
        # An sdist has only what setuptools finds by itself, not the CMake
        # sources; wheels are built from a source tree.
        raise RuntimeError(
            f"{cmake_lists} is missing: gulpdb builds from its source tree "
            "(pip install <tree>, python3 -m build --wheel <tree>), not from an sdist"
        )
    with open(cmake_lists, encoding="utf-8") as f:
        match = re.search(r"project\(\s*gulpdb\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", f.read())
    if match is None:
        raise RuntimeError("CMakeLists.txt: no 'project(gulpdb VERSION x.y.z' found")
    return match.group(1)


def run(command: list[str]) -> None:
    print("+ " + shlex.join(command), flush=True)
    subprocess.run(command, check=True)


class CMakeBuild(build_ext):
    """build_ext that builds the extension and the command with CMake."""

    def run(self) -> None:
        build_dir = os.environ.get("GULPDB_CMAKE_BUILD_DIR")
        if build_dir:
            build_dir = os.path.abspath(build_dir)
            if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
                raise RuntimeError(f"GULPDB_CMAKE_BUILD_DIR={build_dir} is not a configured CMake tree")
        else:
            build_dir = os.path.join(ROOT, "build", "wheel")
            run([
                "cmake", "-S", ROOT, "-B", build_dir,
                "-DCMAKE_BUILD_TYPE=Release",
                "-DBUILD_SHARED_LIBS=OFF",
                "-DGULPDB_BUILD_PYTHON=ON",
                "-DGULPDB_BUILD_TESTS=OFF",
                "-DGULPDB_BUILD_BENCH=OFF",
                "-DGULPDB_BUILD_FUZZERS=OFF",
                # The interpreter that runs this build is the one the module is for.
                f"-DPython_EXECUTABLE={sys.executable}",
                *shlex.split(os.environ.get("CMAKE_ARGS", "")),
            ])
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        run(["cmake", "--build", build_dir, "--target", "_gulpdb", "gulpdb", "--parallel", jobs])

        stage = os.path.join(os.path.abspath(self.build_temp), "gulpdb-stage")
        shutil.rmtree(stage, ignore_errors=True)
        for component in ("python", "python_command"):
            run(["cmake", "--install", build_dir, "--prefix", stage,
                 "--component", component, "--strip"])
        # The package directory, wherever GULPDB_INSTALL_PYTHONDIR put it.
        found = glob.glob(os.path.join(stage, "**", "gulpdb", "__init__.py"), recursive=True)
        if len(found) != 1:
            raise RuntimeError(f"expected one gulpdb package under {stage}, found {found}")
        package = os.path.dirname(found[0])
        if not os.access(os.path.join(package, "_bin", "gulpdb"), os.X_OK):
            raise RuntimeError(f"the gulpdb command is missing from {package}/_bin")
        target = os.path.join(os.path.abspath(self.build_lib), "gulpdb")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(package, target)


setup(
    version=project_version(),
    # The package comes whole from CMake (CMakeBuild); the one extension
    # declared here makes the wheel platform-specific and runs build_ext.
    packages=[],
    ext_modules=[Extension("gulpdb._gulpdb", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
)
