/* plugin-host/test_gate.h -- the host backend's test gate, for the shared
 * suites' host lane (tests/runtime/rtutil.c; docs/testing.md, "The host
 * lane: the gate").
 *
 * On CUDA a test holds a runtime's stream back with a kernel that spins
 * until the host sets a flag, launched through the raw seam. The host
 * backend has no raw seam (a spinning kernel launched through the table
 * would hold its worker and a pool thread, and cost a compile in every
 * test that gates), and no other table call can block its queue on
 * something the test controls: every operation runs to completion, a wait (copy_from_runtime,
 * runtime_wait_witness) waits only for work already enqueued somewhere,
 * and a small operation on an idle queue runs on the caller's thread. So
 * the backend has one test-only hook, off unless the process sets
 * T4A_HOST_TEST_GATE=1 (read at each use of the flag below):
 *
 *   host_register(rt, word, bytes >= 4, T4A__HOST_REGISTER_TEST_GATE, &hb)
 *
 * registers the consumer's memory as usual and enqueues, on rt's worker
 * (never on the caller's thread), an operation that waits until the
 * aligned 32-bit word at `word` is nonzero: the gate opens when the test
 * stores a nonzero value there. host_unregister ends it as any
 * registration (after the gate ran: rt_gate_free syncs first). Refused
 * with T4A_EBUSY during a capture. Without the variable the flag is an
 * unknown flag, T4A_EINVAL, like on every other backend: the table, its
 * symbols and its behaviour for any consumer are unchanged. */
#ifndef T4A_PLUGIN_HOST_TEST_GATE_H
#define T4A_PLUGIN_HOST_TEST_GATE_H

#define T4A__HOST_TEST_GATE_ENV "T4A_HOST_TEST_GATE"
#define T4A__HOST_REGISTER_TEST_GATE 0x80000000u

#endif
