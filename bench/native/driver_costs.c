/*
 * What each CUDA driver VMM call costs on this GPU, by size, for the replay
 * tool's cost model (bench/gpu-costs.sh builds and runs it and writes
 * bench/results/h200-driver-costs.json). libcuda is opened with dlopen, as in
 * vmm_bench.c, so it builds wherever cuda.h is:
 *
 *   gcc -O2 -I/usr/local/cuda/include driver_costs.c -o driver_costs -ldl
 *
 * Prints one JSON object: { "deviceName", "cudaDriverVersion", "reps": [[bytes, n], ...],
 * "calls": { name: [[bytes, median us], ...] }, "perHandle": { name: [[handles, median us], ...] } },
 * the per-handle figures over handles of 2 MiB each.
 *
 * Note [How each call is timed]
 * Every call is timed on its own with CLOCK_MONOTONIC around it, inside a
 * full cycle at one size: reserve, create, map, setAccess (read-write),
 * cuCtxSynchronize (nothing queued), unmap, release, addressFree, then
 * cuMemAlloc and cuMemFree of the same size. So unmap is timed on a mapping
 * that has access (as an allocator's unmap is), release on an unmapped
 * handle (the memory goes back then), and cuCtxSynchronize with that
 * size mapped: it shows whether idle synchronisation depends on what is
 * mapped. Each size first runs a few untimed cycles. The per-handle table
 * maps N separately created 2 MiB handles side by side in one reservation
 * and times one cuMemSetAccess and one cuMemUnmap over all N.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static CUresult (*p_cuInit)(unsigned);
static CUresult (*p_cuDriverGetVersion)(int *);
static CUresult (*p_cuDeviceGet)(CUdevice *, int);
static CUresult (*p_cuDeviceGetName)(char *, int, CUdevice);
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
static CUresult (*p_cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*p_cuMemFree)(CUdeviceptr);

#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

/* The cycle's calls, in the order they run (Note [How each call is timed]). */
enum { RESERVE, CREATE, MAP, SET_ACCESS, SYNC, UNMAP, RELEASE, ADDRESS_FREE, ALLOC, FREE, NCALLS };
static const char *const CALL_NAMES[NCALLS] = {
    "cuMemAddressReserve", "cuMemCreate", "cuMemMap",  "cuMemSetAccess", "cuCtxSynchronize",
    "cuMemUnmap",          "cuMemRelease", "cuMemAddressFree", "cuMemAlloc", "cuMemFree",
};

static CUmemAllocationProp g_prop;
static CUmemAccessDesc g_desc;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void die(const char *what, CUresult rc) {
  fprintf(stderr, "driver_costs: %s failed with CUresult %d\n", what, (int)rc);
  exit(1);
}

/* Runs `call`, adds its microseconds to *t (when t is not NULL), exits on failure. */
#define TIMED(t, call)                                \
  do {                                                \
    double a_ = now_us();                             \
    CUresult rc_ = (call);                            \
    double b_ = now_us();                             \
    if (rc_ != CUDA_SUCCESS) die(#call, rc_);         \
    if (t) *(double *)(t) = b_ - a_;                  \
  } while (0)

#define LOAD(sym, name)                                   \
  do {                                                    \
    *(void **)(&sym) = dlsym(lib, name);                  \
    if (!sym) {                                           \
      fprintf(stderr, "driver_costs: no %s\n", name);      \
      exit(1);                                            \
    }                                                     \
  } while (0)

static void init(char *name, int *version) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "driver_costs: %s\n", dlerror());
    exit(1);
  }
  LOAD(p_cuInit, "cuInit");
  LOAD(p_cuDriverGetVersion, "cuDriverGetVersion");
  LOAD(p_cuDeviceGet, "cuDeviceGet");
  LOAD(p_cuDeviceGetName, "cuDeviceGetName");
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
  LOAD(p_cuMemAlloc, "cuMemAlloc_v2");
  LOAD(p_cuMemFree, "cuMemFree_v2");
  CUdevice dev;
  CUcontext ctx;
  CUresult rc;
  if ((rc = p_cuInit(0))) die("cuInit", rc);
  if ((rc = p_cuDriverGetVersion(version))) die("cuDriverGetVersion", rc);
  if ((rc = p_cuDeviceGet(&dev, 0))) die("cuDeviceGet", rc);
  if ((rc = p_cuDeviceGetName(name, 256, dev))) die("cuDeviceGetName", rc);
  if ((rc = p_cuDevicePrimaryCtxRetain(&ctx, dev))) die("cuDevicePrimaryCtxRetain", rc);
  if ((rc = p_cuCtxSetCurrent(ctx))) die("cuCtxSetCurrent", rc);
  memset(&g_prop, 0, sizeof g_prop);
  g_prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  g_prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  g_prop.location.id = dev;
  memset(&g_desc, 0, sizeof g_desc);
  g_desc.location = g_prop.location;
  g_desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
}

/* One full cycle at `size`; t[k] gets call k's microseconds (t may be NULL: a warm-up). */
static void cycle(size_t size, double *t) {
  CUdeviceptr va, p;
  CUmemGenericAllocationHandle h;
  double *at[NCALLS];
  for (int k = 0; k < NCALLS; k++) at[k] = t ? &t[k] : NULL;
  TIMED(at[RESERVE], p_cuMemAddressReserve(&va, size, 0, 0, 0));
  TIMED(at[CREATE], p_cuMemCreate(&h, size, &g_prop, 0));
  TIMED(at[MAP], p_cuMemMap(va, size, 0, h, 0));
  TIMED(at[SET_ACCESS], p_cuMemSetAccess(va, size, &g_desc, 1));
  TIMED(at[SYNC], p_cuCtxSynchronize());
  TIMED(at[UNMAP], p_cuMemUnmap(va, size));
  TIMED(at[RELEASE], p_cuMemRelease(h));
  TIMED(at[ADDRESS_FREE], p_cuMemAddressFree(va, size));
  TIMED(at[ALLOC], p_cuMemAlloc(&p, size));
  TIMED(at[FREE], p_cuMemFree(p));
}

/* N separate 2 MiB handles mapped side by side; t[0] one setAccess over all, t[1] one unmap over all. */
static void per_handle(int n, double *t) {
  size_t g = 2 * MiB, size = (size_t)n * g;
  CUdeviceptr va;
  CUmemGenericAllocationHandle *h = malloc(sizeof *h * (size_t)n);
  if (!h) die("malloc", CUDA_ERROR_OUT_OF_MEMORY);
  TIMED((double *)NULL, p_cuMemAddressReserve(&va, size, 0, 0, 0));
  for (int i = 0; i < n; i++) {
    TIMED((double *)NULL, p_cuMemCreate(&h[i], g, &g_prop, 0));
    TIMED((double *)NULL, p_cuMemMap(va + (size_t)i * g, g, 0, h[i], 0));
  }
  TIMED(t ? &t[0] : NULL, p_cuMemSetAccess(va, size, &g_desc, 1));
  TIMED(t ? &t[1] : NULL, p_cuMemUnmap(va, size));
  for (int i = 0; i < n; i++) TIMED((double *)NULL, p_cuMemRelease(h[i]));
  TIMED((double *)NULL, p_cuMemAddressFree(va, size));
  free(h);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median of column k of an n x stride table. */
static double median_of(const double *t, int n, int stride, int k) {
  double *col = malloc(sizeof(double) * (size_t)n);
  if (!col) die("malloc", CUDA_ERROR_OUT_OF_MEMORY);
  for (int i = 0; i < n; i++) col[i] = t[(size_t)i * stride + k];
  qsort(col, (size_t)n, sizeof col[0], cmp_double);
  double m = n % 2 ? col[n / 2] : (col[n / 2 - 1] + col[n / 2]) / 2;
  free(col);
  return m;
}

/* The q-quantile (nearest rank) of column k of an n x stride table. */
static double quantile_of(const double *t, int n, int stride, int k, double q) {
  double *col = malloc(sizeof(double) * (size_t)n);
  if (!col) die("malloc", CUDA_ERROR_OUT_OF_MEMORY);
  for (int i = 0; i < n; i++) col[i] = t[(size_t)i * stride + k];
  qsort(col, (size_t)n, sizeof col[0], cmp_double);
  int at = (int)(q * (n - 1) + 0.5);
  double v = col[at];
  free(col);
  return v;
}

/* Repetitions at a size: many where a call takes microseconds, fewer where a cycle takes milliseconds. */
static int reps_for(size_t size) {
  if (size <= 64 * MiB) return 201;
  if (size <= 512 * MiB) return 101;
  return 41;
}

int main(void) {
  static const size_t sizes[] = {2 * MiB,   4 * MiB,   8 * MiB, 16 * MiB, 32 * MiB, 64 * MiB, 128 * MiB,
                                 256 * MiB, 512 * MiB, 1 * GiB, 2 * GiB,  4 * GiB,  8 * GiB};
  static const int handles[] = {1, 4, 16, 64};
  enum { NSIZES = sizeof sizes / sizeof sizes[0], NHANDLES = sizeof handles / sizeof handles[0] };
  char name[256] = {0};
  int version = 0;
  init(name, &version);

  // Warm the driver's paths once (module and page-table structures), untimed.
  for (int i = 0; i < 100; i++) cycle(2 * MiB, NULL);

  static double med[NSIZES][NCALLS];
  for (int s = 0; s < NSIZES; s++) {
    int n = reps_for(sizes[s]);
    double *t = malloc(sizeof(double) * NCALLS * (size_t)n);
    if (!t) die("malloc", CUDA_ERROR_OUT_OF_MEMORY);
    for (int i = 0; i < 5; i++) cycle(sizes[s], NULL);
    for (int i = 0; i < n; i++) cycle(sizes[s], t + (size_t)i * NCALLS);
    for (int k = 0; k < NCALLS; k++) med[s][k] = median_of(t, n, NCALLS, k);
    // The spread of the costliest calls, on stderr only: where a median stands apart, is it steady?
    fprintf(stderr, "%6zu MiB (%d reps):", sizes[s] / MiB, n);
    static const int shown[] = {CREATE, SET_ACCESS, RELEASE, ALLOC, FREE};
    for (int j = 0; j < (int)(sizeof shown / sizeof shown[0]); j++) {
      int k = shown[j];
      fprintf(stderr, " %s %.1f/%.1f/%.1f", CALL_NAMES[k] + 2, quantile_of(t, n, NCALLS, k, 0.1), med[s][k],
              quantile_of(t, n, NCALLS, k, 0.9));
    }
    fprintf(stderr, " (p10/p50/p90 us)\n");
    free(t);
  }

  static double hmed[NHANDLES][2];
  for (int j = 0; j < NHANDLES; j++) {
    int n = handles[j] >= 64 ? 41 : 101;
    double *t = malloc(sizeof(double) * 2 * (size_t)n);
    if (!t) die("malloc", CUDA_ERROR_OUT_OF_MEMORY);
    for (int i = 0; i < 3; i++) per_handle(handles[j], NULL);
    for (int i = 0; i < n; i++) per_handle(handles[j], t + 2 * (size_t)i);
    hmed[j][0] = median_of(t, n, 2, 0);
    hmed[j][1] = median_of(t, n, 2, 1);
    free(t);
  }

  printf("{\"deviceName\":\"%s\",\"cudaDriverVersion\":%d,\"reps\":[", name, version);
  for (int s = 0; s < NSIZES; s++) printf("%s[%zu,%d]", s ? "," : "", sizes[s], reps_for(sizes[s]));
  printf("],\"calls\":{");
  for (int k = 0; k < NCALLS; k++) {
    printf("%s\"%s\":[", k ? "," : "", CALL_NAMES[k]);
    for (int s = 0; s < NSIZES; s++) printf("%s[%zu,%.2f]", s ? "," : "", sizes[s], med[s][k]);
    printf("]");
  }
  printf("},\"perHandle\":{");
  static const char *const hnames[2] = {"cuMemSetAccess", "cuMemUnmap"};
  for (int c = 0; c < 2; c++) {
    printf("%s\"%s\":[", c ? "," : "", hnames[c]);
    for (int j = 0; j < NHANDLES; j++) printf("%s[%d,%.2f]", j ? "," : "", handles[j], hmed[j][c]);
    printf("]");
  }
  printf("}}\n");
  return 0;
}
