// examples/cpp/devices.cc -- a C++17 consumer: RAII over the loader and the
// v1 table, listing devices and round-tripping bytes through each one.
//
//   c++ -std=c++17 devices.cc $(pkg-config --cflags --libs t4a-gpu) -o devices
//
// Exit status, as t4a-gpu's: 0 every device round-tripped, 1 a call failed
// or the data is wrong, 2 usage error, 3 no backend found, 4 the backend
// cannot be used here (no driver or GPU; the reason is printed).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <t4a/gpu_loader.h>

namespace {

// A failed call: the status and the backend's "<what failed>; <what to do>".
struct Error : std::runtime_error {
  int status;
  Error(int s, const std::string &what) : std::runtime_error(what), status(s) {}
};

// One open backend; closed when it goes out of scope.
class Backend {
public:
  explicit Backend(const char *spec) {
    if (int rc = t4a_gpu_open(spec, &handle_))
      throw Error(rc, std::string("open: ") + t4a_gpu_last_error());
    table_ = t4a_gpu_backend_table(handle_);
    check(table_->init(), "init");
  }
  ~Backend() { t4a_gpu_close(handle_); }
  Backend(const Backend &) = delete;
  Backend &operator=(const Backend &) = delete;

  const t4a_gpu_backend_v1 &operator*() const { return *table_; }
  const t4a_gpu_backend_v1 *operator->() const { return table_; }

  void check(int rc, const char *what) const {
    if (rc == T4A_OK)
      return;
    t4a_error_info e{};
    e.struct_size = sizeof e;
    table_->last_error(&e);
    throw Error(rc, std::string(what) + ": " + t4a_status_name(rc) + ": " +
                        (e.message ? e.message : ""));
  }

private:
  t4a_gpu_backend *handle_ = nullptr;
  const t4a_gpu_backend_v1 *table_ = nullptr;
};

// One runtime (stream + pool) on one device; destroyed at scope exit.
class Runtime {
public:
  Runtime(const Backend &b, int32_t device) : b_(b) {
    b_.check(b_->runtime_create(device, nullptr, &rt_), "runtime_create");
  }
  ~Runtime() { b_->runtime_destroy(rt_, T4A_WAIT_FOREVER); }
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;

  // Host -> device -> device -> host; returns what came back.
  std::vector<unsigned char> round_trip(const std::vector<unsigned char> &data) {
    t4a_buffer a{}, c{};
    b_.check(b_->buffer_alloc(rt_, data.size(), &a), "buffer_alloc");
    b_.check(b_->buffer_alloc(rt_, data.size(), &c), "buffer_alloc");
    std::vector<unsigned char> back(data.size(), 0xee);
    b_.check(b_->copy_h2d(rt_, a, 0, data.data(), data.size()), "copy_h2d");
    b_.check(b_->copy_d2d(rt_, c, 0, a, 0, data.size()), "copy_d2d");
    b_.check(b_->copy_d2h(rt_, back.data(), c, 0, back.size()), "copy_d2h");
    b_.check(b_->buffer_free(rt_, a), "buffer_free");
    b_.check(b_->buffer_free(rt_, c), "buffer_free");
    return back;
  }

private:
  const Backend &b_;
  t4a_runtime rt_{};
};

void usage(std::FILE *f) {
  std::fputs("usage: devices [--help]\n"
             "Lists the default backend's devices and round-trips 3 MiB through each.\n"
             "exit status: 0 every device round-tripped, 1 a call failed or the data is wrong,\n"
             "             2 usage error, 3 no backend found, 4 the backend cannot be used here\n"
             "             (reason printed)\n",
             f);
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1) {
    bool help = std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0;
    if (help && argc == 2) {
      usage(stdout);
      return 0;
    }
    std::fprintf(stderr, "devices: unexpected argument '%s'\n", argv[help ? 2 : 1]);
    usage(stderr);
    return 2;
  }
  try {
    Backend backend(nullptr); // $T4A_GPU_BACKEND, else "cuda"
    int32_t count = 0;
    backend.check(backend->device_count(&count), "device_count");
    std::vector<unsigned char> data(3u << 20);
    uint32_t x = 12345;
    for (auto &byte : data) {
      x = x * 1664525u + 1013904223u;
      byte = static_cast<unsigned char>(x >> 24);
    }
    int wrong = 0;
    for (int32_t d = 0; d < count; d++) {
      t4a_device_info info{};
      info.struct_size = sizeof info;
      backend.check(backend->device_info(d, &info), "device_info");
      Runtime rt(backend, d);
      bool same = rt.round_trip(data) == data;
      wrong += !same;
      std::printf("device %d: %s, compute capability %d.%d, %.1f GiB: round trip of %zu bytes %s\n",
                  static_cast<int>(d), info.name, static_cast<int>(info.cc_major),
                  static_cast<int>(info.cc_minor),
                  static_cast<double>(info.total_memory) / (1024.0 * 1024 * 1024), data.size(),
                  same ? "exact" : "WRONG");
    }
    return wrong ? 1 : 0;
  } catch (const Error &e) {
    std::fprintf(stderr, "devices: %s\n", e.what());
    bool unusable = e.status == T4A_ENODRIVER || e.status == T4A_ESTUBDRIVER ||
                    e.status == T4A_ENODEVICE || e.status == T4A_EDRIVEROLD ||
                    e.status == T4A_EDRIVERMISMATCH;
    return e.status == T4A_ENOBACKEND || e.status == T4A_EABI ? 3 : unusable ? 4 : 1;
  }
}
