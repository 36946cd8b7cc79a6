/* tests/cpu/test_decls.c -- the plugin's own CUDA/NVRTC declarations agree
 * with the real cuda.h and nvrtc.h: every constant, struct layout and
 * function signature, and each dlsym fallback name is the one cuda.h maps
 * the function to. Built only when configure found the headers. */
#include "config.h"

#include <cuda.h>
#include <nvrtc.h>
#include <stdio.h>
#include <string.h>

#include "plugin-cuda/cu_names.h"
#include "plugin-cuda/cuda_decls.h"
#include "t4a/gpu_backend_v1.h"
#include "tests/testutil.h"

#define CHECK_CONST(name, value)                                                                   \
  _Static_assert((long long)(name) == (long long)T4A__##name, #name " differs from cuda.h");
T4A__CUDA_DECL_CONSTANTS(CHECK_CONST)
T4A__NVRTC_DECL_CONSTANTS(CHECK_CONST)

/* Our field lists, laid out as standalone structs, against cuda.h's. */
struct ours_uuid {
  T4A__CUUUID_FIELDS
};
struct ours_location {
  T4A__CUMEMLOCATION_FIELDS
};
struct ours_pool_props {
  T4A__CUMEMPOOLPROPS_FIELDS
};
struct ours_access_desc {
  T4A__CUMEMACCESSDESC_FIELDS
};
struct ours_memcpy2d {
  T4A__CUDA_MEMCPY2D_FIELDS
};
union ours_launch_value {
  T4A__CULAUNCHATTRIBUTEVALUE_FIELDS
};
struct ours_launch_attribute {
  T4A__CULAUNCHATTRIBUTE_FIELDS
};
struct ours_launch_config {
  T4A__CULAUNCHCONFIG_FIELDS
};
struct ours_kernel_node_params {
  T4A__CUDA_KERNEL_NODE_PARAMS_FIELDS
};
struct ours_ipc_event_handle {
  T4A__CUIPCEVENTHANDLE_FIELDS
};
struct ours_pool_ptr_export {
  T4A__CUMEMPOOLPTREXPORTDATA_FIELDS
};
#define SAME_LAYOUT(ours, theirs, field)                                                           \
  _Static_assert(offsetof(ours, field) == offsetof(theirs, field), #field " offset");
_Static_assert(sizeof(struct ours_pool_props) == sizeof(CUmemPoolProps), "CUmemPoolProps size");
SAME_LAYOUT(struct ours_pool_props, CUmemPoolProps, allocType)
SAME_LAYOUT(struct ours_pool_props, CUmemPoolProps, handleTypes)
SAME_LAYOUT(struct ours_pool_props, CUmemPoolProps, location)
SAME_LAYOUT(struct ours_pool_props, CUmemPoolProps, win32SecurityAttributes)
SAME_LAYOUT(struct ours_pool_props, CUmemPoolProps, maxSize)
SAME_LAYOUT(struct ours_pool_props, CUmemPoolProps, usage)
SAME_LAYOUT(struct ours_pool_props, CUmemPoolProps, reserved)
_Static_assert(sizeof(struct ours_location) == sizeof(CUmemLocation), "CUmemLocation size");
SAME_LAYOUT(struct ours_location, CUmemLocation, type)
SAME_LAYOUT(struct ours_location, CUmemLocation, id)
_Static_assert(sizeof(struct ours_access_desc) == sizeof(CUmemAccessDesc), "access desc size");
SAME_LAYOUT(struct ours_access_desc, CUmemAccessDesc, location)
SAME_LAYOUT(struct ours_access_desc, CUmemAccessDesc, flags)
_Static_assert(sizeof(struct ours_memcpy2d) == sizeof(CUDA_MEMCPY2D), "CUDA_MEMCPY2D size");
SAME_LAYOUT(struct ours_memcpy2d, CUDA_MEMCPY2D, srcXInBytes)
SAME_LAYOUT(struct ours_memcpy2d, CUDA_MEMCPY2D, srcY)
SAME_LAYOUT(struct ours_memcpy2d, CUDA_MEMCPY2D, srcMemoryType)
SAME_LAYOUT(struct ours_memcpy2d, CUDA_MEMCPY2D, srcHost)
SAME_LAYOUT(struct ours_memcpy2d, CUDA_MEMCPY2D, srcDevice)
SAME_LAYOUT(struct ours_memcpy2d, CUDA_MEMCPY2D, srcArray)
SAME_LAYOUT(struct ours_memcpy2d, CUDA_MEMCPY2D, srcPitch)
SAME_LAYOUT(struct ours_memcpy2d, CUDA_MEMCPY2D, dstXInBytes)
SAME_LAYOUT(struct ours_memcpy2d, CUDA_MEMCPY2D, dstY)
SAME_LAYOUT(struct ours_memcpy2d, CUDA_MEMCPY2D, dstMemoryType)
SAME_LAYOUT(struct ours_memcpy2d, CUDA_MEMCPY2D, dstHost)
SAME_LAYOUT(struct ours_memcpy2d, CUDA_MEMCPY2D, dstDevice)
SAME_LAYOUT(struct ours_memcpy2d, CUDA_MEMCPY2D, dstArray)
SAME_LAYOUT(struct ours_memcpy2d, CUDA_MEMCPY2D, dstPitch)
SAME_LAYOUT(struct ours_memcpy2d, CUDA_MEMCPY2D, WidthInBytes)
SAME_LAYOUT(struct ours_memcpy2d, CUDA_MEMCPY2D, Height)
_Static_assert(sizeof(union ours_launch_value) == sizeof(CUlaunchAttributeValue),
               "CUlaunchAttributeValue size");
_Static_assert(_Alignof(union ours_launch_value) == _Alignof(CUlaunchAttributeValue),
               "CUlaunchAttributeValue alignment");
SAME_LAYOUT(union ours_launch_value, CUlaunchAttributeValue, cooperative)
SAME_LAYOUT(union ours_launch_value, CUlaunchAttributeValue, clusterDim)
SAME_LAYOUT(union ours_launch_value, CUlaunchAttributeValue, clusterDim.x)
SAME_LAYOUT(union ours_launch_value, CUlaunchAttributeValue, clusterDim.y)
SAME_LAYOUT(union ours_launch_value, CUlaunchAttributeValue, clusterDim.z)
SAME_LAYOUT(union ours_launch_value, CUlaunchAttributeValue, priority)
_Static_assert(sizeof(struct ours_launch_attribute) == sizeof(CUlaunchAttribute),
               "CUlaunchAttribute size");
SAME_LAYOUT(struct ours_launch_attribute, CUlaunchAttribute, id)
SAME_LAYOUT(struct ours_launch_attribute, CUlaunchAttribute, value)
_Static_assert(sizeof(struct ours_launch_config) == sizeof(CUlaunchConfig), "CUlaunchConfig size");
SAME_LAYOUT(struct ours_launch_config, CUlaunchConfig, gridDimX)
SAME_LAYOUT(struct ours_launch_config, CUlaunchConfig, gridDimY)
SAME_LAYOUT(struct ours_launch_config, CUlaunchConfig, gridDimZ)
SAME_LAYOUT(struct ours_launch_config, CUlaunchConfig, blockDimX)
SAME_LAYOUT(struct ours_launch_config, CUlaunchConfig, blockDimY)
SAME_LAYOUT(struct ours_launch_config, CUlaunchConfig, blockDimZ)
SAME_LAYOUT(struct ours_launch_config, CUlaunchConfig, sharedMemBytes)
SAME_LAYOUT(struct ours_launch_config, CUlaunchConfig, hStream)
SAME_LAYOUT(struct ours_launch_config, CUlaunchConfig, attrs)
SAME_LAYOUT(struct ours_launch_config, CUlaunchConfig, numAttrs)
_Static_assert(sizeof(struct ours_kernel_node_params) == sizeof(CUDA_KERNEL_NODE_PARAMS_v2),
               "CUDA_KERNEL_NODE_PARAMS_v2 size");
SAME_LAYOUT(struct ours_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, func)
SAME_LAYOUT(struct ours_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, gridDimX)
SAME_LAYOUT(struct ours_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, gridDimY)
SAME_LAYOUT(struct ours_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, gridDimZ)
SAME_LAYOUT(struct ours_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, blockDimX)
SAME_LAYOUT(struct ours_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, blockDimY)
SAME_LAYOUT(struct ours_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, blockDimZ)
SAME_LAYOUT(struct ours_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, sharedMemBytes)
SAME_LAYOUT(struct ours_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, kernelParams)
SAME_LAYOUT(struct ours_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, extra)
SAME_LAYOUT(struct ours_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, kern)
SAME_LAYOUT(struct ours_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, ctx)
_Static_assert(sizeof(struct ours_ipc_event_handle) == sizeof(CUipcEventHandle),
               "CUipcEventHandle size");
SAME_LAYOUT(struct ours_ipc_event_handle, CUipcEventHandle, reserved)
_Static_assert(sizeof(struct ours_pool_ptr_export) == sizeof(CUmemPoolPtrExportData),
               "CUmemPoolPtrExportData size");
SAME_LAYOUT(struct ours_pool_ptr_export, CUmemPoolPtrExportData, reserved)
_Static_assert(sizeof(struct ours_uuid) == sizeof(CUuuid), "CUuuid size");
SAME_LAYOUT(struct ours_uuid, CUuuid, bytes)
_Static_assert(sizeof(t4a__CUdeviceptr) == sizeof(CUdeviceptr), "CUdeviceptr size");
_Static_assert(__builtin_types_compatible_p(t4a__CUdeviceptr, CUdeviceptr), "CUdeviceptr type");
_Static_assert(__builtin_types_compatible_p(t4a__CUresult, CUresult), "CUresult type");
_Static_assert(__builtin_types_compatible_p(t4a__CUcontext, CUcontext), "CUcontext type");
_Static_assert(__builtin_types_compatible_p(t4a__CUstream, CUstream), "CUstream type");
_Static_assert(__builtin_types_compatible_p(t4a__CUevent, CUevent), "CUevent type");
_Static_assert(__builtin_types_compatible_p(t4a__CUmemoryPool, CUmemoryPool), "pool type");
_Static_assert(__builtin_types_compatible_p(t4a__CUgraph, CUgraph), "CUgraph type");
_Static_assert(__builtin_types_compatible_p(t4a__CUgraphExec, CUgraphExec), "CUgraphExec type");
_Static_assert(__builtin_types_compatible_p(t4a__CUgraphNode, CUgraphNode), "CUgraphNode type");
_Static_assert(__builtin_types_compatible_p(t4a__CUoccupancyB2DSize, CUoccupancyB2DSize),
               "CUoccupancyB2DSize type");

/* cuda.h of CUDA 12.3 and later maps cuStreamGetCaptureInfo to _v3 (edge
 * data added) and declares _v2 only in its internal section. The plugin
 * resolves every name with cudaVersion 12000, for which the driver hands
 * out _v2, so that is the declaration to check (and the dlsym fallback
 * name): here is cuda.h's own (the test below finds it in cuda.h verbatim). */
#define CAPTURE_INFO_V2                                                                            \
  "CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus "            \
  "*captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode "                 \
  "**dependencies_out, size_t *numDependencies_out);"
CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream,
                                           CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out,
                                           size_t *numDependencies_out);
#undef cuStreamGetCaptureInfo
#define cuStreamGetCaptureInfo cuStreamGetCaptureInfo_v2

/* Each function: our signature is the one cuda.h gives the name (after its
 * own #define to the versioned symbol). */
#define CHECK_FN(name, sym, req, params)                                                           \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&name), t4a__CUresult(*) params),         \
                 #name " signature differs from cuda.h");
T4A__CUDA_FUNCS(CHECK_FN)
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuInit), t4a__pfn_cuInit), "cuInit");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuDriverGetVersion),
                                            t4a__pfn_cuDriverGetVersion),
               "cuDriverGetVersion");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuGetProcAddress_v2),
                                            t4a__pfn_cuGetProcAddress_v2),
               "cuGetProcAddress_v2");

#define CHECK_NVRTC(name, req, ret, params)                                                        \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) params),                   \
                 #name " signature differs from nvrtc.h");
T4A__NVRTC_FUNCS(CHECK_NVRTC)

#define STR(x) #x
#define XSTR(x) STR(x)

START_TEST(fallback_names_are_the_versioned_symbols) {
#define CHECK_SYM(name, sym, req, params) ck_assert_str_eq(sym, XSTR(name));
  T4A__CUDA_FUNCS(CHECK_SYM)
}
END_TEST

/* Every CUresult name we know has cuda.h's value... */
#define CHECK_NAME(name, value) _Static_assert(name == value, #name " differs from cuda.h");
T4A__CURESULT_NAMES(CHECK_NAME)

static const char *const known[] = {
#define KNOWN(name, value) #name,
    T4A__CURESULT_NAMES(KNOWN)
#undef KNOWN
};

/* ... and every CUresult cuda.h defines has a name here (read from the
 * header itself: C cannot enumerate an enum). */
START_TEST(every_curesult_of_cuda_h_is_named) {
  FILE *f = fopen(T4A_CUDA_H, "r");
  ck_assert_msg(f != NULL, "cannot open %s", T4A_CUDA_H);
  char line[512];
  int in_enum = 0, seen = 0;
  while (fgets(line, sizeof line, f)) {
    if (strstr(line, "typedef enum cudaError_enum"))
      in_enum = 1;
    else if (in_enum && strstr(line, "} CUresult;"))
      break;
    char name[128];
    if (!in_enum || sscanf(line, " %127[A-Z0-9_] =", name) != 1 || strncmp(name, "CUDA_", 5) != 0)
      continue;
    seen++;
    int found = 0;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
      found |= strcmp(known[i], name) == 0;
    ck_assert_msg(found, "%s (cuda.h) is missing from plugin-cuda/cu_names.h", name);
  }
  fclose(f);
  ck_assert_int_ge(seen, 100);
}
END_TEST

/* The stream handles the public header names are the driver's. */
START_TEST(default_stream_handles_are_the_drivers) {
  ck_assert_uint_eq((uintptr_t)CU_STREAM_LEGACY, T4A_STREAM_LEGACY);
  ck_assert_uint_eq((uintptr_t)CU_STREAM_PER_THREAD, T4A_STREAM_PER_THREAD);
}
END_TEST

START_TEST(the_capture_info_v2_declaration_is_cuda_hs) {
  FILE *f = fopen(T4A_CUDA_H, "r");
  ck_assert_msg(f != NULL, "cannot open %s", T4A_CUDA_H);
  char line[1024];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    char *p = line;
    while (*p == ' ')
      p++;
    found = strncmp(p, CAPTURE_INFO_V2, strlen(CAPTURE_INFO_V2)) == 0;
  }
  fclose(f);
  ck_assert_msg(found, "cuda.h has no line '%s'", CAPTURE_INFO_V2);
}
END_TEST

int main(void) {
  Suite *s = suite_create("decls");
  TCase *tc = tcase_create("decls");
  tcase_add_test(tc, fallback_names_are_the_versioned_symbols);
  tcase_add_test(tc, every_curesult_of_cuda_h_is_named);
  tcase_add_test(tc, default_stream_handles_are_the_drivers);
  tcase_add_test(tc, the_capture_info_v2_declaration_is_cuda_hs);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
