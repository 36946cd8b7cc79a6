// tests/abi/test_abi_cxx.cc -- the public headers compile as C++ with
// -Wall -Wextra -Werror -pedantic, and their C linkage and layout hold there.
#include <t4a/gpu_backend_v1.h>
#include <t4a/gpu_loader.h>

#include <cstdio>
#include <cstring>

static_assert(offsetof(t4a_gpu_backend_v1, abi_major) == 4, "same layout in C++");
static_assert(T4A_GPU_BACKEND_V1_2_SIZE == sizeof(t4a_gpu_backend_v1), "v1.2 size");
static_assert(T4A_GPU_BACKEND_V1_1_SIZE == T4A_GPU_BACKEND_V1_0_SIZE + 27 * sizeof(void *),
              "v1.1 size, frozen");
static_assert(T4A_GPU_BACKEND_V1_0_SIZE == 8 + 51 * sizeof(void *), "v1.0 size, frozen");
static_assert(sizeof(t4a_buffer) == 8, "handle size");

int main() {
  // A table pointer type and the entry signature are usable from C++.
  t4a_gpu_backend_v1_entry_fn entry = nullptr;
  const t4a_gpu_backend_v1 *table = nullptr;
  (void)entry;
  if (T4A_GPU_BACKEND_V1_HAS(table, init))
    return 1;
  if (std::strcmp(t4a_status_name(T4A_EABI), "T4A_EABI") != 0)
    return 1;
  t4a_runtime_options o{};
  o.struct_size = sizeof o;
  std::printf("C++ header check: %s, options %u bytes\n", t4a_status_message(T4A_OK),
              o.struct_size);
  return 0;
}
