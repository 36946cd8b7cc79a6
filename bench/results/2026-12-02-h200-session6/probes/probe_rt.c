/* Raw driver probe: what a small round trip costs, by how completion is observed.
 * Variants alternate sample by sample (rotating order). Medians of per-op ns. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define CK(x) do { CUresult r_ = (x); if (r_) { fprintf(stderr, "%s: %d line %d\n", #x, r_, __LINE__); exit(1);} } while (0)
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static CUstream s; static CUevent ev; static CUfunction fn; static CUdeviceptr d; static char *pg, *pin;
static size_t sz;
enum { OP_LAUNCH, OP_H2D, OP_PIN, OP_STAGED, OP_D2D };
enum { W_SYNC, W_SQ, W_EQ, W_ES, W_ESYNC, W_NONE };
static void op(int o){
  switch(o){
  case OP_LAUNCH: CK(cuLaunchKernel(fn,1,1,1,32,1,1,0,s,NULL,NULL)); break;
  case OP_H2D: CK(cuMemcpyHtoDAsync(d,pg,sz,s)); break;
  case OP_PIN: CK(cuMemcpyHtoDAsync(d,pin,sz,s)); break;
  case OP_STAGED: memcpy(pin,pg,sz); CK(cuMemcpyHtoDAsync(d,pin,sz,s)); break;
  case OP_D2D: CK(cuMemcpyDtoDAsync(d,d+65536,4,s)); break;
  }
}
static void wt(int w){
  CUresult r;
  switch(w){
  case W_SYNC: CK(cuStreamSynchronize(s)); break;
  case W_SQ: while((r=cuStreamQuery(s))==CUDA_ERROR_NOT_READY); CK(r); break;
  case W_EQ: CK(cuEventRecord(ev,s)); while((r=cuEventQuery(ev))==CUDA_ERROR_NOT_READY); CK(r); break;
  case W_ES: CK(cuEventRecord(ev,s)); CK(cuEventSynchronize(ev)); break;
  case W_ESYNC: CK(cuEventRecord(ev,s)); CK(cuStreamSynchronize(s)); break;
  case W_NONE: break;
  }
}
static const char *wn[]={"streamSync","streamQuery-spin","eventRecord+eventQuery-spin","eventRecord+eventSync","eventRecord+streamSync","(none)"};
static const char *on[]={"launch","pageable H2D","pinned H2D","memcpy+pinned H2D","D2D 4B"};
#define NS 401
static void row(int o, size_t bytes, const int *ws, int nw, int batch){
  sz=bytes; static double t[8][NS];
  for(int i=0;i<20;i++) for(int k=0;k<nw;k++){op(o);wt(ws[k]);}
  for(int i=0;i<NS;i++) for(int kk=0;kk<nw;kk++){ int k=(kk+i)%nw;
    CK(cuStreamSynchronize(s));
    double t0=now(); for(int b=0;b<batch;b++){op(o);wt(ws[k]);} t[k][i]=(now()-t0)/batch; }
  for(int k=0;k<nw;k++) qsort(t[k],NS,sizeof(double),cmp);
  printf("%-20s %8zu B:", on[o], bytes);
  for(int k=0;k<nw;k++) printf("  %s %.0f (p99 %.0f) [%.3f]", wn[ws[k]], t[k][NS/2], t[k][NS*99/100], t[k][NS/2]/t[0][NS/2]);
  printf("\n"); fflush(stdout);
}
static const char ptx[] = ".version 7.0\n.target sm_50\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n";
int main(void){
  CUdevice dev; CUcontext ctx; CUmodule m;
  CK(cuInit(0)); CK(cuDeviceGet(&dev,0)); CK(cuDevicePrimaryCtxRetain(&ctx,dev)); CK(cuCtxSetCurrent(ctx));
  CK(cuStreamCreate(&s,CU_STREAM_NON_BLOCKING)); CK(cuEventCreate(&ev,CU_EVENT_DISABLE_TIMING));
  CK(cuModuleLoadData(&m,ptx)); CK(cuModuleGetFunction(&fn,m,"k"));
  CK(cuMemAlloc(&d,1<<22)); pg=malloc(1<<22); memset(pg,1,1<<22); CK(cuMemHostAlloc((void**)&pin,1<<22,0)); memset(pin,2,1<<22);
  int all[]={W_SYNC,W_SQ,W_EQ,W_ES,W_ESYNC};
  for(int rep=0;rep<2;rep++){
  printf("== rep %d: round trips, per op ns, [ratio to streamSync]\n",rep);
  row(OP_LAUNCH,0,all,5,20);
  row(OP_D2D,4,all,5,20);
  size_t sizes[]={1,64,1024,4096,16384,65536};
  for(int i=0;i<6;i++){ row(OP_H2D,sizes[i],all,5,20); }
  int two[]={W_SYNC,W_SQ};
  for(int i=0;i<6;i++){ row(OP_PIN,sizes[i],two,2,20); row(OP_STAGED,sizes[i],two,2,20);} 
  }
  /* CPU costs alone */
  printf("== CPU cost alone (batch 200)\n");
  int none[]={W_NONE};
  row(OP_LAUNCH,0,none,1,200); 
  sz=64; row(OP_H2D,64,none,1,200); row(OP_STAGED,64,none,1,200);
  CK(cuStreamSynchronize(s));
  double t0=now(); for(int i=0;i<100000;i++) CK(cuEventRecord(ev,s)); CK(cuStreamSynchronize(s)); printf("cuEventRecord alone %.1f ns\n",(now()-t0)/100000);
  t0=now(); for(int i=0;i<100000;i++) CK(cuEventQuery(ev)); printf("cuEventQuery done %.1f ns\n",(now()-t0)/100000);
  t0=now(); for(int i=0;i<100000;i++) CK(cuStreamQuery(s)); printf("cuStreamQuery idle %.1f ns\n",(now()-t0)/100000);
  t0=now(); for(int i=0;i<100000;i++) CK(cuStreamSynchronize(s)); printf("cuStreamSynchronize idle %.1f ns\n",(now()-t0)/100000);
  CUcontext c2; t0=now(); for(int i=0;i<100000;i++) CK(cuCtxGetCurrent(&c2)); printf("cuCtxGetCurrent %.1f ns\n",(now()-t0)/100000);
  return 0;
}
