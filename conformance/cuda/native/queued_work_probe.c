/*
 * What the CUDA driver does with a copy queued on a stream when the memory it
 * targets changes before the copy runs: the measurement behind Note [Queued
 * work and access changes] in src/backends/sim/process.ts. The stream is held
 * by cuStreamWaitValue32 on a flag in mapped page-locked host memory (no
 * kernel), a 64-byte HtoD copy into 2 MiB of VMM memory is queued behind the
 * wait, then the experiment's change is made while a second thread releases
 * the flag after HOLD_MS: a change that returns only after about HOLD_MS
 * waited for the stream. Then the stream, the context and a read of the bytes
 * are asked. libcuda is opened with dlopen, so it builds with gcc alone:
 *
 *   gcc -O2 -Wall queued_work_probe.c -o queued_work_probe -ldl -lpthread
 *   ./queued_work_probe --list        # the experiment names
 *   ./queued_work_probe NAME          # one experiment: one JSON object on stdout
 *
 * Experiments: control (no change), readOnly (cuMemSetAccess to read-only),
 * unmap (cuMemUnmap of the range), each in a process of its own
 * (conformance/cuda/queued-work-probe.sh): a copy-engine fault may leave the
 * context unusable.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROBE_NAME "queued_work_probe"
#include "probe.h"

#define MiB ((size_t)1 << 20)
#define HOLD_MS 1500
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define CU_STREAM_NON_BLOCKING 0x1
#define CU_STREAM_WAIT_VALUE_GEQ 0x0

static CUresult (*p_cuInit)(unsigned);
static CUresult (*p_cuDeviceGet)(CUdevice *, int);
static CUresult (*p_cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*p_cuCtxSetCurrent)(CUcontext);
static CUresult (*p_cuCtxSynchronize)(void);
static CUresult (*p_cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
static CUresult (*p_cuMemCreate)(CUmemHandle *, size_t, const AllocProp *, unsigned long long);
static CUresult (*p_cuMemMap)(CUdeviceptr, size_t, size_t, CUmemHandle, unsigned long long);
static CUresult (*p_cuMemUnmap)(CUdeviceptr, size_t);
static CUresult (*p_cuMemSetAccess)(CUdeviceptr, size_t, const AccessDesc *, size_t);
static CUresult (*p_cuMemHostAlloc)(void **, size_t, unsigned);
static CUresult (*p_cuMemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned);
static CUresult (*p_cuStreamCreate)(CUstream *, unsigned);
static CUresult (*p_cuStreamWaitValue32)(CUstream, CUdeviceptr, uint32_t, unsigned);
static CUresult (*p_cuStreamQuery)(CUstream);
static CUresult (*p_cuStreamSynchronize)(CUstream);
static CUresult (*p_cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
static CUresult (*p_cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
static CUresult (*p_cuMemAlloc)(CUdeviceptr *, size_t);

static void load(void) {
  void *lib = open_libcuda();
  LOAD(p_cuInit, "cuInit");
  LOAD(p_cuDeviceGet, "cuDeviceGet");
  LOAD(p_cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  LOAD(p_cuCtxSetCurrent, "cuCtxSetCurrent");
  LOAD(p_cuCtxSynchronize, "cuCtxSynchronize");
  LOAD(p_cuMemAddressReserve, "cuMemAddressReserve");
  LOAD(p_cuMemCreate, "cuMemCreate");
  LOAD(p_cuMemMap, "cuMemMap");
  LOAD(p_cuMemUnmap, "cuMemUnmap");
  LOAD(p_cuMemSetAccess, "cuMemSetAccess");
  LOAD(p_cuMemHostAlloc, "cuMemHostAlloc");
  LOAD(p_cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2");
  LOAD(p_cuStreamCreate, "cuStreamCreate");
  LOAD(p_cuStreamWaitValue32, "cuStreamWaitValue32_v2");
  LOAD(p_cuStreamQuery, "cuStreamQuery");
  LOAD(p_cuStreamSynchronize, "cuStreamSynchronize");
  LOAD(p_cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  LOAD(p_cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  LOAD(p_cuMemAlloc, "cuMemAlloc_v2");
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static volatile uint32_t *g_flag;

/* Releases the stream's wait after HOLD_MS. */
static void *release_later(void *unused) {
  (void)unused;
  struct timespec t = {HOLD_MS / 1000, (HOLD_MS % 1000) * 1000000L};
  nanosleep(&t, NULL);
  __atomic_store_n(g_flag, 1u, __ATOMIC_SEQ_CST);
  return NULL;
}

static int first_event = 1;
static void event(const char *name, int code, double ms) {
  printf("%s\n    {\"call\": \"%s\", \"code\": %d, \"ms\": %.1f}", first_event ? "" : ",", name, code, ms);
  first_event = 0;
}

/* Time one call; log it. */
#define CALL(name, expr)                 \
  do {                                   \
    double t0 = now_ms();                \
    int code_ = (expr);                  \
    event(name, code_, now_ms() - t0);   \
  } while (0)

int main(int argc, char **argv) {
  const char *names[] = {"control", "readOnly", "unmap"};
  if (argc == 2 && strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) puts(names[i]);
    return 0;
  }
  if (argc != 2) fail("usage: queued_work_probe --list | NAME");
  const char *name = argv[1];
  load();
  CUdevice dev;
  CUcontext ctx;
  if (p_cuInit(0) || p_cuDeviceGet(&dev, 0) || p_cuDevicePrimaryCtxRetain(&ctx, dev) || p_cuCtxSetCurrent(ctx))
    fail("no context on device 0");

  const size_t size = 2 * MiB;
  CUdeviceptr va;
  CUmemHandle h;
  AllocProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = 1;          /* CU_MEM_ALLOCATION_TYPE_PINNED */
  prop.location.type = 1; /* CU_MEM_LOCATION_TYPE_DEVICE */
  prop.location.id = 0;
  AccessDesc rw = {{1, 0}, 3}, ro = {{1, 0}, 1};
  if (p_cuMemAddressReserve(&va, size, 0, 0, 0) || p_cuMemCreate(&h, size, &prop, 0) ||
      p_cuMemMap(va, size, 0, h, 0) || p_cuMemSetAccess(va, size, &rw, 1))
    fail("no VMM memory");

  void *host_flag;
  CUdeviceptr dev_flag;
  if (p_cuMemHostAlloc(&host_flag, 4096, CU_MEMHOSTALLOC_DEVICEMAP) ||
      p_cuMemHostGetDevicePointer(&dev_flag, host_flag, 0))
    fail("no mapped host flag");
  g_flag = (volatile uint32_t *)host_flag;
  *g_flag = 0;
  void *src;
  if (p_cuMemHostAlloc(&src, 64, 0)) fail("no page-locked source");
  memset(src, 7, 64);

  printf("{\"experiment\": \"%s\", \"holdMs\": %d, \"events\": [", name, HOLD_MS);
  CUstream s;
  CALL("cuStreamCreate(NON_BLOCKING)", p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CALL("cuStreamWaitValue32(flag >= 1)", p_cuStreamWaitValue32(s, dev_flag, 1, CU_STREAM_WAIT_VALUE_GEQ));
  CALL("cuMemcpyHtoDAsync(64 bytes of 7)", p_cuMemcpyHtoDAsync(va, src, 64, s));
  CALL("cuStreamQuery(held)", p_cuStreamQuery(s));

  pthread_t releaser;
  double start = now_ms();
  pthread_create(&releaser, NULL, release_later, NULL);
  if (strcmp(name, "readOnly") == 0) CALL("cuMemSetAccess(read-only)", p_cuMemSetAccess(va, size, &ro, 1));
  else if (strcmp(name, "unmap") == 0) CALL("cuMemUnmap", p_cuMemUnmap(va, size));
  else if (strcmp(name, "control") != 0) fail("no such experiment");
  double change_done = now_ms() - start;
  CALL("cuStreamSynchronize", p_cuStreamSynchronize(s));
  pthread_join(releaser, NULL);
  CALL("cuCtxSynchronize", p_cuCtxSynchronize());

  unsigned char back[64];
  memset(back, 0xaa, sizeof back);
  int landed = -1;
  if (strcmp(name, "unmap") != 0) {
    CALL("cuMemcpyDtoH", p_cuMemcpyDtoH(back, va, 64));
    landed = 1;
    for (int i = 0; i < 64; i++)
      if (back[i] != 7) landed = 0;
  }
  CUdeviceptr more;
  CALL("cuMemAlloc(1 MiB) afterwards", p_cuMemAlloc(&more, MiB));
  printf("\n  ], \"changeReturnedAfterMs\": %.1f, \"waitedForTheStream\": %s, \"bytesLanded\": %d, \"firstByte\": %d}\n",
         change_done, change_done >= HOLD_MS * 0.9 ? "true" : "false", landed, back[0]);
  return 0;
}
