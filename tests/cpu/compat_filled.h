/* tests/cpu/compat_filled.h -- for the consumers built against a frozen ABI
 * header (test_compat_v10, test_compat_v11): FILLED_EXACTLY(type, call) passes
 * an info struct of the frozen size (p_, with poison behind it) to call and
 * checks that the newer plugin wrote no byte past it and said it filled all
 * of it. COMPAT_FROZEN names the frozen version in the messages ("v1.0"). */
#ifndef T4A_TESTS_CPU_COMPAT_FILLED_H
#define T4A_TESTS_CPU_COMPAT_FILLED_H

#include <string.h>

#define FILLED_EXACTLY(type, call_with_ptr)                                                        \
  do {                                                                                             \
    _Alignas(8) unsigned char raw_[sizeof(type) + 64];                                             \
    memset(raw_, 0xa5, sizeof raw_);                                                               \
    uint32_t size_ = sizeof(type);                                                                 \
    memcpy(raw_, &size_, sizeof size_);                                                            \
    type *p_ = (type *)(void *)raw_;                                                               \
    RT_OK(call_with_ptr);                                                                          \
    uint32_t got_;                                                                                 \
    memcpy(&got_, raw_, sizeof got_);                                                              \
    ck_assert_uint_eq(got_, sizeof(type));                                                         \
    for (size_t i_ = sizeof(type); i_ < sizeof raw_; i_++)                                         \
      ck_assert_msg(raw_[i_] == 0xa5, #type ": byte %zu written past its " COMPAT_FROZEN " size",  \
                    i_);                                                                           \
  } while (0)

#endif
