#!/bin/sh
# tests/gpu/test_dlpack_cupy.sh -- t4a and cupy share device memory (DLPack,
# zero-copy, ordered): see tests/gpu/frameworks.sh and tests/frameworks/test_cupy.py.
exec sh "${T4A_TEST_SRCDIR:-$(dirname "$0")/../..}/tests/gpu/frameworks.sh" cupy
