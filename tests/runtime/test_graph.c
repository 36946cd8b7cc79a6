/* tests/runtime/test_graph.c -- CUDA graphs through the runtime (ABI 1.1):
 * capture, replay, kernel argument updates, what a capture refuses, and
 * retirement behind the last replay; in every lane (the fake driver, whose
 * graphs re-run the captured operations, the GPU, and the host backend,
 * whose graphs are recordings of its queue's operations), with random
 * inputs checked bit for bit against the CPU after every replay. On the
 * fake, driver failures are injected into every graph call.
 *
 * The kernels come from the run-time compiler: the fake NVRTC in the fake
 * lane (so it runs everywhere), the real one on the GPU (required there),
 * the host C++ compiler on the host backend. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/runtime/rtutil.h"

static const char source[] =
    "extern \"C\" __global__ void t4a_mix_u32(unsigned *y, const unsigned *x, unsigned k,\n"
    "                                         unsigned long long n) {\n"
    "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "       i < n; i += (unsigned long long)gridDim.x * blockDim.x)\n"
    "    y[i] = (y[i] ^ x[i]) * 2654435761u + k;\n"
    "}\n"
    "extern \"C\" __global__ void t4a_empty() {}\n";

static uint32_t mix(uint32_t y, uint32_t x, uint32_t k) { return (y ^ x) * 2654435761u + k; }

static uint64_t rng = 1;
static uint32_t next32(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(rng >> 32);
}

/* The fake driver's test controls (NULL on the GPU). */
static void *fake(const char *name) {
  if (!rt_on_fake())
    return NULL;
  void *dl = dlopen(getenv("T4A_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  ck_assert_ptr_nonnull(dl);
  void *p = dlsym(dl, name);
  ck_assert_ptr_nonnull(p);
  return p;
}
static uint64_t fake_calls(const char *entry) {
  uint64_t (*calls)(const char *);
  *(void **)&calls = fake("fake_cuda_calls");
  return calls ? calls(entry) : 0;
}
static uint64_t fake_graph_stat(const char *what) {
  uint64_t (*stat)(const char *);
  *(void **)&stat = fake("fake_cuda_graph_stat");
  return stat ? stat(what) : 0;
}
static void fake_fail(const char *entry, unsigned code) {
  void (*inject)(const char *, uint64_t, unsigned);
  *(void **)&inject = fake("fake_cuda_fail");
  inject(entry, 1, code);
}

typedef struct kit {
  t4a_runtime rt;
  t4a_module mod;
  t4a_function mix, empty;
} kit;

static kit kit_make(void) {
  kit k = {.rt = rt_create()};
  t4a_compile_options o = {.struct_size = sizeof o, .source = source, .name = "graph.cu"};
  t4a_artifact a;
  RT_OK(T->artifact_compile(&o, &a));
  RT_OK(T->module_load(k.rt, a, &k.mod));
  RT_OK(T->artifact_release(a));
  RT_OK(T->function_get(k.rt, k.mod, "t4a_mix_u32", &k.mix));
  RT_OK(T->function_get(k.rt, k.mod, "t4a_empty", &k.empty));
  return k;
}

static const t4a_launch_config CFG = {
    .struct_size = sizeof CFG, .grid = {7, 1, 1}, .block = {128, 1, 1}};

/* Enqueues mix(y, x, k, n) (captured when capturing). */
static void launch_mix(const kit *k, uint64_t y, uint64_t x, uint32_t key, uint64_t n) {
  void *args[] = {&y, &x, &key, &n};
  RT_OK(T->launch(k->rt, k->mix, &CFG, args));
}

static uint64_t addr(t4a_runtime rt, t4a_buffer b) {
  uint64_t a = 0;
  RT_OK(T->buffer_device_address(rt, b, &a));
  return a;
}

/* One captured (or enqueued) step writing y[0, n): mix(y, x, key) by the
 * kernel; step_ref is its result for one word. */
static void step(const kit *k, t4a_buffer y, t4a_buffer x, uint32_t key, uint64_t n) {
  launch_mix(k, addr(k->rt, y), addr(k->rt, x), key, n);
}
static uint32_t step_ref(uint32_t y, uint32_t x, uint32_t key) { return mix(y, x, key); }
/* The nodes a step makes: kernels, copies (memsets count as copies). */
static uint64_t step_kernels(void) { return 1; }

static t4a_graph_info graph_info(t4a_runtime rt, t4a_graph g) {
  t4a_graph_info i = {.struct_size = sizeof i};
  RT_OK(T->graph_info(rt, g, &i));
  return i;
}

static t4a_runtime_info runtime_info(t4a_runtime rt) {
  t4a_runtime_info i = {.struct_size = sizeof i};
  RT_OK(T->runtime_info(rt, &i));
  return i;
}

START_TEST(graph_replays_a_chain_of_kernels_and_copies) {
  rng = t4a_test_seed();
  kit k = kit_make();
  const uint64_t n = 65536 + 17 + next32() % 4096, bytes = n * 4;
  const uint32_t k1 = next32(), k2 = next32(), k3 = next32();
  const unsigned char fill = (unsigned char)next32();
  t4a_buffer x, y, z;
  RT_OK(T->buffer_alloc(k.rt, bytes, &x));
  RT_OK(T->buffer_alloc(k.rt, bytes, &y));
  RT_OK(T->buffer_alloc(k.rt, bytes, &z));
  t4a_host_buffer hin, hout;
  void *pin, *pout;
  RT_OK(T->host_alloc(k.rt, bytes, 0, &hin, &pin));
  RT_OK(T->host_alloc(k.rt, bytes, 0, &hout, &pout));
  uint32_t *in = pin, *out = pout, *ref = malloc(bytes), *ty = malloc(bytes), *tz = malloc(bytes);
  memset(out, 0xa5, bytes);
  rt_sync(k.rt);
  t4a_runtime_counters before = rt_counters(k.rt);

  RT_OK(T->graph_begin(k.rt));
  ck_assert_uint_eq(runtime_info(k.rt).capturing, 1);
  RT_OK(T->copy_h2d_pinned(k.rt, x, 0, hin, 0, bytes));
  RT_OK(T->memset(k.rt, y, 0, fill, 1, bytes));
  launch_mix(&k, addr(k.rt, y), addr(k.rt, x), k1, n);
  RT_OK(T->copy_d2d(k.rt, z, 0, y, 0, bytes));
  launch_mix(&k, addr(k.rt, z), addr(k.rt, x), k2, n);
  launch_mix(&k, addr(k.rt, y), addr(k.rt, z), k3, n);
  RT_OK(T->copy_d2h_pinned(k.rt, hout, 0, y, 0, bytes));
  t4a_graph g;
  RT_OK(T->graph_end(k.rt, &g));
  ck_assert(g.bits != 0);
  ck_assert_uint_eq(runtime_info(k.rt).capturing, 0);

  /* captured, not run: nothing enqueued, nothing to seal */
  t4a_runtime_counters c = rt_counters(k.rt);
  ck_assert_uint_eq(c.launches, before.launches);
  ck_assert_uint_eq(c.graphs_captured, before.graphs_captured + 1);
  ck_assert_uint_eq(c.live_graphs, 1);
  rt_sync(k.rt);
  ck_assert_uint_eq(rt_counters(k.rt).seal_events_recorded, before.seal_events_recorded);
  for (uint64_t i = 0; i < n; i++)
    ck_assert_uint_eq(out[i], 0xa5a5a5a5u);
  t4a_graph_info gi = graph_info(k.rt, g);
  ck_assert_uint_eq(gi.kernels, 3);
  ck_assert_uint_eq(gi.copies, 4);
  ck_assert_uint_eq(gi.nodes, 7);
  ck_assert_uint_eq(gi.replays, 0);

  for (int replay = 1; replay <= 8; replay++) {
    for (uint64_t i = 0; i < n; i++)
      in[i] = next32();
    memset(out, 0xa5, bytes);
    uint64_t events = rt_counters(k.rt).seal_events_recorded;
    RT_OK(T->graph_launch(k.rt, g));
    rt_sync(k.rt);
    ck_assert_uint_eq(rt_counters(k.rt).seal_events_recorded, events + 1); /* one event */
    uint32_t yf;
    memset(&yf, fill, 4);
    for (uint64_t i = 0; i < n; i++) {
      ty[i] = mix(yf, in[i], k1);
      tz[i] = mix(ty[i], in[i], k2);
      ref[i] = mix(ty[i], tz[i], k3);
    }
    ck_assert_msg(memcmp(out, ref, bytes) == 0, "replay %d differs from the CPU", replay);
    ck_assert_uint_eq(graph_info(k.rt, g).replays, (uint64_t)replay);
  }
  ck_assert_uint_eq(rt_counters(k.rt).graph_launches, before.graph_launches + 8);
  ck_assert_uint_eq(rt_counters(k.rt).launches, before.launches);
  RT_OK(T->graph_release(k.rt, g));
  ck_assert_uint_eq(rt_counters(k.rt).live_graphs, 0);
  RT_EXPECT(T->graph_launch(k.rt, g), T4A_EHANDLE);
  RT_OK(T->runtime_destroy(k.rt, T4A_WAIT_FOREVER));
  free(ref);
  free(ty);
  free(tz);
}
END_TEST

/* Copies and memsets only (what every backend's graphs hold, the host's
 * too): pinned upload, memset, device-to-device copies (1D and 2D, one into
 * the middle of a memset), pinned download, replayed eight times with new
 * random input, bit for bit against the CPU, one event per replay. */
START_TEST(graph_replays_a_chain_of_copies_and_memsets) {
  rng = t4a_test_seed();
  t4a_runtime rt = rt_create();
  const uint64_t rows = 64, width = 1000 + next32() % 24, pitch = 1024, bytes = rows * pitch;
  const unsigned char fill = (unsigned char)next32();
  t4a_buffer x, y, z;
  RT_OK(T->buffer_alloc(rt, bytes, &x));
  RT_OK(T->buffer_alloc(rt, bytes, &y));
  RT_OK(T->buffer_alloc(rt, bytes, &z));
  t4a_host_buffer hin, hout;
  void *pin, *pout;
  RT_OK(T->host_alloc(rt, bytes, 0, &hin, &pin));
  RT_OK(T->host_alloc(rt, bytes, 0, &hout, &pout));
  unsigned char *in = pin, *out = pout, *ref = malloc(bytes);
  RT_OK(T->memset(rt, z, 0, 0x33, 1, bytes));
  rt_sync(rt);
  t4a_runtime_counters before = rt_counters(rt);
  t4a_copy_2d r = {.struct_size = sizeof r,
                   .dst_offset = 7,
                   .dst_pitch = pitch,
                   .src_offset = 0,
                   .src_pitch = pitch,
                   .width = width,
                   .rows = rows - 1};
  RT_OK(T->graph_begin(rt));
  RT_OK(T->copy_h2d_pinned(rt, x, 0, hin, 0, bytes));
  RT_OK(T->memset(rt, y, 0, fill, 1, bytes));
  RT_OK(T->copy_d2d(rt, y, bytes / 4, x, 0, bytes / 2)); /* into the middle of the fill */
  RT_OK(T->copy_2d_d2d(rt, z, y, &r));
  RT_OK(T->copy_d2h_pinned(rt, hout, 0, z, 0, bytes));
  t4a_graph g;
  RT_OK(T->graph_end(rt, &g));
  t4a_graph_info gi = graph_info(rt, g);
  ck_assert_uint_eq(gi.kernels, 0);
  ck_assert_uint_eq(gi.copies, 5); /* memsets count as copies */
  if (rt_on_host())
    ck_assert_uint_eq(gi.nodes, 5); /* one operation each */
  else
    ck_assert_uint_ge(gi.nodes, 5); /* the driver's graph may hold more nodes (the 2D copy) */
  ck_assert_uint_eq(rt_counters(rt).graphs_captured, before.graphs_captured + 1);
  /* no kernel to give arguments to */
  RT_EXPECT(T->graph_set_kernel_args(rt, g, 0, NULL), T4A_ERANGE);
  for (int replay = 1; replay <= 8; replay++) {
    t4a_test_fill_random(in, bytes, rng + (uint64_t)replay);
    memset(out, 0xa5, bytes);
    uint64_t events = rt_counters(rt).seal_events_recorded;
    RT_OK(T->graph_launch(rt, g));
    rt_sync(rt);
    ck_assert_uint_eq(rt_counters(rt).seal_events_recorded, events + 1);
    unsigned char *ty = malloc(bytes);
    memset(ty, fill, bytes);
    memcpy(ty + bytes / 4, in, bytes / 2);
    memset(ref, 0x33, bytes);
    for (uint64_t row = 0; row < rows - 1; row++)
      memcpy(ref + 7 + row * pitch, ty + row * pitch, width);
    free(ty);
    ck_assert_msg(memcmp(out, ref, bytes) == 0, "replay %d differs from the CPU", replay);
    ck_assert_uint_eq(graph_info(rt, g).replays, (uint64_t)replay);
  }
  ck_assert_uint_eq(rt_counters(rt).graph_launches, before.graph_launches + 8);
  RT_OK(T->graph_release(rt, g));
  RT_EXPECT(T->graph_launch(rt, g), T4A_EHANDLE);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(ref);
}
END_TEST

/* Downloads n words of b. */
static void download(t4a_runtime rt, t4a_buffer b, uint32_t *out, uint64_t n) {
  RT_OK(T->copy_d2h(rt, out, b, 0, n * 4));
}

START_TEST(kernel_arguments_are_updated_without_reinstantiating) {
  rng = t4a_test_seed();
  kit k = kit_make();
  const uint64_t n = 10000 + next32() % 5000, bytes = n * 4;
  uint32_t *x0 = malloc(bytes), *y0 = malloc(bytes), *got = malloc(bytes), *ref = malloc(bytes),
           *w0 = malloc(bytes);
  for (uint64_t i = 0; i < n; i++) {
    x0[i] = next32();
    y0[i] = next32();
    w0[i] = next32();
  }
  t4a_buffer x, y, w;
  RT_OK(T->buffer_alloc(k.rt, bytes, &x));
  RT_OK(T->buffer_alloc(k.rt, bytes, &y));
  RT_OK(T->buffer_alloc(k.rt, bytes, &w));
  RT_OK(T->copy_h2d(k.rt, x, 0, x0, bytes));
  RT_OK(T->copy_h2d(k.rt, y, 0, y0, bytes));
  RT_OK(T->copy_h2d(k.rt, w, 0, w0, bytes));
  uint32_t key = next32(), captured_key = key, key2 = next32(), key3 = next32();
  uint64_t py = addr(k.rt, y), px = addr(k.rt, x), pw = addr(k.rt, w), nn = n;
  void *args[] = {&py, &px, &key, &nn};
  RT_OK(T->graph_begin(k.rt));
  RT_OK(T->launch(k.rt, k.mix, &CFG, args));
  RT_OK(T->launch(k.rt, k.empty, &CFG, NULL));
  t4a_graph g;
  RT_OK(T->graph_end(k.rt, &g));
  key = ~key; /* the values were copied at capture: this changes nothing */
  uint64_t instantiations = fake_calls("cuGraphInstantiateWithFlags");

  RT_OK(T->graph_launch(k.rt, g));
  download(k.rt, y, got, n);
  for (uint64_t i = 0; i < n; i++)
    y0[i] = ref[i] = mix(y0[i], x0[i], captured_key);
  ck_assert(memcmp(got, ref, bytes) == 0);

  /* new arguments: another buffer and key; replays already queued keep the
   * old ones (a gate holds the stream while both are queued) */
  rt_gate gate;
  rt_gate_close(&gate, k.rt);
  RT_OK(T->graph_launch(k.rt, g)); /* old arguments: y */
  void *args2[] = {&pw, &px, &key2, &nn};
  RT_OK(T->graph_set_kernel_args(k.rt, g, 0, args2));
  RT_OK(T->graph_launch(k.rt, g)); /* new: w */
  rt_gate_open(&gate);
  rt_gate_free(&gate);
  download(k.rt, y, got, n);
  for (uint64_t i = 0; i < n; i++)
    y0[i] = ref[i] = mix(y0[i], x0[i], captured_key);
  ck_assert_msg(memcmp(got, ref, bytes) == 0, "the queued replay did not keep its arguments");
  download(k.rt, w, got, n);
  for (uint64_t i = 0; i < n; i++)
    w0[i] = ref[i] = mix(w0[i], x0[i], key2);
  ck_assert_msg(memcmp(got, ref, bytes) == 0, "the updated arguments were not used");
  /* once more with a third key, on w again */
  void *args3[] = {&pw, &px, &key3, &nn};
  RT_OK(T->graph_set_kernel_args(k.rt, g, 0, args3));
  RT_OK(T->graph_launch(k.rt, g));
  download(k.rt, w, got, n);
  for (uint64_t i = 0; i < n; i++)
    ref[i] = mix(w0[i], x0[i], key3);
  ck_assert(memcmp(got, ref, bytes) == 0);
  RT_OK(T->graph_set_kernel_args(k.rt, g, 1, NULL)); /* the empty kernel: no arguments */
  ck_assert_uint_eq(rt_counters(k.rt).graph_updates, 3);
  if (rt_on_fake()) /* no re-instantiation */
    ck_assert_uint_eq(fake_calls("cuGraphInstantiateWithFlags"), instantiations);

  /* what is refused */
  RT_EXPECT(T->graph_set_kernel_args(k.rt, g, 2, args3), T4A_ERANGE);
  RT_DETAIL("kernel 2 is out of range");
  RT_EXPECT(T->graph_set_kernel_args(k.rt, g, UINT64_MAX, args3), T4A_ERANGE);
  t4a_runtime other = rt_create();
  RT_EXPECT(T->graph_set_kernel_args(other, g, 0, args3), T4A_EHANDLE);
  RT_EXPECT(T->graph_launch(other, g), T4A_EHANDLE);
  RT_EXPECT(T->graph_release(other, g), T4A_EHANDLE);
  RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  RT_OK(T->graph_release(k.rt, g));
  RT_OK(T->runtime_destroy(k.rt, T4A_WAIT_FOREVER));
  free(x0);
  free(y0);
  free(w0);
  free(got);
  free(ref);
}
END_TEST

START_TEST(capture_refuses_what_cannot_be_captured) {
  rng = t4a_test_seed();
  kit k = kit_make();
  t4a_runtime other = rt_create();
  const uint64_t n = 4096, bytes = n * 4;
  uint32_t *x0 = malloc(bytes), *y0 = malloc(bytes), *got = malloc(bytes);
  for (uint64_t i = 0; i < n; i++) {
    x0[i] = next32();
    y0[i] = next32();
  }
  t4a_buffer x, y, ob, spare;
  RT_OK(T->buffer_alloc(k.rt, bytes, &x));
  RT_OK(T->buffer_alloc(k.rt, bytes, &y));
  RT_OK(T->buffer_alloc(k.rt, bytes, &spare));
  RT_OK(T->buffer_alloc(other, bytes, &ob));
  RT_OK(T->copy_h2d(k.rt, x, 0, x0, bytes));
  RT_OK(T->copy_h2d(k.rt, y, 0, y0, bytes));
  t4a_witness w;
  RT_OK(T->seal(other, &w));
  t4a_graph older;
  RT_OK(T->graph_begin(k.rt));
  RT_OK(T->graph_end(k.rt, &older)); /* an empty graph is a graph */
  ck_assert_uint_eq(graph_info(k.rt, older).nodes, 0);
  uint32_t key = next32();

  RT_OK(T->graph_begin(k.rt));
  step(&k, y, x, key, n); /* captured */
  t4a_witness w2;
  t4a_buffer b2;
  t4a_graph g2;
  t4a_copy_2d r = {
      .struct_size = sizeof r, .dst_pitch = 16, .src_pitch = 16, .width = 16, .rows = 4};
#define REFUSED(call, name)                                                                        \
  do {                                                                                             \
    RT_EXPECT(call, T4A_EBUSY);                                                                    \
    RT_DETAIL(name ": the runtime is capturing a graph");                                          \
  } while (0)
  REFUSED(T->copy_h2d(k.rt, x, 0, x0, bytes), "copy_h2d");
  REFUSED(T->copy_d2h(k.rt, got, x, 0, bytes), "copy_d2h");
  REFUSED(T->copy_2d_h2d(k.rt, x, x0, &r), "copy_2d_h2d");
  REFUSED(T->copy_2d_d2h(k.rt, got, x, &r), "copy_2d_d2h");
  REFUSED(T->seal(k.rt, &w2), "seal");
  REFUSED(T->runtime_wait_witness(k.rt, w), "runtime_wait_witness");
  REFUSED(T->buffer_alloc(k.rt, 64, &b2), "buffer_alloc");
  REFUSED(T->buffer_free(k.rt, spare), "buffer_free");
  REFUSED(T->cache_trim(k.rt, 0), "cache_trim");
  REFUSED(T->copy_from_runtime(k.rt, x, 0, other, ob, 0, 64), "copy_from_runtime");
  REFUSED(T->copy_from_runtime(other, ob, 0, k.rt, x, 0, 64), "copy_from_runtime");
  /* the peer copies too, whichever side captures, before any device check
   * (other is on the same device: the refusal comes first) */
  REFUSED(T->copy_from_peer(k.rt, x, 0, other, ob, 0, 64), "copy_from_peer");
  RT_DETAIL("orders work of another runtime");
  REFUSED(T->copy_from_peer(other, ob, 0, k.rt, x, 0, 64), "copy_from_peer");
  RT_DETAIL(rt_on_host() ? "(on the source runtime)" : "(on the source runtime) records an event");
  REFUSED(T->copy_from_peer_via_host(k.rt, x, 0, other, ob, 0, 64), "copy_from_peer_via_host");
  REFUSED(T->copy_from_peer_via_host(other, ob, 0, k.rt, x, 0, 64), "copy_from_peer_via_host");
  RT_DETAIL("call it before graph_begin or after graph_end");
  REFUSED(T->graph_launch(k.rt, older), "graph_launch");
  RT_EXPECT(T->graph_begin(k.rt), T4A_EBUSY);
  RT_DETAIL(rt_on_host() ? "capturing already" : "captures do not nest");
  /* the buffer whose free was refused is still there */
  uint64_t size = 0;
  RT_OK(T->buffer_size(k.rt, spare, &size));
  ck_assert_uint_eq(size, bytes);
  /* other runtimes are not affected by this one's capture */
  rt_sync(other);
  t4a_graph g;
  RT_OK(T->graph_end(k.rt, &g)); /* the refusals did not break the capture */
  ck_assert_uint_eq(graph_info(k.rt, g).kernels, step_kernels());
  ck_assert_uint_eq(graph_info(k.rt, g).nodes, 1);
  RT_EXPECT(T->graph_end(k.rt, &g2), T4A_EINVAL);
  RT_DETAIL("not capturing");

  /* usable: the refused calls work now, the graph replays */
  RT_OK(T->graph_launch(k.rt, g));
  download(k.rt, y, got, n);
  for (uint64_t i = 0; i < n; i++)
    ck_assert_uint_eq(got[i], step_ref(y0[i], x0[i], key));
  RT_OK(T->seal(k.rt, &w2));
  RT_OK(T->witness_wait(w2, T4A_WAIT_FOREVER));
  RT_OK(T->witness_release(w2));
  RT_OK(T->buffer_free(k.rt, spare));
  RT_OK(T->cache_trim(k.rt, 0));
  RT_OK(T->witness_release(w));
  RT_OK(T->graph_release(k.rt, g));
  RT_OK(T->graph_release(k.rt, older));
  RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(k.rt, T4A_WAIT_FOREVER));
  free(x0);
  free(y0);
  free(got);
}
END_TEST

START_TEST(graph_released_while_a_replay_is_queued) {
  rng = t4a_test_seed();
  kit k = kit_make();
  const uint64_t n = 30000, bytes = n * 4;
  uint32_t *x0 = malloc(bytes), *y0 = malloc(bytes), *got = malloc(bytes);
  for (uint64_t i = 0; i < n; i++) {
    x0[i] = next32();
    y0[i] = next32();
  }
  t4a_buffer x, y;
  RT_OK(T->buffer_alloc(k.rt, bytes, &x));
  RT_OK(T->buffer_alloc(k.rt, bytes, &y));
  RT_OK(T->copy_h2d(k.rt, x, 0, x0, bytes));
  RT_OK(T->copy_h2d(k.rt, y, 0, y0, bytes));
  uint32_t key = next32();
  RT_OK(T->graph_begin(k.rt));
  for (int i = 0; i < 5; i++)
    step(&k, y, x, key + (uint32_t)i, n);
  t4a_graph g, never;
  RT_OK(T->graph_end(k.rt, &g));
  RT_OK(T->graph_begin(k.rt));
  step(&k, y, x, key, n);
  RT_OK(T->graph_end(k.rt, &never));
  rt_sync(k.rt);
  uint64_t pending = rt_counters(k.rt).pending_retirements;
  /* never replayed: released at once */
  RT_OK(T->graph_release(k.rt, never));
  ck_assert_uint_eq(rt_counters(k.rt).pending_retirements, pending);
  if (rt_on_fake())
    ck_assert_uint_eq(fake_graph_stat("exec"), 1);

  rt_gate gate;
  rt_gate_close(&gate, k.rt);
  RT_OK(T->graph_launch(k.rt, g)); /* queued behind the gate */
  RT_OK(T->graph_release(k.rt, g));
  /* the handle is stale at once; the executable waits for the replay */
  RT_EXPECT(T->graph_launch(k.rt, g), T4A_EHANDLE);
  t4a_graph_info gi = {.struct_size = sizeof gi};
  RT_EXPECT(T->graph_info(k.rt, g, &gi), T4A_EHANDLE);
  ck_assert_uint_eq(rt_counters(k.rt).pending_retirements, pending + 1);
  ck_assert_uint_eq(rt_counters(k.rt).live_graphs, 0);
  if (rt_on_fake())
    ck_assert_uint_eq(fake_graph_stat("exec"), 1); /* not destroyed under the replay */
  rt_gate_open(&gate);
  rt_gate_free(&gate); /* seals and waits: the retirement is due */
  ck_assert_uint_eq(rt_counters(k.rt).pending_retirements, pending);
  if (rt_on_fake()) {
    ck_assert_uint_eq(fake_graph_stat("exec"), 0);
    ck_assert_uint_eq(fake_graph_stat("early_exec_destroys"), 0);
  }
  download(k.rt, y, got, n); /* the released graph's replay ran in full */
  for (uint64_t i = 0; i < n; i++) {
    uint32_t v = y0[i];
    for (uint32_t j = 0; j < 5; j++)
      v = step_ref(v, x0[i], key + j);
    ck_assert_uint_eq(got[i], v);
  }

  /* a replay never sealed is retired at destroy, with the graphs left */
  t4a_graph left, unsealed;
  RT_OK(T->graph_begin(k.rt));
  step(&k, y, x, key, n);
  RT_OK(T->graph_end(k.rt, &left));
  RT_OK(T->graph_begin(k.rt));
  step(&k, y, x, key, n);
  RT_OK(T->graph_end(k.rt, &unsealed));
  RT_OK(T->graph_launch(k.rt, unsealed));
  RT_OK(T->graph_release(k.rt, unsealed));
  RT_OK(T->graph_launch(k.rt, left));
  RT_OK(T->runtime_destroy(k.rt, T4A_WAIT_FOREVER));
  if (rt_on_fake()) {
    ck_assert_uint_eq(fake_graph_stat("exec"), 0);
    ck_assert_uint_eq(fake_graph_stat("graph"), 0);
    ck_assert_uint_eq(fake_graph_stat("early_exec_destroys"), 0);
  }
  free(x0);
  free(y0);
  free(got);
}
END_TEST

/* Host memory a queued replay copies is released behind the replay:
 * unregistered memory only once the replay ran (on the fake, the replay
 * holds queued uses of it, so an early unpin is a violation), a freed
 * pinned buffer not handed out again meanwhile. */
START_TEST(host_memory_a_queued_replay_uses_is_released_behind_it) {
  rng = t4a_test_seed();
  kit k = kit_make();
  const uint64_t n = 16384, bytes = n * 4;
  uint32_t *mine = aligned_alloc(4096, bytes), *want = malloc(bytes), *got = malloc(bytes);
  for (uint64_t i = 0; i < n; i++)
    mine[i] = want[i] = next32();
  t4a_buffer d, d2;
  RT_OK(T->buffer_alloc(k.rt, bytes, &d));
  RT_OK(T->buffer_alloc(k.rt, bytes, &d2));
  t4a_host_buffer reg, pin;
  void *pp;
  RT_OK(T->host_register(k.rt, mine, bytes, 0, &reg));
  RT_OK(T->host_alloc(k.rt, bytes, 0, &pin, &pp));
  memcpy(pp, want, bytes);
  t4a_graph g;
  RT_OK(T->graph_begin(k.rt));
  RT_OK(T->copy_h2d_pinned(k.rt, d, 0, reg, 0, bytes));
  RT_OK(T->copy_h2d_pinned(k.rt, d2, 0, pin, 0, bytes));
  RT_OK(T->graph_end(k.rt, &g));
  RT_OK(T->graph_launch(k.rt, g)); /* a replay run to completion first */
  rt_sync(k.rt);
  download(k.rt, d, got, n);
  ck_assert(memcmp(got, want, bytes) == 0);
  uint64_t pending = rt_counters(k.rt).pending_retirements;
  rt_gate gate;
  rt_gate_close(&gate, k.rt);
  RT_OK(T->graph_launch(k.rt, g)); /* queued behind the gate */
  RT_OK(T->host_unregister(k.rt, reg));
  RT_OK(T->host_free(k.rt, pin));
  ck_assert_uint_eq(rt_counters(k.rt).pending_retirements, pending + 2);
  t4a_host_buffer again;
  void *pa;
  RT_OK(T->host_alloc(k.rt, bytes, 0, &again, &pa)); /* not the block the replay reads */
  ck_assert_ptr_ne(pa, pp);
  memset(pa, 0, bytes);
  rt_gate_open(&gate);
  rt_gate_free(&gate); /* seals and waits: both are due */
  ck_assert_uint_eq(rt_counters(k.rt).pending_retirements, pending);
  download(k.rt, d, got, n);
  ck_assert_msg(memcmp(got, want, bytes) == 0, "the replay read unregistered memory");
  download(k.rt, d2, got, n);
  ck_assert_msg(memcmp(got, want, bytes) == 0, "the replay read a reused pinned block");
  RT_EXPECT(T->graph_launch(k.rt, g), T4A_EHANDLE); /* what it uses is gone */
  RT_OK(T->graph_release(k.rt, g));
  RT_OK(T->host_free(k.rt, again));
  RT_OK(T->runtime_destroy(k.rt, T4A_WAIT_FOREVER));
  free(mine);
  free(want);
  free(got);
}
END_TEST

START_TEST(destroy_ends_a_capture_in_progress) {
  kit k = kit_make();
  t4a_buffer y;
  RT_OK(T->buffer_alloc(k.rt, 4096, &y));
  RT_OK(T->graph_begin(k.rt));
  step(&k, y, y, 1, 1024);
  RT_OK(T->runtime_destroy(k.rt, T4A_WAIT_FOREVER));
  if (rt_on_fake())
    ck_assert_uint_eq(fake_graph_stat("graph"), 0);
  /* and the next runtime (perhaps made of its parts) works normally */
  kit k2 = kit_make();
  ck_assert_uint_eq(runtime_info(k2.rt).capturing, 0);
  uint32_t v[256] = {0}, back[256];
  t4a_buffer b;
  RT_OK(T->buffer_alloc(k2.rt, sizeof v, &b));
  RT_OK(T->copy_h2d(k2.rt, b, 0, v, sizeof v));
  step(&k2, b, b, 5, 256); /* mix(0, 0, 5) is 5 too */
  download(k2.rt, b, back, 256);
  for (int i = 0; i < 256; i++)
    ck_assert_uint_eq(back[i], 5u);
  RT_OK(T->runtime_destroy(k2.rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(what_a_graph_uses_is_checked_at_each_replay) {
  kit k = kit_make();
  t4a_buffer a, b;
  t4a_host_buffer h;
  void *p;
  RT_OK(T->buffer_alloc(k.rt, 4096, &a));
  RT_OK(T->buffer_alloc(k.rt, 4096, &b));
  RT_OK(T->memset(k.rt, b, 0, 0x5a, 1, 4096)); /* defined bytes (the initcheck lane) */
  RT_OK(T->host_alloc(k.rt, 4096, 0, &h, &p));
  t4a_graph copies, kernels;
  RT_OK(T->graph_begin(k.rt));
  RT_OK(T->copy_d2d(k.rt, a, 0, b, 0, 4096));
  RT_OK(T->copy_d2h_pinned(k.rt, h, 0, a, 0, 4096));
  RT_OK(T->graph_end(k.rt, &copies));
  RT_OK(T->graph_begin(k.rt));
  step(&k, a, a, 1, 1024);
  RT_OK(T->graph_end(k.rt, &kernels));
  RT_OK(T->graph_launch(k.rt, copies));
  RT_OK(T->graph_launch(k.rt, kernels));
  rt_sync(k.rt);
  /* a host buffer freed after a replay is retired behind it, then the
   * graph refuses to replay */
  RT_OK(T->host_free(k.rt, h));
  RT_EXPECT(T->graph_launch(k.rt, copies), T4A_EHANDLE);
  RT_DETAIL(rt_on_host() ? "names a host buffer released since the capture"
                         : "a host buffer the graph uses was freed since the capture");
  RT_OK(T->buffer_free(k.rt, b));
  RT_EXPECT(T->graph_launch(k.rt, copies), T4A_EHANDLE);
  RT_DETAIL(rt_on_host() ? "names a buffer released since the capture"
                         : "a buffer the graph uses was freed");
  RT_OK(T->module_unload(k.rt, k.mod));
  RT_EXPECT(T->graph_launch(k.rt, kernels), T4A_EHANDLE);
  RT_DETAIL(rt_on_host() ? "names a function released since the capture"
                         : "a function the graph uses was unloaded with its module");
  /* nor does it take new arguments: the driver would see the unloaded
   * module's CUfunction (the model fuzzer found this: EDRIVER, and a
   * destroyed function passed to cuGraphExecKernelNodeSetParams) */
  uint64_t y = addr(k.rt, a), x = y, n = 1024;
  uint32_t key = 2;
  void *args[] = {&y, &x, &key, &n};
  RT_EXPECT(T->graph_set_kernel_args(k.rt, kernels, 0, args), T4A_EHANDLE);
  RT_DETAIL(rt_on_host() ? "graph_set_kernel_args: the graph names a function released"
                         : "graph_set_kernel_args: a function the graph uses was unloaded");
  /* handles and structs */
  t4a_graph null = {0}, forged = {kernels.bits ^ 0x5}, wrong = {a.bits};
  RT_EXPECT(T->graph_launch(k.rt, null), T4A_EINVAL);
  RT_EXPECT(T->graph_launch(k.rt, forged), T4A_EHANDLE);
  RT_EXPECT(T->graph_launch(k.rt, wrong), T4A_EHANDLE);
  RT_EXPECT(T->graph_end(k.rt, NULL), T4A_EINVAL);
  unsigned char raw[64];
  memset(raw, 0x5a, sizeof raw);
  t4a_graph_info *gi = (t4a_graph_info *)raw;
  gi->struct_size = T4A_GRAPH_INFO_V1_1_SIZE - 8;
  RT_EXPECT(T->graph_info(k.rt, kernels, gi), T4A_EINVAL);
  gi->struct_size = sizeof raw; /* a newer caller: what we know, and the size we wrote */
  RT_OK(T->graph_info(k.rt, kernels, gi));
  ck_assert_uint_eq(gi->struct_size, T4A_GRAPH_INFO_V1_1_SIZE);
  ck_assert_uint_eq(gi->kernels, 1);
  for (size_t i = T4A_GRAPH_INFO_V1_1_SIZE; i < sizeof raw; i++)
    ck_assert_uint_eq(raw[i], 0x5a);
  RT_OK(T->graph_release(k.rt, copies));
  RT_OK(T->graph_release(k.rt, kernels));
  RT_OK(T->runtime_destroy(k.rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- fault injection (fake driver) ----------------------------------------------------- */

START_TEST(graph_driver_failures_are_typed_and_leave_the_runtime_usable) {
  kit k = kit_make();
  t4a_buffer y;
  RT_OK(T->buffer_alloc(k.rt, 4096, &y));
  uint64_t py = addr(k.rt, y);
  t4a_graph g;
  fake_fail("cuStreamBeginCapture", 999);
  RT_EXPECT(T->graph_begin(k.rt), T4A_EDRIVER);
  ck_assert_uint_eq(runtime_info(k.rt).capturing, 0);
  rt_sync(k.rt); /* not capturing: seal works */

  fake_fail("cuGraphInstantiateWithFlags", 2);
  RT_OK(T->graph_begin(k.rt));
  launch_mix(&k, py, py, 1, 1024);
  RT_EXPECT(T->graph_end(k.rt, &g), T4A_ENOMEM);
  ck_assert(g.bits == 0);
  ck_assert_uint_eq(runtime_info(k.rt).capturing, 0);
  ck_assert_uint_eq(fake_graph_stat("graph"), 0);

  fake_fail("cuStreamGetCaptureInfo", 999); /* the launch cannot be recorded */
  RT_OK(T->graph_begin(k.rt));
  launch_mix(&k, py, py, 1, 1024);
  RT_EXPECT(T->graph_end(k.rt, &g), T4A_EDRIVER);
  RT_DETAIL("recording the captured work failed");
  ck_assert_uint_eq(fake_graph_stat("graph"), 0);

  fake_fail("cuStreamEndCapture", 999); /* still capturing: graph_end again */
  RT_OK(T->graph_begin(k.rt));
  launch_mix(&k, py, py, 1, 1024);
  RT_EXPECT(T->graph_end(k.rt, &g), T4A_EDRIVER);
  ck_assert_uint_eq(runtime_info(k.rt).capturing, 1);
  RT_OK(T->graph_end(k.rt, &g));

  fake_fail("cuGraphLaunch", 999);
  RT_EXPECT(T->graph_launch(k.rt, g), T4A_EDRIVER);
  ck_assert_uint_eq(graph_info(k.rt, g).replays, 0);
  RT_OK(T->graph_launch(k.rt, g));
  fake_fail("cuGraphExecKernelNodeSetParams", 999);
  uint64_t nn = 1024;
  uint32_t key = 3;
  void *args[] = {&py, &py, &key, &nn};
  RT_EXPECT(T->graph_set_kernel_args(k.rt, g, 0, args), T4A_EDRIVER);
  rt_sync(k.rt);
  fake_fail("cuGraphExecDestroy", 999); /* the executable is kept, the handle goes */
  RT_EXPECT(T->graph_release(k.rt, g), T4A_EDRIVER);
  RT_EXPECT(T->graph_launch(k.rt, g), T4A_EHANDLE);
  ck_assert_uint_eq(fake_graph_stat("exec"), 1);

  /* a device fault in a replay: sticky, and destroy quarantines */
  RT_OK(T->graph_begin(k.rt));
  launch_mix(&k, py, py, 1, 1024);
  RT_OK(T->graph_end(k.rt, &g));
  fake_fail("cuGraphLaunch", 700);
  RT_EXPECT(T->graph_launch(k.rt, g), T4A_EDEVICEFAULT);
  RT_EXPECT(T->graph_begin(k.rt), T4A_EDEVICEFAULT);
  RT_OK(T->graph_release(k.rt, g)); /* kept: quarantined with the runtime */
  ck_assert_uint_ge(rt_counters(k.rt).quarantined, 1);
  RT_EXPECT(T->runtime_destroy(k.rt, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
}
END_TEST

/* ---- the bound on a capture (fake driver, a test copy of the plugin) --------------------- */

/* tests/cpu/libt4a_cudacap.so is the plugin built with captures of at most
 * CAP_MAX entries per list (entry.c, T4A_TEST_CAPTURE_MAX) instead of 2^24,
 * so that the bound is reached in a few calls: the test's table becomes
 * that plugin's (rt_teardown closes it). */
#define CAP_MAX 4

static void use_the_capped_plugin(void) {
  t4a_gpu_close(B);
  B = NULL;
  ck_assert_int_eq(t4a_gpu_open_path(t4a_test_build_path("tests/cpu/.libs/libt4a_cudacap.so"), &B),
                   T4A_OK);
  T = t4a_gpu_backend_table(B);
  RT_OK(T->init());
}

/* Up to the bound a capture is a graph; one more launch, distinct buffer
 * or distinct host buffer is not recorded, every call still succeeds (the
 * work is in the driver's capture), and graph_end says why nothing is
 * returned (T4A_ENOMEM, "<what failed>; <what to do>"); the runtime stays
 * usable, and so does capturing. Before the bound a 32-bit capacity
 * doubled from 2^31 wrapped to 0 (issue #26, item 10). */
START_TEST(a_capture_records_at_most_its_bound) {
  use_the_capped_plugin();
  kit k = kit_make();
  t4a_buffer y[CAP_MAX + 1];
  t4a_host_buffer hb[CAP_MAX + 1];
  for (int i = 0; i <= CAP_MAX; i++) {
    void *p;
    RT_OK(T->buffer_alloc(k.rt, 4096, &y[i]));
    RT_OK(T->host_alloc(k.rt, 4096, 0, &hb[i], &p));
    memset(p, i, 4096);
  }
  uint64_t py = addr(k.rt, y[0]);
  t4a_graph g = {0};
  /* launches */
  RT_OK(T->graph_begin(k.rt));
  for (int i = 0; i < CAP_MAX; i++)
    launch_mix(&k, py, py, (uint32_t)i, 1024);
  RT_OK(T->graph_end(k.rt, &g));
  ck_assert_uint_eq(graph_info(k.rt, g).kernels, CAP_MAX);
  RT_OK(T->graph_launch(k.rt, g));
  rt_sync(k.rt);
  RT_OK(T->graph_release(k.rt, g));
  RT_OK(T->graph_begin(k.rt));
  for (int i = 0; i <= CAP_MAX; i++)
    launch_mix(&k, py, py, (uint32_t)i, 1024);
  RT_EXPECT(T->graph_end(k.rt, &g), T4A_ENOMEM);
  RT_DETAIL("recording the captured work failed: the capture holds 4 launches, the most one "
            "graph records; the capture is discarded, capture the work as several smaller graphs");
  ck_assert(g.bits == 0);
  ck_assert_uint_eq(runtime_info(k.rt).capturing, 0);
  ck_assert_uint_eq(fake_graph_stat("graph"), 0);
  /* distinct buffers (memsets): a buffer named again is not another */
  RT_OK(T->graph_begin(k.rt));
  for (int i = 0; i < CAP_MAX; i++)
    RT_OK(T->memset(k.rt, y[i], 0, 0x5a, 1, 4096));
  RT_OK(T->memset(k.rt, y[0], 0, 0xa5, 1, 4096));
  RT_OK(T->graph_end(k.rt, &g));
  ck_assert_uint_eq(graph_info(k.rt, g).copies, CAP_MAX + 1);
  RT_OK(T->graph_release(k.rt, g));
  RT_OK(T->graph_begin(k.rt));
  for (int i = 0; i <= CAP_MAX; i++)
    RT_OK(T->memset(k.rt, y[i], 0, 0x5a, 1, 4096));
  RT_EXPECT(T->graph_end(k.rt, &g), T4A_ENOMEM);
  RT_DETAIL("the capture holds 4 distinct buffers, the most one graph records");
  /* distinct host buffers (pinned copies into one buffer) */
  RT_OK(T->graph_begin(k.rt));
  for (int i = 0; i <= CAP_MAX; i++)
    RT_OK(T->copy_h2d_pinned(k.rt, y[0], 0, hb[i], 0, 4096));
  RT_EXPECT(T->graph_end(k.rt, &g), T4A_ENOMEM);
  RT_DETAIL("the capture holds 4 distinct host buffers, the most one graph records");
  ck_assert_uint_eq(fake_graph_stat("graph"), 0);
  /* the runtime, and capturing, still work */
  RT_OK(T->graph_begin(k.rt));
  RT_OK(T->copy_h2d_pinned(k.rt, y[0], 0, hb[3], 0, 4096));
  RT_OK(T->graph_end(k.rt, &g));
  RT_OK(T->graph_launch(k.rt, g));
  unsigned char back[4096];
  RT_OK(T->copy_d2h(k.rt, back, y[0], 0, sizeof back));
  for (size_t i = 0; i < sizeof back; i++)
    ck_assert_uint_eq(back[i], 3);
  RT_OK(T->graph_release(k.rt, g));
  for (int i = 0; i <= CAP_MAX; i++)
    RT_OK(T->host_free(k.rt, hb[i]));
  RT_OK(T->runtime_destroy(k.rt, T4A_WAIT_FOREVER));
}
END_TEST

static Suite *suite(void) {
  Suite *s = rt_suite("graph");
  TCase *tc = tcase_create("graph");
  tcase_set_timeout(tc, 300);
  tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
  tcase_add_test(tc, graph_replays_a_chain_of_kernels_and_copies);
  tcase_add_test(tc, graph_replays_a_chain_of_copies_and_memsets);
  tcase_add_test(tc, kernel_arguments_are_updated_without_reinstantiating);
  tcase_add_test(tc, capture_refuses_what_cannot_be_captured);
  tcase_add_test(tc, graph_released_while_a_replay_is_queued);
  tcase_add_test(tc, host_memory_a_queued_replay_uses_is_released_behind_it);
  tcase_add_test(tc, destroy_ends_a_capture_in_progress);
  tcase_add_test(tc, what_a_graph_uses_is_checked_at_each_replay);
  if (rt_on_fake()) { /* fault injection, driver variants, a test copy of the plugin: the fake's */
    tcase_add_test(tc, graph_driver_failures_are_typed_and_leave_the_runtime_usable);
    tcase_add_test(tc, a_capture_records_at_most_its_bound);
  }
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
#ifdef T4A_TEST_FAKE
  setenv("T4A_NVRTC_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_NVRTC), 1);
#endif
#ifndef T4A_TEST_HOST /* the host lane's tests share its run's cache (rt_suite) */
  setenv("T4A_CACHE_DIR", "", 1);
#endif
  return rt_run(suite(), 1);
}
