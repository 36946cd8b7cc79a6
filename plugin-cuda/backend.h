/* plugin-cuda/backend.h -- process-wide state of the CUDA plugin: the loaded
 * driver, its resolved entry points, the devices, and the compiler. */
#ifndef T4A_PLUGIN_CUDA_BACKEND_H
#define T4A_PLUGIN_CUDA_BACKEND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "common/error.h"
#include "backend-core/fork.h"
#include "backend-core/structs.h"
#include "plugin-cuda/cuda_decls.h"
#include "t4a/gpu_backend_v1.h"

#define T4A__CUDA_MIN_DRIVER 12000

/* One device, as discovered at init. */
typedef struct t4a__device {
  t4a__CUdevice dev;
  t4a_device_info info;
  /* A sticky fault seen by any runtime on this device: the primary context
   * all of them share is unusable (CUresult, 0 = none). */
  atomic_uint fault;
  /* v1.1: launch_ex's capabilities (false when the driver cannot say) */
  bool cooperative; /* CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH */
  bool clusters;    /* CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH */
} t4a__device;

/* T4A__INIT_FORKED: set in a forked child (fork.h), so the gate's fast
 * path (READY) fails there at no cost. */
enum t4a__init_state {
  T4A__INIT_NONE = 0,
  T4A__INIT_READY = 1,
  T4A__INIT_FAILED = 2,
  T4A__INIT_FORKED = 3
};

typedef struct t4a__backend {
  atomic_int state;      /* enum t4a__init_state */
  pthread_mutex_t lock;  /* serialises init and compiler loading */
  t4a__error init_error; /* the failure, replayed to later callers */
  void *dl;              /* libcuda, kept loaded once cuInit succeeded */
  char driver_path[256];
  int driver_version;
  t4a__cuda_api cu;
  bool has_peer; /* optional peer entry points present */
  int device_count;
  t4a__device *devices;
  /* Peer access by ordered device pair [to * count + from]: 0 not tried,
   * 1 enabled, else the T4A_E* status of the failed attempt. */
  pthread_mutex_t peer_lock;
  int *peer_state;
} t4a__backend;

extern t4a__backend t4a__be;

/* T4A_OK when init succeeded; else T4A_ENOTINIT with a detail (naming the
 * init failure when there was one), or T4A_EFORKED in a forked child. */
int t4a__require_init(void);

/* The fork hook (fork.h): the gate fails in a forked child. */
void t4a__backend_forked(void);

/* Records a failed driver call: maps r to a status (see errors.c), names the
 * native error, and formats "<what>; <todo>". Returns the status. */
int t4a__cu_record(t4a__CUresult r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A failure status is never T4A_OK (for static analysis: see error.h). */
static inline int t4a__failed(int status) { return status ? status : T4A_EINTERNAL; }
#define t4a__cu_fail(r, ...) t4a__failed(t4a__cu_record((r), __VA_ARGS__))

/* The t4a status for a CUresult (T4A_OK for CUDA_SUCCESS). */
int t4a__cu_status(t4a__CUresult r);

/* Whether r is a sticky device fault (the context is unusable). */
bool t4a__cu_is_fault(t4a__CUresult r);

/* The driver's name for r ("CUDA_ERROR_OUT_OF_MEMORY"), or "CUDA_ERROR_<n>". */
const char *t4a__cu_name(t4a__CUresult r, char *buf, size_t size);

/* Plugin teardown: frees the devices' bookkeeping (backend.c). */
void t4a__backend_unload(void);

/* Fills t4a__be.devices (device.c); called once by init. */
int t4a__devices_discover(void);

/* Enables direct access from device `to` to device `from`'s memory once per
 * ordered pair (remembered, failures included); ctx_to and ctx_from are the
 * devices' primary contexts. T4A_EUNSUPPORTED with the reason when
 * impossible. */
int t4a__peer_enable(int32_t to, int32_t from, t4a__CUcontext ctx_to, t4a__CUcontext ctx_from);

/* Validates a device ordinal against the discovered devices. */
int t4a__check_ordinal(int32_t ordinal, const char *what);

#endif
