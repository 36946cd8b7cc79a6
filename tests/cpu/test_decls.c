/* tests/cpu/test_decls.c -- the plugin's own CUDA/NVRTC declarations agree
 * with the real cuda.h and nvrtc.h: every constant, struct layout and
 * function signature, and each dlsym fallback name is the one cuda.h maps
 * the function to. Built only when configure found the headers. */
#include "config.h"

#include <cuda.h>
#include <nvrtc.h>
#include <string.h>

#include "plugin-cuda/cuda_decls.h"
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
_Static_assert(sizeof(struct ours_uuid) == sizeof(CUuuid), "CUuuid size");
SAME_LAYOUT(struct ours_uuid, CUuuid, bytes)
_Static_assert(sizeof(t4a__CUdeviceptr) == sizeof(CUdeviceptr), "CUdeviceptr size");
_Static_assert(__builtin_types_compatible_p(t4a__CUdeviceptr, CUdeviceptr), "CUdeviceptr type");
_Static_assert(__builtin_types_compatible_p(t4a__CUresult, CUresult), "CUresult type");
_Static_assert(__builtin_types_compatible_p(t4a__CUcontext, CUcontext), "CUcontext type");
_Static_assert(__builtin_types_compatible_p(t4a__CUstream, CUstream), "CUstream type");
_Static_assert(__builtin_types_compatible_p(t4a__CUevent, CUevent), "CUevent type");
_Static_assert(__builtin_types_compatible_p(t4a__CUmemoryPool, CUmemoryPool), "pool type");

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

int main(void) {
  Suite *s = suite_create("decls");
  TCase *tc = tcase_create("decls");
  tcase_add_test(tc, fallback_names_are_the_versioned_symbols);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
