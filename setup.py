"""Build the native engine: kafkagroup._core (pybind11 over csrc/) and the Cython modules in pyext/.

csrc/ is a plain C++17 library with no Python headers; it is compiled into the pybind11 module together
with the glue in pyext/_core.cpp. Every pyext/*.pyx is compiled as kafkagroup.<stem> by Cython.
"""
from __future__ import annotations

import glob
import os

from pybind11.setup_helpers import Pybind11Extension, ParallelCompile, build_ext, naive_recompile
from setuptools import Extension, setup

# Two cores on the reference machine: compile translation units in parallel.
# naive_recompile: an object is rebuilt only when its source is newer (headers: `make clean`).
ParallelCompile("KAFKAGROUP_BUILD_JOBS", default=0, needs_recompile=naive_recompile).install()

CXX_FLAGS = ["-O3", "-fvisibility=hidden", "-Wall", "-Wextra", "-Wno-unused-parameter"]

# The C++ runtime is linked into _core statically, its symbols kept private (--exclude-libs): the module
# then needs only glibc, libm, libgcc_s and the interpreter (all in every manylinux policy), so auditwheel
# can tag the wheel manylinux, and it never meets another extension's libstdc++ at run time.
# --gc-sections drops the parts of libstdc++.a nothing calls; without it std::random_device's code comes
# along (with COW strings) and needs glibc 2.36's arc4random. libgcc stays shared: its static unwinder
# needs glibc 2.35's _dl_find_object. What remains sets the tag: pthread_create & co. at GLIBC_2.34 (the
# version every program linked against glibc >= 2.34 needs), so a wheel built on this machine (Debian 12,
# glibc 2.36, gcc 12) is manylinux_2_34. An older tag needs an older glibc to link against (a manylinux
# image).
# KAFKAGROUP_SHARED_LIBSTDCXX=1 links the system's shared libstdc++ instead (tools/sanitize.sh: ASan must
# see operator new/delete, which a private static copy would hide).
LINK_FLAGS = ([] if os.environ.get("KAFKAGROUP_SHARED_LIBSTDCXX") == "1"
              else ["-static-libstdc++", "-Wl,--exclude-libs,ALL", "-Wl,--gc-sections"])

csrc_sources = sorted(glob.glob("csrc/kafkagroup/**/*.cpp", recursive=True))

ext_modules = [
    Pybind11Extension(
        "kafkagroup._core",
        ["pyext/_core.cpp", *csrc_sources],
        include_dirs=["csrc"],
        cxx_std=17,
        extra_compile_args=CXX_FLAGS,
        extra_link_args=LINK_FLAGS,
    )
]

pyx_files = sorted(glob.glob("pyext/*.pyx"))
if pyx_files:
    import numpy
    from Cython.Build import cythonize

    cython_exts = [
        Extension(
            f"kafkagroup.{os.path.splitext(os.path.basename(path))[0]}",
            [path],
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O3"],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        )
        for path in pyx_files
    ]
    ext_modules += cythonize(
        cython_exts, language_level=3, compiler_directives={"boundscheck": False, "wraparound": False}
    )

setup(ext_modules=ext_modules, cmdclass={"build_ext": build_ext})
