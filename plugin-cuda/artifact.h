/* plugin-cuda/artifact.h -- GPU code: artifacts and their caches are
 * backend-core's (artifact.h, diskcache.h); this plugin checks consumer
 * bytes (artifact.c) and compiles through NVRTC (compile.c). */
#ifndef T4A_PLUGIN_CUDA_ARTIFACT_H
#define T4A_PLUGIN_CUDA_ARTIFACT_H

#include "backend-core/artifact.h"
#include "backend-core/diskcache.h"
#include "plugin-cuda/backend.h"

#endif
