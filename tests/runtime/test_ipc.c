/* tests/runtime/test_ipc.c -- the process slots of ABI 1.2 within one
 * process, in every lane: what each refuses and why (no T4A_RUNTIME_IPC, an
 * empty or wrapped buffer, bytes that are no export, a pool the importer
 * does not know, another device), what a completed witness exports (nothing
 * to wait for: no driver wait on the fake), the log's IPC events, and on the
 * fake a round trip through one process (export, import, wait, bit-exact
 * both ways, an export's free going to the pool). The host backend leaves
 * the slots NULL and refuses T4A_RUNTIME_IPC. Two processes are
 * tests/gpu/test_ipc_procs.c. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/runtime/rtutil.h"

#define BYTES (256u << 10)

static t4a_runtime create_ipc(uint32_t extra) {
  t4a_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = T4A_RUNTIME_IPC | extra;
  t4a_runtime rt = {0};
  RT_OK(T->runtime_create(0, &o, &rt));
  return rt;
}

START_TEST(the_host_backend_has_no_processes) {
  ck_assert_ptr_null(T->buffer_export_ipc);
  ck_assert_ptr_null(T->buffer_import_ipc);
  ck_assert_ptr_null(T->witness_export_ipc);
  ck_assert_ptr_null(T->runtime_wait_ipc_witness);
  t4a_runtime_options o = {.struct_size = sizeof o, .flags = T4A_RUNTIME_IPC};
  t4a_runtime rt;
  RT_EXPECT(T->runtime_create(0, &o, &rt), T4A_EUNSUPPORTED);
  RT_DETAIL("buffer_wrap_external");
}
END_TEST

START_TEST(what_the_process_slots_refuse) {
  t4a_runtime plain = rt_create(), ipc = create_ipc(0);
  t4a_buffer b, e, w;
  RT_OK(T->buffer_alloc(plain, BYTES, &b));
  t4a_ipc_buffer x;
  int fd = 42;
  RT_EXPECT(T->buffer_export_ipc(plain, b, &x, &fd), T4A_EUNSUPPORTED);
  RT_DETAIL("T4A_RUNTIME_IPC");
  ck_assert_int_eq(fd, -1);
  RT_OK(T->buffer_alloc(ipc, 0, &e));
  RT_EXPECT(T->buffer_export_ipc(ipc, e, &x, NULL), T4A_EINVAL);
  RT_DETAIL("empty");
  RT_EXPECT(T->buffer_export_ipc(ipc, b, &x, NULL), T4A_EHANDLE); /* another runtime's */
  RT_EXPECT(T->buffer_export_ipc(ipc, b, NULL, NULL), T4A_EINVAL);
  /* an external buffer: the runtime's own memory wrapped */
  RT_OK(T->buffer_alloc(ipc, BYTES, &w));
  uint64_t addr;
  RT_OK(T->buffer_device_address(ipc, w, &addr));
  t4a_external_memory m = {.struct_size = sizeof m, .address = addr, .bytes = 4096};
  t4a_buffer wrapped;
  RT_OK(T->buffer_wrap_external(ipc, &m, &wrapped));
  RT_EXPECT(T->buffer_export_ipc(ipc, wrapped, &x, NULL), T4A_EINVAL);
  RT_DETAIL("wrapped");
  /* bytes that are no export */
  t4a_ipc_buffer junk;
  memset(&junk, 0x5a, sizeof junk);
  t4a_buffer out;
  RT_EXPECT(T->buffer_import_ipc(ipc, &junk, -1, &out), T4A_EINVAL);
  RT_DETAIL("no buffer_export_ipc");
  ck_assert_uint_eq(out.bits, 0);
  t4a_ipc_witness wj;
  memset(&wj, 0x5a, sizeof wj);
  RT_EXPECT(T->runtime_wait_ipc_witness(ipc, &wj), T4A_EINVAL);
  /* a real export, imported without its pool's descriptor */
  RT_OK(T->buffer_export_ipc(ipc, w, &x, NULL));
  t4a_runtime other = rt_create();
  RT_EXPECT(T->buffer_import_ipc(other, &x, -1, &out), T4A_EINVAL);
  RT_DETAIL("pool's file descriptor");
  /* a witness of a runtime without T4A_RUNTIME_IPC: refused; of an IPC
   * runtime whose work completed: exported complete, waiting enqueues
   * nothing */
  t4a_witness done, plain_w;
  RT_OK(T->seal(plain, &plain_w));
  RT_EXPECT(T->witness_export_ipc(plain_w, &wj), T4A_EUNSUPPORTED);
  RT_OK(T->memset(ipc, w, 0, 1, 1, 64));
  RT_OK(T->seal(ipc, &done));
  RT_OK(T->witness_wait(done, T4A_WAIT_FOREVER));
  t4a_ipc_witness wd, wd2;
  RT_OK(T->witness_export_ipc(done, &wd));
  RT_OK(T->witness_export_ipc(done, &wd2));
  ck_assert(memcmp(&wd, &wd2, sizeof wd) == 0); /* again: the same bytes */
  uint64_t waits = rt_fake_calls("cuStreamWaitEvent");
  RT_OK(T->runtime_wait_ipc_witness(other, &wd));
  if (rt_on_fake())
    ck_assert_uint_eq(rt_fake_calls("cuStreamWaitEvent"), waits);
  /* during a capture */
  RT_OK(T->graph_begin(other));
  RT_EXPECT(T->runtime_wait_ipc_witness(other, &wd), T4A_EBUSY);
  RT_DETAIL("capture");
  t4a_graph g;
  if (T->graph_end(other, &g) == T4A_OK) /* an empty capture: a graph, or a refusal */
    RT_OK(T->graph_release(other, g));
  RT_OK(T->witness_release(done));
  RT_OK(T->witness_release(plain_w));
  RT_OK(T->buffer_free(ipc, wrapped));
  RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(ipc, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(plain, T4A_WAIT_FOREVER));
}
END_TEST

/* One process plays both sides (the fake maps its own pool again): the
 * plugin's paths, bit for bit, gated so the wait is proved GPU-side. */
START_TEST(a_round_trip_within_one_process) {
  t4a_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = T4A_RUNTIME_IPC | T4A_RUNTIME_ALLOC_LOG;
  t4a_runtime ex, im;
  RT_OK(T->runtime_create(0, &o, &ex));
  RT_OK(T->runtime_create(0, &o, &im));
  unsigned char *in = malloc(BYTES), *out = malloc(BYTES);
  t4a_test_fill_random(in, BYTES, t4a_test_seed());
  t4a_buffer a;
  RT_OK(T->buffer_alloc(ex, BYTES, &a));
  /* the exporter's write is held behind a gate: the importer's read must
   * wait for it GPU-side */
  rt_gate g;
  rt_gate_close(&g, ex);
  t4a_host_buffer hb;
  void *hp;
  RT_OK(T->host_alloc(ex, BYTES, 0, &hb, &hp));
  memcpy(hp, in, BYTES);
  RT_OK(T->copy_h2d_pinned(ex, a, 0, hb, 0, BYTES));
  t4a_witness wa;
  RT_OK(T->seal(ex, &wa));
  t4a_ipc_buffer xa;
  t4a_ipc_witness xw;
  int fd = -1;
  RT_OK(T->buffer_export_ipc(ex, a, &xa, &fd));
  ck_assert_int_ge(fd, 0);
  RT_OK(T->witness_export_ipc(wa, &xw));
  t4a_buffer ia, ia2, a2;
  RT_OK(T->buffer_import_ipc(im, &xa, fd, &ia));
  close(fd);
  RT_OK(T->buffer_alloc(ex, 4096, &a2)); /* a second buffer of the pool: */
  t4a_ipc_buffer xa2;
  RT_OK(T->buffer_export_ipc(ex, a2, &xa2, NULL));
  RT_OK(T->buffer_import_ipc(im, &xa2, -1, &ia2)); /* the pool is known now */
  uint64_t size = 0;
  RT_OK(T->buffer_size(im, ia, &size));
  ck_assert_uint_eq(size, BYTES);
  RT_OK(T->runtime_wait_ipc_witness(im, &xw));
  t4a_buffer mine;
  RT_OK(T->buffer_alloc(im, BYTES, &mine));
  RT_OK(T->copy_d2d(im, mine, 0, ia, 0, BYTES)); /* behind the wait */
  t4a_witness wm;
  RT_OK(T->seal(im, &wm));
  RT_EXPECT(T->witness_query(wm), T4A_ENOTREADY); /* held by ex's gate */
  rt_gate_open(&g);
  RT_OK(T->witness_wait(wm, T4A_WAIT_FOREVER));
  RT_OK(T->copy_d2h(im, out, mine, 0, BYTES));
  ck_assert(memcmp(in, out, BYTES) == 0);
  /* the other way: the importer writes the shared memory, the exporter
   * reads it after the importer's witness */
  RT_OK(T->memset(im, ia, 100, 0xc3u, 1, 1000));
  memset(in + 100, 0xc3, 1000);
  t4a_witness wi;
  RT_OK(T->seal(im, &wi));
  t4a_ipc_witness xi;
  RT_OK(T->witness_export_ipc(wi, &xi));
  RT_OK(T->runtime_wait_ipc_witness(ex, &xi));
  RT_OK(T->copy_d2h(ex, out, a, 0, BYTES));
  ck_assert(memcmp(in, out, BYTES) == 0);
  /* the log saw both ends */
  t4a_alloc_event ev[16];
  uint32_t n = 0;
  uint64_t next;
  RT_OK(T->alloc_log_read(im, 0, ev, 16, &n, &next));
  ck_assert_uint_ge(n, 2);
  ck_assert_uint_eq(ev[0].kind, T4A_ALLOC_EVENT_IPC_IMPORT);
  ck_assert_uint_eq(ev[0].buffer, ia.bits);
  ck_assert_uint_eq(ev[0].bytes, BYTES);
  RT_OK(T->alloc_log_read(ex, 0, ev, 16, &n, &next)); /* alloc a, export a, alloc a2, export a2 */
  ck_assert_uint_ge(n, 4);
  ck_assert_uint_eq(ev[1].kind, T4A_ALLOC_EVENT_IPC_EXPORT);
  ck_assert_uint_eq(ev[1].buffer, a.bits);
  ck_assert_uint_eq(ev[3].kind, T4A_ALLOC_EVENT_IPC_EXPORT);
  ck_assert_uint_eq(ev[3].buffer, a2.bits);
  /* the importer frees first, the exporter after its witness */
  RT_OK(T->buffer_free(im, ia));
  RT_OK(T->buffer_free(im, ia2));
  t4a_witness wf;
  t4a_ipc_witness xf;
  RT_OK(T->seal(im, &wf));
  RT_OK(T->witness_export_ipc(wf, &xf));
  RT_OK(T->runtime_wait_ipc_witness(ex, &xf));
  uint64_t frees = rt_fake_calls("cuMemFreeAsync");
  RT_OK(T->buffer_free(ex, a)); /* exported: to the pool, not the cache */
  if (rt_on_fake())
    ck_assert_uint_eq(rt_fake_calls("cuMemFreeAsync"), frees + 1);
  RT_OK(T->buffer_free(ex, a2));
  ck_assert_uint_eq(rt_cache(ex).bytes, 0);
  rt_gate_free(&g);
  t4a_witness all[] = {wa, wm, wi, wf};
  for (size_t i = 0; i < 4; i++)
    RT_OK(T->witness_release(all[i]));
  RT_OK(T->host_free(ex, hb));
  RT_OK(T->runtime_destroy(im, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(ex, T4A_WAIT_FOREVER));
  free(in);
  free(out);
}
END_TEST

START_TEST(an_import_on_another_device_is_refused) {
  t4a_runtime ex = create_ipc(0), far;
  RT_OK(T->runtime_create(1, NULL, &far));
  t4a_buffer a;
  RT_OK(T->buffer_alloc(ex, BYTES, &a));
  t4a_ipc_buffer x;
  RT_OK(T->buffer_export_ipc(ex, a, &x, NULL));
  t4a_buffer out;
  RT_EXPECT(T->buffer_import_ipc(far, &x, 0, &out), T4A_EFOREIGNDEVICE);
  RT_OK(T->runtime_destroy(far, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(ex, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(a_device_without_shareable_pools_refuses_ipc) {
  setenv("FAKE_CUDA_NO_IPC", "1", 1); /* read at each device query; this test's process only */
  t4a_runtime_options o = {.struct_size = sizeof o, .flags = T4A_RUNTIME_IPC};
  t4a_runtime rt;
  RT_EXPECT(T->runtime_create(0, &o, &rt), T4A_EUNSUPPORTED);
  RT_DETAIL("MEMPOOL_SUPPORTED_HANDLE_TYPES");
}
END_TEST

static Suite *suite(void) {
  Suite *s = rt_suite("ipc");
  TCase *tc = rt_tcase(s, "ipc", 60);
  if (rt_on_host()) {
    tcase_add_test(tc, the_host_backend_has_no_processes);
    return s;
  }
  tcase_add_test(tc, what_the_process_slots_refuse);
  if (rt_on_fake()) { /* CUDA may not import a pool into the process that made it */
    tcase_add_test(tc, a_round_trip_within_one_process);
    tcase_add_test(tc, an_import_on_another_device_is_refused);
    tcase_add_test(tc, a_device_without_shareable_pools_refuses_ipc);
  }
  return s;
}

int main(void) { return rt_run(suite(), 1); }
