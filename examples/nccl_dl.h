/* examples/nccl_dl.h -- the few NCCL calls the NCCL example and the bench
 * use, loaded at run time (dlopen), so that nothing links NCCL: a host
 * without it builds everything and says why it cannot run them.
 *
 * The declarations follow nccl.h (NCCL 2.x): ncclResult_t, ncclDataType_t
 * and ncclRedOp_t are C enums (int); ncclComm_t is an opaque pointer;
 * cudaStream_t is a CUstream. The library is $T4A_NCCL_LIBRARY when set,
 * else libnccl.so.2, else libnccl.so, through the dynamic linker's search
 * (LD_LIBRARY_PATH; the nvidia-nccl-cu* wheels put it in
 * site-packages/nvidia/nccl/lib). */
#ifndef T4A_EXAMPLES_NCCL_DL_H
#define T4A_EXAMPLES_NCCL_DL_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct ncclComm *t4a_nccl_comm;

/* ncclUniqueId: 128 opaque bytes, passed by value (NCCL_UNIQUE_ID_BYTES). */
typedef struct t4a_nccl_unique_id {
  char internal[128];
} t4a_nccl_unique_id;

enum { T4A_NCCL_SUCCESS = 0, T4A_NCCL_FLOAT32 = 7, T4A_NCCL_SUM = 0 };

typedef struct t4a_nccl {
  void *dl;
  char path[512];
  int (*get_version)(int *version);
  const char *(*error_string)(int result);
  int (*comm_init_all)(t4a_nccl_comm *comms, int ndev, const int *devlist);
  int (*get_unique_id)(t4a_nccl_unique_id *id);
  int (*comm_init_rank)(t4a_nccl_comm *comm, int nranks, t4a_nccl_unique_id id, int rank);
  int (*comm_destroy)(t4a_nccl_comm comm);
  int (*group_start)(void);
  int (*group_end)(void);
  int (*all_reduce)(const void *send, void *recv, size_t count, int datatype, int op,
                    t4a_nccl_comm comm, void *stream);
} t4a_nccl;

/* Loads NCCL into *n; 0, or -1 with the reason in why. */
static inline int t4a_nccl_open(t4a_nccl *n, char *why, size_t why_size) {
  const char *env = getenv("T4A_NCCL_LIBRARY");
  const char *names[] = {env && *env ? env : "libnccl.so.2", "libnccl.so"};
  size_t tries = env && *env ? 1 : 2;
  const char *err = "";
  n->dl = NULL;
  for (size_t i = 0; i < tries && !n->dl; i++) {
    n->dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!n->dl)
      err = dlerror();
    else
      snprintf(n->path, sizeof n->path, "%s", names[i]);
  }
  if (!n->dl) {
    snprintf(why, why_size,
             "cannot load NCCL (%s); install it (the nvidia-nccl wheel, or libnccl2) and put "
             "its directory on LD_LIBRARY_PATH, or set T4A_NCCL_LIBRARY to libnccl.so.2",
             err);
    return -1;
  }
  struct {
    const char *name;
    void **slot;
  } syms[] = {{"ncclGetVersion", (void **)&n->get_version},
              {"ncclGetErrorString", (void **)&n->error_string},
              {"ncclCommInitAll", (void **)&n->comm_init_all},
              {"ncclGetUniqueId", (void **)&n->get_unique_id},
              {"ncclCommInitRank", (void **)&n->comm_init_rank},
              {"ncclCommDestroy", (void **)&n->comm_destroy},
              {"ncclGroupStart", (void **)&n->group_start},
              {"ncclGroupEnd", (void **)&n->group_end},
              {"ncclAllReduce", (void **)&n->all_reduce}};
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].slot = dlsym(n->dl, syms[i].name);
    if (!*syms[i].slot) {
      snprintf(why, why_size, "%s lacks %s; use NCCL 2.x", n->path, syms[i].name);
      dlclose(n->dl);
      n->dl = NULL;
      return -1;
    }
  }
  return 0;
}

#endif
