/* CPU cost per small H2D: the driver's pageable call vs memcpy into a
 * rotating pinned window (2 MiB, 64-byte pieces) + the driver's pinned call.
 * Batches of 200 + one stream sync (untimed); alternating sample by sample. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define CK(x) do { CUresult r_ = (x); if (r_) { fprintf(stderr, "%s: %d line %d\n", #x, r_, __LINE__); exit(1);} } while (0)
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
#define NS 201
#define WIN (2u<<20)
int main(void){
  CUdevice dev; CUcontext ctx; CUstream s; CUdeviceptr d; char *pg,*pin; size_t fill=0;
  CK(cuInit(0)); CK(cuDeviceGet(&dev,0)); CK(cuDevicePrimaryCtxRetain(&ctx,dev)); CK(cuCtxSetCurrent(ctx));
  CK(cuStreamCreate(&s,CU_STREAM_NON_BLOCKING));
  CK(cuMemAlloc(&d,1<<20)); pg=malloc(1<<20); memset(pg,1,1<<20); CK(cuMemHostAlloc((void**)&pin,2*WIN,0)); memset(pin,2,2*WIN);
  size_t sizes[]={1,64,1024,4096,16384,32768,65536};
  for(int rep=0;rep<2;rep++) for(int si=0;si<7;si++){ size_t sz=sizes[si]; static double t[2][NS];
    int batch = sz>=16384?50:200;
    for(int i=0;i<NS;i++) for(int kk=0;kk<2;kk++){ int k=(kk+i)&1;
      CK(cuStreamSynchronize(s));
      double t0=now();
      for(int b=0;b<batch;b++){
        if(k==0) CK(cuMemcpyHtoDAsync(d,pg,sz,s));
        else { size_t used=(sz+63)&~(size_t)63; if(fill+used>WIN) fill=0; /* (the real ring waits on an event here) */
               char *p=pin+fill; memcpy(p,pg,sz); CK(cuMemcpyHtoDAsync(d,p,sz,s)); fill+=used; }
      }
      t[k][i]=(now()-t0)/batch; }
    CK(cuStreamSynchronize(s));
    qsort(t[0],NS,sizeof(double),cmp); qsort(t[1],NS,sizeof(double),cmp);
    printf("rep %d %6zu B: pageable %.0f ns (p99 %.0f)  window+pinned %.0f ns (p99 %.0f)  ratio pageable/window %.3f\n",rep,sz,t[0][NS/2],t[0][NS*99/100],t[1][NS/2],t[1][NS*99/100],t[0][NS/2]/t[1][NS/2]);
    fflush(stdout);
  }
  return 0;
}
