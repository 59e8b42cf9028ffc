/*
 * The seven VMM cycle functions of libcuda as a stand-in that remembers how
 * it was called: test/backends/cycle-calls.test.ts builds it, calls it through
 * koffi and through the fast-call addon, and compares what arrived.
 * stub_last() copies the last call's function number (1-7, in the addon's
 * order), its integer arguments and the 32 bytes of its struct argument.
 * Each call answers a code worked out from its arguments, so a code that
 * comes back wrong is seen too.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef unsigned long long u64;

static int last_fn;
static u64 last_args[5];
static unsigned char last_struct[32];
static u64 next_out = 0x7f0000200000ull;

static int answer(int fn, u64 a, u64 b, u64 c, u64 d, u64 e) {
  last_fn = fn;
  last_args[0] = a;
  last_args[1] = b;
  last_args[2] = c;
  last_args[3] = d;
  last_args[4] = e;
  return (int)((a ^ b ^ c ^ d ^ e ^ (u64)fn) % 1000);
}

int cuMemAddressReserve(u64 *ptr, size_t size, size_t alignment, u64 addr, u64 flags) {
  *ptr = next_out;
  memset(last_struct, 0, sizeof last_struct);
  return answer(1, size, alignment, addr, flags, 0);
}
int cuMemCreate(u64 *handle, size_t size, const void *prop, u64 flags) {
  *handle = next_out;
  memcpy(last_struct, prop, 32);
  return answer(2, size, flags, 0, 0, 0);
}
int cuMemMap(u64 ptr, size_t size, size_t offset, u64 handle, u64 flags) {
  memset(last_struct, 0, sizeof last_struct);
  return answer(3, ptr, size, offset, handle, flags);
}
int cuMemSetAccess(u64 ptr, size_t size, const void *desc, size_t count) {
  memset(last_struct, 0, sizeof last_struct);
  memcpy(last_struct, desc, 12 * (count < 2 ? count : 2));
  return answer(4, ptr, size, count, 0, 0);
}
int cuMemUnmap(u64 ptr, size_t size) {
  memset(last_struct, 0, sizeof last_struct);
  return answer(5, ptr, size, 0, 0, 0);
}
int cuMemRelease(u64 handle) {
  memset(last_struct, 0, sizeof last_struct);
  return answer(6, handle, 0, 0, 0, 0);
}
int cuMemAddressFree(u64 ptr, size_t size) {
  memset(last_struct, 0, sizeof last_struct);
  return answer(7, ptr, size, 0, 0, 0);
}

int stub_last(u64 *args, unsigned char *bytes) {
  memcpy(args, last_args, sizeof last_args);
  memcpy(bytes, last_struct, sizeof last_struct);
  return last_fn;
}
void stub_set_out(u64 value) { next_out = value; }
