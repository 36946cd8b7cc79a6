/* loader/info.c -- versions, status names, and the loader's last error. */
#include "config.h"

#include "common/error.h"
#include "loader/loader_internal.h"

const char *t4a_gpu_last_error(void) { return t4a__error_get()->message; }

const char *t4a_gpu_status_name(int status) { return t4a_status_name(status); }

const char *t4a_gpu_status_message(int status) { return t4a_status_message(status); }

void t4a_gpu_loader_version(int *major, int *minor, int *patch) {
  if (major)
    *major = T4A_LOADER_VERSION_MAJOR;
  if (minor)
    *minor = T4A_LOADER_VERSION_MINOR;
  if (patch)
    *patch = T4A_LOADER_VERSION_PATCH;
}

void t4a_gpu_loader_abi(int *major, int *minor) {
  if (major)
    *major = T4A_GPU_BACKEND_ABI_MAJOR;
  if (minor)
    *minor = T4A_GPU_BACKEND_ABI_MINOR;
}
