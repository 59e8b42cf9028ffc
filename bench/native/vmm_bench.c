/*
 * The native side of vmmkit's GPU benchmark (bench/gpu.ts): the same CUDA
 * driver calls vmmkit's CUDA flavour makes, from C. libcuda is opened with
 * dlopen, so the file builds anywhere cuda.h is (no libcuda.so to link).
 *
 *   gcc -O2 -shared -fPIC -I/usr/local/cuda/include vmm_bench.c -o libvmm_bench.so -ldl
 *   gcc -O2 -DVMM_BENCH_MAIN -I/usr/local/cuda/include vmm_bench.c -o vmm_bench -ldl
 *
 * As a library, bench/gpu.ts loads it through koffi and alternates its rounds
 * with vmmkit's in one process, one context: same conditions for both. As a
 * program, it prints one JSON line of medians.
 *
 * Every function returns microseconds for the whole batch, or a negative
 * CUresult on failure.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static CUresult (*p_cuInit)(unsigned);
static CUresult (*p_cuDeviceGet)(CUdevice *, int);
static CUresult (*p_cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*p_cuCtxSetCurrent)(CUcontext);
static CUresult (*p_cuCtxSynchronize)(void);
static CUresult (*p_cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
static CUresult (*p_cuMemAddressFree)(CUdeviceptr, size_t);
static CUresult (*p_cuMemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                                 unsigned long long);
static CUresult (*p_cuMemRelease)(CUmemGenericAllocationHandle);
static CUresult (*p_cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
static CUresult (*p_cuMemUnmap)(CUdeviceptr, size_t);
static CUresult (*p_cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
static CUresult (*p_cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
static CUresult (*p_cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
static CUresult (*p_cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);

static int g_device = 0;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

#define LOAD(sym, name)                                  \
  do {                                                   \
    *(void **)(&sym) = dlsym(lib, name);                 \
    if (!sym) {                                          \
      fprintf(stderr, "vmm_bench: no %s\n", name);        \
      return -1000;                                      \
    }                                                    \
  } while (0)
#define CHECK(call)              \
  do {                                     \
    CUresult rc_ = (call);                 \
    if (rc_ != CUDA_SUCCESS) return -(double)rc_ - 0.5; \
  } while (0)

/* Open libcuda, retain `device`'s primary context and make it current. 0 on success. */
int vb_init(int device) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "vmm_bench: %s\n", dlerror());
    return -1001;
  }
  LOAD(p_cuInit, "cuInit");
  LOAD(p_cuDeviceGet, "cuDeviceGet");
  LOAD(p_cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  LOAD(p_cuCtxSetCurrent, "cuCtxSetCurrent");
  LOAD(p_cuCtxSynchronize, "cuCtxSynchronize");
  LOAD(p_cuMemAddressReserve, "cuMemAddressReserve");
  LOAD(p_cuMemAddressFree, "cuMemAddressFree");
  LOAD(p_cuMemCreate, "cuMemCreate");
  LOAD(p_cuMemRelease, "cuMemRelease");
  LOAD(p_cuMemMap, "cuMemMap");
  LOAD(p_cuMemUnmap, "cuMemUnmap");
  LOAD(p_cuMemSetAccess, "cuMemSetAccess");
  LOAD(p_cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  LOAD(p_cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  LOAD(p_cuMemcpyDtoD, "cuMemcpyDtoD_v2");
  CUdevice dev;
  CUcontext ctx;
  if (p_cuInit(0) || p_cuDeviceGet(&dev, device) || p_cuDevicePrimaryCtxRetain(&ctx, dev) ||
      p_cuCtxSetCurrent(ctx))
    return -1002;
  g_device = dev;
  return 0;
}

/* `iters` full cycles: reserve, create, map, setAccess (read-write), unmap, release, free. */
double vb_cycle(size_t size, int iters) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = g_device;
  CUmemAccessDesc desc;
  memset(&desc, 0, sizeof desc);
  desc.location = prop.location;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  double t0 = now_us();
  for (int i = 0; i < iters; i++) {
    CUdeviceptr ptr;
    CUmemGenericAllocationHandle h;
    CHECK(p_cuMemAddressReserve(&ptr, size, 0, 0, 0));
    CHECK(p_cuMemCreate(&h, size, &prop, 0));
    CHECK(p_cuMemMap(ptr, size, 0, h, 0));
    CHECK(p_cuMemSetAccess(ptr, size, &desc, 1));
    CHECK(p_cuMemUnmap(ptr, size));
    CHECK(p_cuMemRelease(h));
    CHECK(p_cuMemAddressFree(ptr, size));
  }
  return now_us() - t0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/*
 * `iters` cycles with each of the seven calls timed on its own; writes each
 * call's median microseconds to out[0..6] (reserve, create, map, setAccess,
 * unmap, release, free). Returns 0, or a negative CUresult.
 */
double vb_per_call(size_t size, int iters, double *out) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = g_device;
  CUmemAccessDesc desc;
  memset(&desc, 0, sizeof desc);
  desc.location = prop.location;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  double *t = malloc(sizeof(double) * 7 * (size_t)iters);
  if (!t) return -2.5;
  for (int i = 0; i < iters; i++) {
    CUdeviceptr ptr;
    CUmemGenericAllocationHandle h;
    double *r = t + 7 * (size_t)i, a, b;
#define STEP(k, call)                                    \
  a = now_us();                                          \
  {                                                      \
    CUresult rc_ = (call);                               \
    if (rc_ != CUDA_SUCCESS) {                           \
      free(t);                                           \
      return -(double)rc_ - 0.5;                         \
    }                                                    \
  }                                                      \
  b = now_us();                                          \
  r[k] = b - a;
    STEP(0, p_cuMemAddressReserve(&ptr, size, 0, 0, 0));
    STEP(1, p_cuMemCreate(&h, size, &prop, 0));
    STEP(2, p_cuMemMap(ptr, size, 0, h, 0));
    STEP(3, p_cuMemSetAccess(ptr, size, &desc, 1));
    STEP(4, p_cuMemUnmap(ptr, size));
    STEP(5, p_cuMemRelease(h));
    STEP(6, p_cuMemAddressFree(ptr, size));
#undef STEP
  }
  double *col = malloc(sizeof(double) * (size_t)iters);
  for (int k = 0; k < 7; k++) {
    for (int i = 0; i < iters; i++) col[i] = t[7 * (size_t)i + k];
    qsort(col, iters, sizeof col[0], cmp_double);
    out[k] = iters % 2 ? col[iters / 2] : (col[iters / 2 - 1] + col[iters / 2]) / 2;
  }
  free(col);
  free(t);
  return 0;
}

/* `iters` cycles, each timed on its own: out[i] is cycle i's microseconds. Returns 0, or a negative CUresult. */
double vb_cycle_times(size_t size, int iters, double *out) {
  for (int i = 0; i < iters; i++) {
    double us = vb_cycle(size, 1);
    if (us < 0) return us;
    out[i] = us;
  }
  return 0;
}

static CUdeviceptr g_ptr;
static size_t g_size;
static CUmemGenericAllocationHandle g_handle;

/* Map 2 * size bytes of device memory with read-write access, for the copies. */
int vb_copy_setup(size_t size) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = g_device;
  CUmemAccessDesc desc;
  memset(&desc, 0, sizeof desc);
  desc.location = prop.location;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  g_size = 2 * size;
  if (p_cuMemAddressReserve(&g_ptr, g_size, 0, 0, 0) || p_cuMemCreate(&g_handle, g_size, &prop, 0) ||
      p_cuMemMap(g_ptr, g_size, 0, g_handle, 0) || p_cuMemSetAccess(g_ptr, g_size, &desc, 1))
    return -1;
  return 0;
}

int vb_copy_teardown(void) {
  if (p_cuMemUnmap(g_ptr, g_size) || p_cuMemRelease(g_handle) || p_cuMemAddressFree(g_ptr, g_size)) return -1;
  return 0;
}

/* `iters` copies of `size` bytes, each followed by cuCtxSynchronize. kind 0 HtoD, 1 DtoH, 2 DtoD. */
double vb_copy(int kind, void *host, size_t size, int iters) {
  double t0 = now_us();
  for (int i = 0; i < iters; i++) {
    if (kind == 0) CHECK(p_cuMemcpyHtoD(g_ptr, host, size));
    else if (kind == 1) CHECK(p_cuMemcpyDtoH(host, g_ptr, size));
    else CHECK(p_cuMemcpyDtoD(g_ptr + size, g_ptr, size));
    CHECK(p_cuCtxSynchronize());
  }
  return now_us() - t0;
}

#ifdef VMM_BENCH_MAIN
#define cmp cmp_double
static double median_cycle(size_t size, int iters, int rounds) {
  double r[64];
  for (int i = 0; i < rounds; i++) r[i] = vb_cycle(size, iters) / iters;
  qsort(r, rounds, sizeof r[0], cmp);
  return r[rounds / 2];
}
int main(void) {
  if (vb_init(0)) return 1;
  vb_cycle(2 << 20, 50);
  double c2 = median_cycle(2 << 20, 200, 15);
  vb_cycle((size_t)1 << 30, 3);
  double c1g = median_cycle((size_t)1 << 30, 20, 9);
  size_t n = 64 << 20;
  void *host = malloc(n);
  memset(host, 1, n);
  vb_copy_setup(n);
  double cp[3];
  for (int k = 0; k < 3; k++) {
    vb_copy(k, host, n, 3);
    double r[16];
    for (int i = 0; i < 7; i++) r[i] = vb_copy(k, host, n, 10) / 10;
    qsort(r, 7, sizeof r[0], cmp);
    cp[k] = r[3];
  }
  vb_copy_teardown();
  printf("{\"cycle_2MiB_us\":%.2f,\"cycle_1GiB_us\":%.2f,\"HtoD_64MiB_us\":%.1f,\"DtoH_64MiB_us\":%.1f,"
         "\"DtoD_64MiB_us\":%.1f}\n",
         c2, c1g, cp[0], cp[1], cp[2]);
  return 0;
}
#endif
