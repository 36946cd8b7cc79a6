/* plugin-cuda/nvrtc.h -- NVRTC, loaded lazily on first use. */
#ifndef T4A_PLUGIN_CUDA_NVRTC_H
#define T4A_PLUGIN_CUDA_NVRTC_H

#include "plugin-cuda/cuda_decls.h"

typedef struct t4a__nvrtc {
  t4a__nvrtc_api fn;
  int major, minor; /* nvrtcVersion */
  char path[256];
} t4a__nvrtc;

/* Loads NVRTC once (thread-safe) and returns it; NULL with
 * T4A_ENOCOMPILER recorded when it is unavailable. The failure is final. */
const t4a__nvrtc *t4a__nvrtc_get(void);

#endif
