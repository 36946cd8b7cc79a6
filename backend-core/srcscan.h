/* backend-core/srcscan.h -- what keeps a compile out of the caches: the
 * files a compiler may read besides the source are not in the caches' key,
 * so a request that could make it read one is compiled every time. Shared
 * by the plugins' compiles (NVRTC, the host C++ compiler). */
#ifndef T4A_CORE_SRCSCAN_H
#define T4A_CORE_SRCSCAN_H

#include <stdint.h>

#include "t4a/gpu_backend_v1.h"

/* Why this compile (o's options and the first size bytes of its source)
 * must not be cached, or NULL when it may be: an option naming include
 * directories, pre-included or precompiled headers; "include" anywhere but
 * in a plain `#include <relative/name>` line; import or embed as a word;
 * __DATE__, __TIME__ or __TIMESTAMP__. */
const char *t4a__compile_reads_files(const t4a_compile_options *o, uint64_t size);

#endif
