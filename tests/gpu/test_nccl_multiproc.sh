#!/bin/sh
# tests/gpu/test_nccl_multiproc.sh -- examples/nccl_multiproc on two GPUs: a
# launcher starts two processes (fork+exec), rank 0 hands the NCCL id to rank
# 1 in a file, each makes one t4a runtime on its GPU and runs the all-reduce
# on the runtime's stream inside a raw section, verified bit for bit. With
# fewer than two GPUs each rank says why and exits 4: a SKIP, or a FAIL in the
# multigpu lane. The NCCL search and the verdicts are test_nccl.sh's.
T4A_NCCL_PROGRAM=nccl_multiproc
export T4A_NCCL_PROGRAM
exec sh "$(dirname "$0")/test_nccl.sh"
