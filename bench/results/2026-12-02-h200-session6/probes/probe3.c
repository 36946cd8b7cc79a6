/* (1) CPU cost per tiny H2D: pageable vs 2 MiB pinned window vs memset (1 element);
 * (2) a lock+unlock pair in situ, right after each cuLaunchKernel / 64 B pageable copy. */
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define CK(x) do { CUresult r_ = (x); if (r_) { fprintf(stderr, "%s: %d line %d\n", #x, r_, __LINE__); exit(1);} } while (0)
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
#define NS 201
#define WIN (2u<<20)
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned spin;
static volatile int sink;
static const char ptx[] = ".version 7.0\n.target sm_50\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n";
int main(void){
  CUdevice dev; CUcontext ctx; CUstream s; CUdeviceptr d; char *pg,*pin; size_t fill=0; CUmodule m; CUfunction fn;
  CK(cuInit(0)); CK(cuDeviceGet(&dev,0)); CK(cuDevicePrimaryCtxRetain(&ctx,dev)); CK(cuCtxSetCurrent(ctx));
  CK(cuStreamCreate(&s,CU_STREAM_NON_BLOCKING));
  CK(cuModuleLoadData(&m,ptx)); CK(cuModuleGetFunction(&fn,m,"k"));
  CK(cuMemAlloc(&d,1<<20)); pg=malloc(1<<20); memset(pg,1,1<<20); CK(cuMemHostAlloc((void**)&pin,2*WIN,0)); memset(pin,2,2*WIN);
  size_t sizes[]={1,2,4,8,16,32,48,64,128,256,512,1024};
  for(int rep=0;rep<2;rep++) for(int si=0;si<12;si++){ size_t sz=sizes[si]; static double t[3][NS];
    int batch = 200, nv = sz==1||sz==4 ? 3 : 2;
    for(int i=0;i<NS;i++) for(int kk=0;kk<nv;kk++){ int k=(kk+i)%nv;
      CK(cuStreamSynchronize(s));
      double t0=now();
      for(int b=0;b<batch;b++){
        if(k==0) CK(cuMemcpyHtoDAsync(d,pg,sz,s));
        else if(k==1){ size_t used=(sz+63)&~(size_t)63; if(fill+used>WIN) fill=0;
               char *p=pin+fill; memcpy(p,pg,sz); CK(cuMemcpyHtoDAsync(d,p,sz,s)); fill+=used; }
        else if(sz==1) CK(cuMemsetD8Async(d,(unsigned char)pg[0],1,s));
        else { unsigned v; memcpy(&v,pg,4); CK(cuMemsetD32Async(d,v,1,s)); }
      }
      t[k][i]=(now()-t0)/batch; }
    CK(cuStreamSynchronize(s));
    for(int k=0;k<nv;k++) qsort(t[k],NS,sizeof(double),cmp);
    printf("rep %d %5zu B: pageable %.0f  window %.0f [pageable/window %.3f]", rep, sz, t[0][NS/2], t[1][NS/2], t[0][NS/2]/t[1][NS/2]);
    if(nv==3) printf("  memset %.0f [pageable/memset %.3f]", t[2][NS/2], t[0][NS/2]/t[2][NS/2]);
    printf("\n"); fflush(stdout);
  }
  /* (2) locks in situ */
  static const char *ln[]={"none","pthread pair","spin cmpxchg + store unlock","cmpxchg + xchg unlock"};
  for(int op=0;op<2;op++) for(int rep=0;rep<2;rep++){ static double t[4][NS];
    for(int i=0;i<NS;i++) for(int kk=0;kk<4;kk++){ int k=(kk+i)%4;
      CK(cuStreamSynchronize(s));
      double t0=now();
      for(int b=0;b<200;b++){
        if(op==0) CK(cuLaunchKernel(fn,1,1,1,32,1,1,0,s,NULL,NULL)); else CK(cuMemcpyHtoDAsync(d,pg,64,s));
        switch(k){
        case 0: sink++; break;
        case 1: pthread_mutex_lock(&mu); sink++; pthread_mutex_unlock(&mu); break;
        case 2: { unsigned z=0; while(!atomic_compare_exchange_weak_explicit(&spin,&z,1,memory_order_acquire,memory_order_relaxed)) z=0; sink++; atomic_store_explicit(&spin,0,memory_order_release); } break;
        case 3: { unsigned z=0; while(!atomic_compare_exchange_weak_explicit(&spin,&z,1,memory_order_acquire,memory_order_relaxed)) z=0; sink++; (void)atomic_exchange_explicit(&spin,0,memory_order_release); } break;
        }
      }
      t[k][i]=(now()-t0)/200; }
    for(int k=0;k<4;k++) qsort(t[k],NS,sizeof(double),cmp);
    printf("in situ after %s (rep %d):", op?"64 B pageable H2D":"cuLaunchKernel", rep);
    for(int k=0;k<4;k++) printf("  %s %.1f (+%.1f)", ln[k], t[k][NS/2], t[k][NS/2]-t[0][NS/2]);
    printf("\n"); fflush(stdout);
  }
  return 0;
}
