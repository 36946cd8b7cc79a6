#!/bin/sh
# tests/gpu/test_dlpack_torch.sh -- t4a and torch share device memory (DLPack,
# zero-copy, ordered): see tests/gpu/frameworks.sh and tests/frameworks/test_torch.py.
exec sh "${T4A_TEST_SRCDIR:-$(dirname "$0")/../..}/tests/gpu/frameworks.sh" torch
