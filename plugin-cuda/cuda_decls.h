/* plugin-cuda/cuda_decls.h -- the plugin's own declarations of the CUDA
 * Driver API and NVRTC subset it uses.
 *
 * The plugin never includes cuda.h or nvrtc.h: it builds on hosts without
 * CUDA and loads both libraries at run time. Names carry a t4a__ prefix so
 * that tests/cpu/test_decls.c can include these next to the real headers and
 * check every constant, struct layout and function signature against them.
 *
 * Signatures are those of CUDA 12.0; the driver hands out exactly these
 * variants because every symbol is resolved with cudaVersion 12000 (see
 * driver.c). Enumerations are unsigned int, as GCC lays out the real ones. */
#ifndef T4A_PLUGIN_CUDA_DECLS_H
#define T4A_PLUGIN_CUDA_DECLS_H

#include <stddef.h>
#include <stdint.h>

/* ---- types ------------------------------------------------------------- */
typedef unsigned int t4a__CUresult;
typedef int t4a__CUdevice;
typedef unsigned long long t4a__CUdeviceptr;
typedef uint64_t t4a__cuuint64_t;
typedef struct CUctx_st *t4a__CUcontext;
typedef struct CUstream_st *t4a__CUstream;
typedef struct CUevent_st *t4a__CUevent;
typedef struct CUmod_st *t4a__CUmodule;
typedef struct CUfunc_st *t4a__CUfunction;
typedef struct CUmemPoolHandle_st *t4a__CUmemoryPool;
typedef unsigned int t4a__CUdevice_attribute;
typedef unsigned int t4a__CUfunction_attribute;
typedef unsigned int t4a__CUmemPool_attribute;
typedef unsigned int t4a__CUdriverProcAddressQueryResult;
typedef unsigned int t4a__CUjit_option;
typedef struct CUgraph_st *t4a__CUgraph;
typedef struct CUgraphExec_st *t4a__CUgraphExec;
typedef struct CUgraphNode_st *t4a__CUgraphNode;
typedef size_t (*t4a__CUoccupancyB2DSize)(int block_size);
typedef unsigned int t4a__CUpointer_attribute;
typedef unsigned int t4a__CUmemAllocationHandleType;

/* Structs the driver API takes. Their fields are spelled once, in macros, so
 * that tests/cpu/test_decls.c can lay them out beside cuda.h's. The tags are
 * cuda.h's own: where cuda.h is included first, its definitions are used. */
#define T4A__CUUUID_FIELDS char bytes[16];
#define T4A__CUMEMLOCATION_FIELDS                                                                  \
  unsigned int type; /* CUmemLocationType */                                                       \
  int id;
#define T4A__CUMEMPOOLPROPS_FIELDS                                                                 \
  unsigned int allocType;   /* CUmemAllocationType */                                              \
  unsigned int handleTypes; /* CUmemAllocationHandleType */                                        \
  struct CUmemLocation_st location;                                                                \
  void *win32SecurityAttributes;                                                                   \
  size_t maxSize;                                                                                  \
  unsigned short usage;                                                                            \
  unsigned char reserved[54];
#define T4A__CUMEMACCESSDESC_FIELDS                                                                \
  struct CUmemLocation_st location;                                                                \
  unsigned int flags; /* CUmemAccess_flags */
#define T4A__CUDA_MEMCPY2D_FIELDS                                                                  \
  size_t srcXInBytes, srcY;                                                                        \
  unsigned int srcMemoryType; /* CUmemorytype */                                                   \
  const void *srcHost;                                                                             \
  t4a__CUdeviceptr srcDevice;                                                                      \
  void *srcArray; /* CUarray */                                                                    \
  size_t srcPitch;                                                                                 \
  size_t dstXInBytes, dstY;                                                                        \
  unsigned int dstMemoryType;                                                                      \
  void *dstHost;                                                                                   \
  t4a__CUdeviceptr dstDevice;                                                                      \
  void *dstArray;                                                                                  \
  size_t dstPitch;                                                                                 \
  size_t WidthInBytes;                                                                             \
  size_t Height;
/* The members of CUlaunchAttributeValue we use; the padding and the 8-byte
 * member give it cuda.h's size and alignment (it holds pointers there). */
#define T4A__CULAUNCHATTRIBUTEVALUE_FIELDS                                                         \
  char pad[64];                                                                                    \
  t4a__cuuint64_t align8;                                                                          \
  int cooperative;                                                                                 \
  struct {                                                                                         \
    unsigned int x, y, z;                                                                          \
  } clusterDim;                                                                                    \
  int priority;
#define T4A__CULAUNCHATTRIBUTE_FIELDS                                                              \
  unsigned int id; /* CUlaunchAttributeID */                                                       \
  char pad[4];                                                                                     \
  union CUlaunchAttributeValue_union value;
#define T4A__CULAUNCHCONFIG_FIELDS                                                                 \
  unsigned int gridDimX, gridDimY, gridDimZ;                                                       \
  unsigned int blockDimX, blockDimY, blockDimZ;                                                    \
  unsigned int sharedMemBytes;                                                                     \
  t4a__CUstream hStream;                                                                           \
  struct CUlaunchAttribute_st *attrs;                                                              \
  unsigned int numAttrs;
/* ABI 1.2 IPC: an interprocess event's handle, a pool pointer's export. */
#define T4A__CUIPCEVENTHANDLE_FIELDS char reserved[64];
#define T4A__CUMEMPOOLPTREXPORTDATA_FIELDS unsigned char reserved[64];
/* CUDA_KERNEL_NODE_PARAMS as of CUDA 12.0 (_v2: kern and ctx appended). */
#define T4A__CUDA_KERNEL_NODE_PARAMS_FIELDS                                                        \
  t4a__CUfunction func;                                                                            \
  unsigned int gridDimX, gridDimY, gridDimZ;                                                       \
  unsigned int blockDimX, blockDimY, blockDimZ;                                                    \
  unsigned int sharedMemBytes;                                                                     \
  void **kernelParams;                                                                             \
  void **extra;                                                                                    \
  void *kern; /* CUkernel */                                                                       \
  t4a__CUcontext ctx;

#ifndef __cuda_cuda_h__
struct CUuuid_st {
  T4A__CUUUID_FIELDS
};
struct CUmemLocation_st {
  T4A__CUMEMLOCATION_FIELDS
};
struct CUmemPoolProps_st {
  T4A__CUMEMPOOLPROPS_FIELDS
};
struct CUmemAccessDesc_st {
  T4A__CUMEMACCESSDESC_FIELDS
};
struct CUDA_MEMCPY2D_st {
  T4A__CUDA_MEMCPY2D_FIELDS
};
union CUlaunchAttributeValue_union {
  T4A__CULAUNCHATTRIBUTEVALUE_FIELDS
};
struct CUlaunchAttribute_st {
  T4A__CULAUNCHATTRIBUTE_FIELDS
};
struct CUlaunchConfig_st {
  T4A__CULAUNCHCONFIG_FIELDS
};
struct CUDA_KERNEL_NODE_PARAMS_v2_st {
  T4A__CUDA_KERNEL_NODE_PARAMS_FIELDS
};
struct CUipcEventHandle_st {
  T4A__CUIPCEVENTHANDLE_FIELDS
};
struct CUmemPoolPtrExportData_st {
  T4A__CUMEMPOOLPTREXPORTDATA_FIELDS
};
#endif
typedef struct CUuuid_st t4a__CUuuid;
typedef struct CUmemLocation_st t4a__CUmemLocation;
typedef struct CUmemPoolProps_st t4a__CUmemPoolProps;
typedef struct CUmemAccessDesc_st t4a__CUmemAccessDesc;
typedef struct CUDA_MEMCPY2D_st t4a__CUDA_MEMCPY2D;
typedef struct CUlaunchAttribute_st t4a__CUlaunchAttribute;
typedef struct CUlaunchConfig_st t4a__CUlaunchConfig;
typedef struct CUDA_KERNEL_NODE_PARAMS_v2_st t4a__CUDA_KERNEL_NODE_PARAMS;
typedef struct CUipcEventHandle_st t4a__CUipcEventHandle;
typedef struct CUmemPoolPtrExportData_st t4a__CUmemPoolPtrExportData;

/* ---- constants (checked against cuda.h by tests/cpu/test_decls.c) ------ */
#define T4A__CUDA_DECL_CONSTANTS(X)                                                                \
  X(CUDA_SUCCESS, 0)                                                                               \
  X(CUDA_ERROR_INVALID_VALUE, 1)                                                                   \
  X(CUDA_ERROR_OUT_OF_MEMORY, 2)                                                                   \
  X(CUDA_ERROR_NOT_INITIALIZED, 3)                                                                 \
  X(CUDA_ERROR_DEINITIALIZED, 4)                                                                   \
  X(CUDA_ERROR_STUB_LIBRARY, 34)                                                                   \
  X(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, 36)                                                     \
  X(CUDA_ERROR_DEVICE_UNAVAILABLE, 46)                                                             \
  X(CUDA_ERROR_NO_DEVICE, 100)                                                                     \
  X(CUDA_ERROR_INVALID_DEVICE, 101)                                                                \
  X(CUDA_ERROR_INVALID_IMAGE, 200)                                                                 \
  X(CUDA_ERROR_INVALID_CONTEXT, 201)                                                               \
  X(CUDA_ERROR_NO_BINARY_FOR_GPU, 209)                                                             \
  X(CUDA_ERROR_ECC_UNCORRECTABLE, 214)                                                             \
  X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, 217)                                                       \
  X(CUDA_ERROR_INVALID_PTX, 218)                                                                   \
  X(CUDA_ERROR_NVLINK_UNCORRECTABLE, 220)                                                          \
  X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222)                                                       \
  X(CUDA_ERROR_INVALID_HANDLE, 400)                                                                \
  X(CUDA_ERROR_NOT_FOUND, 500)                                                                     \
  X(CUDA_ERROR_NOT_READY, 600)                                                                     \
  X(CUDA_ERROR_ILLEGAL_ADDRESS, 700)                                                               \
  X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 701)                                                       \
  X(CUDA_ERROR_LAUNCH_TIMEOUT, 702)                                                                \
  X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, 704)                                                   \
  X(CUDA_ERROR_CONTEXT_IS_DESTROYED, 709)                                                          \
  X(CUDA_ERROR_ASSERT, 710)                                                                        \
  X(CUDA_ERROR_TOO_MANY_PEERS, 711)                                                                \
  X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, 712)                                                \
  X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, 713)                                                    \
  X(CUDA_ERROR_HARDWARE_STACK_ERROR, 714)                                                          \
  X(CUDA_ERROR_ILLEGAL_INSTRUCTION, 715)                                                           \
  X(CUDA_ERROR_MISALIGNED_ADDRESS, 716)                                                            \
  X(CUDA_ERROR_INVALID_ADDRESS_SPACE, 717)                                                         \
  X(CUDA_ERROR_INVALID_PC, 718)                                                                    \
  X(CUDA_ERROR_LAUNCH_FAILED, 719)                                                                 \
  X(CUDA_ERROR_NOT_PERMITTED, 800)                                                                 \
  X(CUDA_ERROR_NOT_SUPPORTED, 801)                                                                 \
  X(CUDA_ERROR_SYSTEM_NOT_READY, 802)                                                              \
  X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, 803)                                                        \
  X(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, 804)                                                \
  X(CUDA_ERROR_TIMEOUT, 909)                                                                       \
  X(CUDA_ERROR_UNKNOWN, 999)                                                                       \
  X(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1)                                                  \
  X(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 2)                                                        \
  X(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 3)                                                        \
  X(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 4)                                                        \
  X(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 5)                                                         \
  X(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 6)                                                         \
  X(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 7)                                                         \
  X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 8)                                            \
  X(CU_DEVICE_ATTRIBUTE_WARP_SIZE, 10)                                                             \
  X(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 16)                                                  \
  X(CU_DEVICE_ATTRIBUTE_INTEGRATED, 18)                                                            \
  X(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 41)                                                    \
  X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 75)                                              \
  X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 76)                                              \
  X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 97)                                     \
  X(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 115)                                               \
  X(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0)                                                    \
  X(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, 1)                                                        \
  X(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, 3)                                                         \
  X(CU_FUNC_ATTRIBUTE_NUM_REGS, 4)                                                                 \
  X(CU_FUNC_ATTRIBUTE_PTX_VERSION, 5)                                                              \
  X(CU_FUNC_ATTRIBUTE_BINARY_VERSION, 6)                                                           \
  X(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 8)                                            \
  X(CU_STREAM_NON_BLOCKING, 1)                                                                     \
  X(CU_EVENT_DISABLE_TIMING, 2)                                                                    \
  X(CU_MEMHOSTALLOC_PORTABLE, 1)                                                                   \
  X(CU_MEMHOSTALLOC_WRITECOMBINED, 4)                                                              \
  X(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 4)                                                          \
  X(CU_MEM_ALLOCATION_TYPE_PINNED, 1)                                                              \
  X(CU_MEM_HANDLE_TYPE_NONE, 0)                                                                    \
  X(CU_MEM_LOCATION_TYPE_DEVICE, 1)                                                                \
  X(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, 3)                                                         \
  X(CU_GET_PROC_ADDRESS_DEFAULT, 0)                                                                \
  X(CU_GET_PROC_ADDRESS_SUCCESS, 0)                                                                \
  X(CU_DEVICE_ATTRIBUTE_MAX_PITCH, 11)                                                             \
  X(CU_MEMORYTYPE_HOST, 1)                                                                         \
  X(CU_MEMORYTYPE_DEVICE, 2)                                                                       \
  X(CU_MEMHOSTREGISTER_PORTABLE, 1)                                                                \
  X(CU_MEMHOSTREGISTER_READ_ONLY, 8)                                                               \
  X(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, 5)                                                       \
  X(CU_MEMPOOL_ATTR_USED_MEM_CURRENT, 7)                                                           \
  X(CU_MEMPOOL_ATTR_USED_MEM_HIGH, 8)                                                              \
  X(CU_EVENT_DEFAULT, 0)                                                                           \
  X(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, 720)                                                  \
  X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 900)                                                    \
  X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, 901)                                                    \
  X(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, 905)                                                      \
  X(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, 910)                                                     \
  X(CUDA_ERROR_INVALID_CLUSTER_SIZE, 912)                                                          \
  X(CU_STREAM_CAPTURE_MODE_RELAXED, 2)                                                             \
  X(CU_STREAM_CAPTURE_STATUS_NONE, 0)                                                              \
  X(CU_STREAM_CAPTURE_STATUS_ACTIVE, 1)                                                            \
  X(CU_LAUNCH_ATTRIBUTE_COOPERATIVE, 2)                                                            \
  X(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, 4)                                                      \
  X(CU_LAUNCH_ATTRIBUTE_PRIORITY, 8)                                                               \
  X(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 39)                                        \
  X(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 95)                                                    \
  X(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 106)                                        \
  X(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 120)                                                       \
  X(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 14)                                       \
  X(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, 2)                                                           \
  X(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, 3)                                                        \
  X(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, 9)                                                        \
  X(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, 11)                                                     \
  X(CU_POINTER_ATTRIBUTE_RANGE_SIZE, 12)                                                           \
  X(CU_EVENT_INTERPROCESS, 4)                                                                      \
  X(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1)                                                   \
  X(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, 119)

enum {
#define T4A__DECL_CONST(name, value) T4A__##name = value,
  T4A__CUDA_DECL_CONSTANTS(T4A__DECL_CONST)
#undef T4A__DECL_CONST
};

/* The CUDA version whose signatures these declarations follow. */
#define T4A__CUDA_API_VERSION 12000

/* ---- driver entry points ------------------------------------------------
 * X(name, versioned symbol for dlsym, required, (parameters)).
 * required: 1 = init fails ("driver too old") without it; 0 = only the
 * feature that needs it is unavailable. */
#define T4A__CUDA_FUNCS(X)                                                                         \
  X(cuGetErrorName, "cuGetErrorName", 1, (t4a__CUresult e, const char **s))                        \
  X(cuGetErrorString, "cuGetErrorString", 1, (t4a__CUresult e, const char **s))                    \
  X(cuDeviceGetCount, "cuDeviceGetCount", 1, (int *count))                                         \
  X(cuDeviceGet, "cuDeviceGet", 1, (t4a__CUdevice * d, int ordinal))                               \
  X(cuDeviceGetName, "cuDeviceGetName", 1, (char *name, int len, t4a__CUdevice d))                 \
  X(cuDeviceGetUuid, "cuDeviceGetUuid_v2", 1, (t4a__CUuuid * uuid, t4a__CUdevice d))               \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", 1, (size_t * bytes, t4a__CUdevice d))                 \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", 1,                                               \
    (int *v, t4a__CUdevice_attribute a, t4a__CUdevice d))                                          \
  X(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId", 1, (char *id, int len, t4a__CUdevice d))           \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 1,                                       \
    (t4a__CUcontext * ctx, t4a__CUdevice d))                                                       \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", 1, (t4a__CUdevice d))               \
  X(cuCtxGetCurrent, "cuCtxGetCurrent", 1, (t4a__CUcontext * ctx))                                 \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", 1, (t4a__CUcontext ctx))                                   \
  X(cuStreamCreate, "cuStreamCreate", 1, (t4a__CUstream * s, unsigned int flags))                  \
  X(cuStreamDestroy, "cuStreamDestroy_v2", 1, (t4a__CUstream s))                                   \
  X(cuStreamSynchronize, "cuStreamSynchronize", 1, (t4a__CUstream s))                              \
  X(cuStreamQuery, "cuStreamQuery", 1, (t4a__CUstream s))                                          \
  X(cuStreamWaitEvent, "cuStreamWaitEvent", 1,                                                     \
    (t4a__CUstream s, t4a__CUevent e, unsigned int flags))                                         \
  X(cuEventCreate, "cuEventCreate", 1, (t4a__CUevent * e, unsigned int flags))                     \
  X(cuEventDestroy, "cuEventDestroy_v2", 1, (t4a__CUevent e))                                      \
  X(cuEventRecord, "cuEventRecord", 1, (t4a__CUevent e, t4a__CUstream s))                          \
  X(cuEventQuery, "cuEventQuery", 1, (t4a__CUevent e))                                             \
  X(cuEventSynchronize, "cuEventSynchronize", 1, (t4a__CUevent e))                                 \
  X(cuMemPoolCreate, "cuMemPoolCreate", 1,                                                         \
    (t4a__CUmemoryPool * pool, const t4a__CUmemPoolProps *props))                                  \
  X(cuMemPoolDestroy, "cuMemPoolDestroy", 1, (t4a__CUmemoryPool pool))                             \
  X(cuMemPoolSetAttribute, "cuMemPoolSetAttribute", 1,                                             \
    (t4a__CUmemoryPool pool, t4a__CUmemPool_attribute a, void *v))                                 \
  X(cuMemPoolTrimTo, "cuMemPoolTrimTo", 1, (t4a__CUmemoryPool pool, size_t keep))                  \
  X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 1,                                         \
    (t4a__CUdeviceptr * p, size_t bytes, t4a__CUmemoryPool pool, t4a__CUstream s))                 \
  X(cuMemFreeAsync, "cuMemFreeAsync", 1, (t4a__CUdeviceptr p, t4a__CUstream s))                    \
  X(cuMemHostAlloc, "cuMemHostAlloc", 1, (void **p, size_t bytes, unsigned int flags))             \
  X(cuMemFreeHost, "cuMemFreeHost", 1, (void *p))                                                  \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", 1,                                                  \
    (t4a__CUdeviceptr dst, const void *src, size_t bytes, t4a__CUstream s))                        \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", 1,                                                  \
    (void *dst, t4a__CUdeviceptr src, size_t bytes, t4a__CUstream s))                              \
  X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", 1,                                                  \
    (t4a__CUdeviceptr dst, t4a__CUdeviceptr src, size_t bytes, t4a__CUstream s))                   \
  X(cuMemsetD8Async, "cuMemsetD8Async", 1,                                                         \
    (t4a__CUdeviceptr dst, unsigned char v, size_t n, t4a__CUstream s))                            \
  X(cuModuleLoadData, "cuModuleLoadData", 1, (t4a__CUmodule * m, const void *image))               \
  X(cuModuleUnload, "cuModuleUnload", 1, (t4a__CUmodule m))                                        \
  X(cuModuleGetFunction, "cuModuleGetFunction", 1,                                                 \
    (t4a__CUfunction * f, t4a__CUmodule m, const char *name))                                      \
  X(cuFuncGetAttribute, "cuFuncGetAttribute", 1,                                                   \
    (int *v, t4a__CUfunction_attribute a, t4a__CUfunction f))                                      \
  X(cuFuncSetAttribute, "cuFuncSetAttribute", 1,                                                   \
    (t4a__CUfunction f, t4a__CUfunction_attribute a, int v))                                       \
  X(cuLaunchKernel, "cuLaunchKernel", 1,                                                           \
    (t4a__CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,        \
     unsigned int by, unsigned int bz, unsigned int shared, t4a__CUstream s, void **params,        \
     void **extra))                                                                                \
  X(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer", 0,                                             \
    (int *can, t4a__CUdevice d, t4a__CUdevice peer))                                               \
  X(cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess", 0, (t4a__CUcontext peer, unsigned int flags))  \
  X(cuMemPoolSetAccess, "cuMemPoolSetAccess", 0,                                                   \
    (t4a__CUmemoryPool pool, const t4a__CUmemAccessDesc *map, size_t count))                       \
  X(cuMemcpyPeerAsync, "cuMemcpyPeerAsync", 0,                                                     \
    (t4a__CUdeviceptr dst, t4a__CUcontext dctx, t4a__CUdeviceptr src, t4a__CUcontext sctx,         \
     size_t bytes, t4a__CUstream s))                                                               \
  /* ABI 1.1: optional, a slot needing one says T4A_EUNSUPPORTED without it */                     \
  X(cuMemsetD16Async, "cuMemsetD16Async", 0,                                                       \
    (t4a__CUdeviceptr dst, unsigned short v, size_t n, t4a__CUstream s))                           \
  X(cuMemsetD32Async, "cuMemsetD32Async", 0,                                                       \
    (t4a__CUdeviceptr dst, unsigned int v, size_t n, t4a__CUstream s))                             \
  X(cuMemcpy2DAsync, "cuMemcpy2DAsync_v2", 0, (const t4a__CUDA_MEMCPY2D *c, t4a__CUstream s))      \
  X(cuMemGetInfo, "cuMemGetInfo_v2", 0, (size_t * free, size_t * total))                           \
  X(cuMemPoolGetAttribute, "cuMemPoolGetAttribute", 0,                                             \
    (t4a__CUmemoryPool pool, t4a__CUmemPool_attribute a, void *v))                                 \
  X(cuMemHostRegister, "cuMemHostRegister_v2", 0, (void *p, size_t bytes, unsigned int flags))     \
  X(cuMemHostUnregister, "cuMemHostUnregister", 0, (void *p))                                      \
  X(cuEventElapsedTime, "cuEventElapsedTime_v2", 0,                                                \
    (float *ms, t4a__CUevent start, t4a__CUevent end))                                             \
  /* ABI 1.1, execution and graphs: optional likewise */                                           \
  X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", 0, (t4a__CUstream s, unsigned int mode))      \
  X(cuStreamEndCapture, "cuStreamEndCapture", 0, (t4a__CUstream s, t4a__CUgraph * g))              \
  X(cuStreamGetCaptureInfo, "cuStreamGetCaptureInfo_v2", 0,                                        \
    (t4a__CUstream s, unsigned int *status, t4a__cuuint64_t *id, t4a__CUgraph *g,                  \
     const t4a__CUgraphNode **deps, size_t *count))                                                \
  X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 0,                                 \
    (t4a__CUgraphExec * e, t4a__CUgraph g, unsigned long long flags))                              \
  X(cuGraphLaunch, "cuGraphLaunch", 0, (t4a__CUgraphExec e, t4a__CUstream s))                      \
  X(cuGraphExecDestroy, "cuGraphExecDestroy", 0, (t4a__CUgraphExec e))                             \
  X(cuGraphDestroy, "cuGraphDestroy", 0, (t4a__CUgraph g))                                         \
  X(cuGraphGetNodes, "cuGraphGetNodes", 0, (t4a__CUgraph g, t4a__CUgraphNode * nodes, size_t * n)) \
  X(cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2", 0,                        \
    (t4a__CUgraphExec e, t4a__CUgraphNode n, const t4a__CUDA_KERNEL_NODE_PARAMS *p))               \
  X(cuLaunchKernelEx, "cuLaunchKernelEx", 0,                                                       \
    (const t4a__CUlaunchConfig *c, t4a__CUfunction f, void **params, void **extra))                \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", 0, \
    (int *blocks, t4a__CUfunction f, int block, size_t shared))                                    \
  X(cuOccupancyMaxPotentialBlockSize, "cuOccupancyMaxPotentialBlockSize", 0,                       \
    (int *min_grid, int *block, t4a__CUfunction f, t4a__CUoccupancyB2DSize shared_of_block,        \
     size_t shared, int limit))                                                                    \
  X(cuOccupancyMaxPotentialClusterSize, "cuOccupancyMaxPotentialClusterSize", 0,                   \
    (int *size, t4a__CUfunction f, const t4a__CUlaunchConfig *c))                                  \
  X(cuOccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters", 0,                               \
    (int *clusters, t4a__CUfunction f, const t4a__CUlaunchConfig *c))                              \
  X(cuStreamCreateWithPriority, "cuStreamCreateWithPriority", 0,                                   \
    (t4a__CUstream * s, unsigned int flags, int priority))                                         \
  X(cuCtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange", 0, (int *least, int *greatest))    \
  X(cuStreamGetPriority, "cuStreamGetPriority", 0, (t4a__CUstream s, int *priority))               \
  /* ABI 1.1 interop: optional, buffer_wrap_external and dlpack_import say */                      \
  /* T4A_EUNSUPPORTED without it */                                                                \
  X(cuPointerGetAttributes, "cuPointerGetAttributes", 0,                                           \
    (unsigned int n, t4a__CUpointer_attribute *attributes, void **data, t4a__CUdeviceptr ptr))     \
  /* ABI 1.2 processes: optional, T4A_RUNTIME_IPC is T4A_EUNSUPPORTED without them */              \
  X(cuMemPoolExportToShareableHandle, "cuMemPoolExportToShareableHandle", 0,                       \
    (void *handle, t4a__CUmemoryPool pool, t4a__CUmemAllocationHandleType type,                    \
     unsigned long long flags))                                                                    \
  X(cuMemPoolImportFromShareableHandle, "cuMemPoolImportFromShareableHandle", 0,                   \
    (t4a__CUmemoryPool * pool, void *handle, t4a__CUmemAllocationHandleType type,                  \
     unsigned long long flags))                                                                    \
  X(cuMemPoolExportPointer, "cuMemPoolExportPointer", 0,                                           \
    (t4a__CUmemPoolPtrExportData * out, t4a__CUdeviceptr ptr))                                     \
  X(cuMemPoolImportPointer, "cuMemPoolImportPointer", 0,                                           \
    (t4a__CUdeviceptr * ptr, t4a__CUmemoryPool pool, t4a__CUmemPoolPtrExportData * data))          \
  X(cuIpcGetEventHandle, "cuIpcGetEventHandle", 0, (t4a__CUipcEventHandle * h, t4a__CUevent e))    \
  X(cuIpcOpenEventHandle, "cuIpcOpenEventHandle", 0, (t4a__CUevent * e, t4a__CUipcEventHandle h))

/* Resolved before the others, by dlsym, to bootstrap. */
typedef t4a__CUresult (*t4a__pfn_cuInit)(unsigned int flags);
typedef t4a__CUresult (*t4a__pfn_cuDriverGetVersion)(int *version);
typedef t4a__CUresult (*t4a__pfn_cuGetProcAddress_v2)(const char *symbol, void **pfn,
                                                      int cudaVersion, t4a__cuuint64_t flags,
                                                      t4a__CUdriverProcAddressQueryResult *st);
typedef t4a__CUresult (*t4a__pfn_cuGetProcAddress)(const char *symbol, void **pfn, int cudaVersion,
                                                   t4a__cuuint64_t flags);

/* The resolved driver table. */
typedef struct t4a__cuda_api {
  t4a__pfn_cuInit cuInit;
  t4a__pfn_cuDriverGetVersion cuDriverGetVersion;
#define T4A__API_FIELD(name, sym, req, params) t4a__CUresult(*name) params;
  T4A__CUDA_FUNCS(T4A__API_FIELD)
#undef T4A__API_FIELD
} t4a__cuda_api;

/* ---- NVRTC --------------------------------------------------------------- */
typedef unsigned int t4a__nvrtcResult;
typedef struct _nvrtcProgram *t4a__nvrtcProgram;

#define T4A__NVRTC_DECL_CONSTANTS(X)                                                               \
  X(NVRTC_SUCCESS, 0)                                                                              \
  X(NVRTC_ERROR_OUT_OF_MEMORY, 1)                                                                  \
  X(NVRTC_ERROR_PROGRAM_CREATION_FAILURE, 2)                                                       \
  X(NVRTC_ERROR_INVALID_INPUT, 3)                                                                  \
  X(NVRTC_ERROR_INVALID_PROGRAM, 4)                                                                \
  X(NVRTC_ERROR_INVALID_OPTION, 5)                                                                 \
  X(NVRTC_ERROR_COMPILATION, 6)

enum {
#define T4A__DECL_CONST(name, value) T4A__##name = value,
  T4A__NVRTC_DECL_CONSTANTS(T4A__DECL_CONST)
#undef T4A__DECL_CONST
};

/* X(name, required, return type, (parameters)) */
#define T4A__NVRTC_FUNCS(X)                                                                        \
  X(nvrtcVersion, 1, t4a__nvrtcResult, (int *major, int *minor))                                   \
  X(nvrtcGetErrorString, 1, const char *, (t4a__nvrtcResult r))                                    \
  X(nvrtcCreateProgram, 1, t4a__nvrtcResult,                                                       \
    (t4a__nvrtcProgram * p, const char *src, const char *name, int nheaders,                       \
     const char *const *headers, const char *const *include_names))                                \
  X(nvrtcDestroyProgram, 1, t4a__nvrtcResult, (t4a__nvrtcProgram * p))                             \
  X(nvrtcCompileProgram, 1, t4a__nvrtcResult,                                                      \
    (t4a__nvrtcProgram p, int nopts, const char *const *opts))                                     \
  X(nvrtcGetProgramLogSize, 1, t4a__nvrtcResult, (t4a__nvrtcProgram p, size_t * n))                \
  X(nvrtcGetProgramLog, 1, t4a__nvrtcResult, (t4a__nvrtcProgram p, char *log))                     \
  X(nvrtcGetPTXSize, 1, t4a__nvrtcResult, (t4a__nvrtcProgram p, size_t * n))                       \
  X(nvrtcGetPTX, 1, t4a__nvrtcResult, (t4a__nvrtcProgram p, char *ptx))                            \
  X(nvrtcGetCUBINSize, 1, t4a__nvrtcResult, (t4a__nvrtcProgram p, size_t * n))                     \
  X(nvrtcGetCUBIN, 1, t4a__nvrtcResult, (t4a__nvrtcProgram p, char *cubin))                        \
  X(nvrtcGetNumSupportedArchs, 0, t4a__nvrtcResult, (int *n))                                      \
  X(nvrtcGetSupportedArchs, 0, t4a__nvrtcResult, (int *archs))

typedef struct t4a__nvrtc_api {
#define T4A__NVRTC_FIELD(name, req, ret, params) ret(*name) params;
  T4A__NVRTC_FUNCS(T4A__NVRTC_FIELD)
#undef T4A__NVRTC_FIELD
} t4a__nvrtc_api;

#endif
