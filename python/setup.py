"""The optional compiled fast path (t4a_gpu._fastcall); everything else is
declared in pyproject.toml. The extension is optional: where no C compiler
or no Python headers are found, the build goes on without it and the
package takes the ctypes route for every call (same results)."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("t4a_gpu._fastcall", ["t4a_gpu/_fastcall.c"],
                             depends=["t4a_gpu/_fastcall.h"], optional=True)])
