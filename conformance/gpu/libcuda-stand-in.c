/*
 * A stand-in for libcuda.so.1 with no GPU behind it: a "null driver" that the
 * real CUDA backend loads through koffi like the real one (stand-in-libcuda.ts
 * beside it builds it). It lets machines without a GPU run the backend's real
 * FFI paths, koffi's and the fast-call addon's (Note [Fast cycle calls]), and
 * measure vmmkit's layers against C over a driver that costs nothing.
 *
 *  - The calls the backend's start-up and the VMM cycle need answer as one
 *    H200 would in shape (one device, 2 MiB granularity, fresh addresses and
 *    handles). Every other DRIVER_API function is a weak default made by
 *    stand-in-libcuda.ts that answers CUDA_SUCCESS and writes nothing.
 *  - The seven cycle functions remember how they were called: stand_in_last()
 *    copies the last call's function number (1-7: reserve, create, map,
 *    setAccess, unmap, release, free), its integer arguments and the 32 bytes
 *    of its struct argument, and each answers a code worked out from its
 *    arguments (0 for the cycle's own), so a code that comes back wrong shows.
 *  - stand_in_set_thrash(kib) makes each of the seven touch that many KiB of
 *    memory of their own, as the real driver's work leaves the caches cold
 *    for the caller (Note [Process states] in bench/gpu-paired.ts).
 *  - vb_init and vb_cycle are bench/native/vmm_bench.c's native side, over
 *    this library's own functions.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

typedef unsigned long long u64;
typedef int CUresult;

static int last_fn;
static u64 last_args[5];
static unsigned char last_struct[32];
static u64 next_address = 0x7f0000200000ull;
static u64 next_handle = 0x1000;
static u64 out_override;
static u64 current_context;
static size_t thrash_bytes;
static unsigned char thrash_area[32u << 20];
static unsigned thrash_round;

/* Touch thrash_bytes of thrash_area, a line at a time, from where the last call stopped. */
static void thrash(void) {
  size_t at = (size_t)thrash_round * thrash_bytes % sizeof thrash_area;
  for (size_t i = 0; i < thrash_bytes; i += 64) thrash_area[(at + i) % sizeof thrash_area] += 1;
  thrash_round++;
}

static int answer(int fn, u64 a, u64 b, u64 c, u64 d, u64 e) {
  last_fn = fn;
  last_args[0] = a;
  last_args[1] = b;
  last_args[2] = c;
  last_args[3] = d;
  last_args[4] = e;
  if (thrash_bytes) thrash();
  /* What a real cycle passes (flags 0, offset 0, one descriptor) succeeds; the callers give others a code from them. */
  return (int)((a ^ b ^ c ^ d ^ e ^ (u64)fn) % 1000);
}

static u64 fresh(u64 *counter, u64 step) {
  if (out_override) return out_override;
  u64 v = *counter;
  *counter += step;
  return v;
}

CUresult cuMemAddressReserve(u64 *ptr, size_t size, size_t alignment, u64 addr, u64 flags) {
  *ptr = fresh(&next_address, 0x200000);
  memset(last_struct, 0, sizeof last_struct);
  int code = answer(1, size, alignment, addr, flags, 0);
  return flags == 0 && (alignment & (alignment - 1)) == 0 ? 0 : code;
}
CUresult cuMemCreate(u64 *handle, size_t size, const void *prop, u64 flags) {
  *handle = fresh(&next_handle, 1);
  memcpy(last_struct, prop, 32);
  int code = answer(2, size, flags, 0, 0, 0);
  return flags == 0 ? 0 : code;
}
CUresult cuMemMap(u64 ptr, size_t size, size_t offset, u64 handle, u64 flags) {
  memset(last_struct, 0, sizeof last_struct);
  int code = answer(3, ptr, size, offset, handle, flags);
  return offset == 0 && flags == 0 ? 0 : code;
}
CUresult cuMemSetAccess(u64 ptr, size_t size, const void *desc, size_t count) {
  memset(last_struct, 0, sizeof last_struct);
  memcpy(last_struct, desc, 12 * (count < 2 ? count : 2));
  int code = answer(4, ptr, size, count, 0, 0);
  return count == 1 ? 0 : code;
}
CUresult cuMemUnmap(u64 ptr, size_t size) {
  memset(last_struct, 0, sizeof last_struct);
  answer(5, ptr, size, 0, 0, 0);
  return 0;
}
CUresult cuMemRelease(u64 handle) {
  memset(last_struct, 0, sizeof last_struct);
  answer(6, handle, 0, 0, 0, 0);
  return 0;
}
CUresult cuMemAddressFree(u64 ptr, size_t size) {
  memset(last_struct, 0, sizeof last_struct);
  answer(7, ptr, size, 0, 0, 0);
  return 0;
}

/* ---- start-up: one device shaped like an H200, its primary context. */

CUresult cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }
CUresult cuDriverGetVersion(int *version) { *version = 13000; return 0; }
CUresult cuDeviceGetCount(int *count) { *count = 1; return 0; }
CUresult cuDeviceGet(int *device, int ordinal) {
  if (ordinal != 0) return 101; /* CUDA_ERROR_INVALID_DEVICE */
  *device = 0;
  return 0;
}
CUresult cuDeviceGetName(char *name, int length, int device) {
  strncpy(name, "vmmkit libcuda stand-in", (size_t)length);
  return device == 0 ? 0 : 101;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, int device) {
  *bytes = 150109880320ull;
  return device == 0 ? 0 : 101;
}
CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  *value = 0;
  return device == 0 && attribute > 0 && attribute < 148 ? 0 : 1;
}
CUresult cuDeviceCanAccessPeer(int *can, int device, int peer) {
  *can = 0;
  return 0;
}
CUresult cuMemGetAllocationGranularity(size_t *granularity, const void *prop, int option) {
  *granularity = 2u << 20;
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(u64 *context, int device) {
  if (device != 0) return 101;
  *context = 0xc0ffee000ull;
  return 0;
}
CUresult cuCtxSetCurrent(u64 context) { current_context = context; return 0; }
CUresult cuCtxGetCurrent(u64 *context) { *context = current_context; return 0; }

/* ---- what tests and benchmarks ask of the stand-in. */

int stand_in_last(u64 *args, unsigned char *bytes) {
  memcpy(args, last_args, sizeof last_args);
  memcpy(bytes, last_struct, sizeof last_struct);
  return last_fn;
}
/* The next out-parameters of reserve and create: this value (0: fresh ones again). */
void stand_in_set_out(u64 value) { out_override = value; }
void stand_in_set_thrash(unsigned kib) { thrash_bytes = (size_t)kib << 10; }

/* ---- vmm_bench.c's native side over this library. */

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int vb_init(int device) {
  u64 context;
  return cuInit(0) || cuDevicePrimaryCtxRetain(&context, device) || cuCtxSetCurrent(context) ? -1002 : 0;
}

double vb_cycle(size_t size, int iters) {
  int prop[8] = {1, 0, 1, 0, 0, 0, 0, 0}; /* PINNED, on device 0 */
  int desc[3] = {1, 0, 3};                /* device 0, read-write */
  double t0 = now_us();
  for (int i = 0; i < iters; i++) {
    u64 ptr, handle;
    int rc = cuMemAddressReserve(&ptr, size, 0, 0, 0) || cuMemCreate(&handle, size, prop, 0) ||
             cuMemMap(ptr, size, 0, handle, 0) || cuMemSetAccess(ptr, size, desc, 1) || cuMemUnmap(ptr, size) ||
             cuMemRelease(handle) || cuMemAddressFree(ptr, size);
    if (rc) return -1.5;
  }
  return now_us() - t0;
}
