#!/bin/sh
# tests/gpu/test_dlpack_jax.sh -- t4a and jax share device memory (DLPack,
# zero-copy, ordered): see tests/gpu/frameworks.sh and tests/frameworks/test_jax.py.
exec sh "${T4A_TEST_SRCDIR:-$(dirname "$0")/../..}/tests/gpu/frameworks.sh" jax
