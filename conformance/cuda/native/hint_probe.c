/*
 * Where the CUDA driver places reservations, and when it honours an address
 * hint (cuMemAddressReserve's `addr`): the measurements behind Note [Driver VA
 * placement] in src/backends/sim/va-allocator.ts. conformance/cuda/hint-probe.sh
 * builds it, runs each experiment in a process of its own and writes
 * conformance/results/h200-hint-probe.json. libcuda is opened with dlopen and
 * the few types are declared here, so it builds with gcc alone:
 *
 *   gcc -O2 -Wall hint_probe.c -o hint_probe -ldl
 *   ./hint_probe --list              # the experiment names
 *   ./hint_probe NAME                # one experiment: one JSON object on stdout
 *
 * Each reserve is logged with its size, alignment, hint and answer; addresses
 * are raw (this is a probe of one machine), with offsets from the experiment's
 * reference address (`probe`) in MiB beside them. Where it helps, the
 * process's own mappings (/proc/self/maps) of 1 MiB or more that a call added
 * or removed are logged too: they show whether the driver takes address space
 * from the OS for a reservation and gives it back on free.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_NAME "hint_probe"
#include "probe.h"

static CUresult (*p_cuInit)(unsigned);
static CUresult (*p_cuDriverGetVersion)(int *);
static CUresult (*p_cuDeviceGet)(CUdevice *, int);
static CUresult (*p_cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*p_cuCtxSetCurrent)(CUcontext);
static CUresult (*p_cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
static CUresult (*p_cuMemAddressFree)(CUdeviceptr, size_t);
static CUresult (*p_cuMemCreate)(CUmemHandle *, size_t, const AllocProp *, unsigned long long);
static CUresult (*p_cuMemRelease)(CUmemHandle);
static CUresult (*p_cuMemMap)(CUdeviceptr, size_t, size_t, CUmemHandle, unsigned long long);
static CUresult (*p_cuMemUnmap)(CUdeviceptr, size_t);
static CUresult (*p_cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*p_cuMemFree)(CUdeviceptr);

#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

static int g_version;
static CUdevice g_dev;

static void init(void) {
  void *lib = open_libcuda();
  LOAD(p_cuInit, "cuInit");
  LOAD(p_cuDriverGetVersion, "cuDriverGetVersion");
  LOAD(p_cuDeviceGet, "cuDeviceGet");
  LOAD(p_cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  LOAD(p_cuCtxSetCurrent, "cuCtxSetCurrent");
  LOAD(p_cuMemAddressReserve, "cuMemAddressReserve");
  LOAD(p_cuMemAddressFree, "cuMemAddressFree");
  LOAD(p_cuMemCreate, "cuMemCreate");
  LOAD(p_cuMemRelease, "cuMemRelease");
  LOAD(p_cuMemMap, "cuMemMap");
  LOAD(p_cuMemUnmap, "cuMemUnmap");
  LOAD(p_cuMemAlloc, "cuMemAlloc_v2");
  LOAD(p_cuMemFree, "cuMemFree_v2");
  CUcontext ctx;
  if (p_cuInit(0)) fail("cuInit");
  if (p_cuDriverGetVersion(&g_version)) fail("cuDriverGetVersion");
  if (p_cuDeviceGet(&g_dev, 0)) fail("cuDeviceGet");
  if (p_cuDevicePrimaryCtxRetain(&ctx, g_dev)) fail("cuDevicePrimaryCtxRetain");
  if (p_cuCtxSetCurrent(ctx)) fail("cuCtxSetCurrent");
}

// ------------------------------------------------------------------ JSON out

static int g_first = 1; /* no comma before the next event */

static void event_open(const char *op) {
  printf("%s\n{\"op\":\"%s\"", g_first ? "" : ",", op);
  g_first = 0;
}
static void event_close(void) { printf("}"); }
static void kv_hex(const char *k, unsigned long long v) { printf(",\"%s\":\"0x%llx\"", k, v); }
static void kv_int(const char *k, long long v) { printf(",\"%s\":%lld", k, v); }
static void kv_mib(const char *k, long long bytes) {
  if (bytes % (long long)MiB == 0)
    printf(",\"%s\":%lld", k, bytes / (long long)MiB);
  else
    printf(",\"%s\":%.6f", k, (double)bytes / (double)MiB);
}
static void kv_str(const char *k, const char *v) { printf(",\"%s\":\"%s\"", k, v); }
static void kv_bool(const char *k, int v) { printf(",\"%s\":%s", k, v ? "true" : "false"); }

/* log2 of the largest power of two dividing a (64 for 0). */
static int align_log2(unsigned long long a) { return a ? __builtin_ctzll(a) : 64; }

// ------------------------------------------------------------------ /proc/self/maps

typedef struct {
  unsigned long long start, end;
  char perms[8];
} Area;
typedef struct {
  Area *a;
  int n;
} Maps;

/* The process's mappings of at least 1 MiB. */
static Maps maps_read(void) {
  Maps m = {malloc(sizeof(Area) * 8192), 0};
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f || !m.a) return m;
  char line[1024];
  while (fgets(line, sizeof line, f) && m.n < 8192) {
    Area x;
    if (sscanf(line, "%llx-%llx %7s", &x.start, &x.end, x.perms) != 3) continue;
    if (x.end - x.start >= MiB) m.a[m.n++] = x;
  }
  fclose(f);
  return m;
}
static int maps_has(const Maps *m, const Area *x) {
  for (int i = 0; i < m->n; i++)
    if (m->a[i].start == x->start && m->a[i].end == x->end && !strcmp(m->a[i].perms, x->perms)) return 1;
  return 0;
}
static void print_areas(const char *k, const Maps *from, const Maps *notIn) {
  printf(",\"%s\":[", k);
  int c = 0;
  for (int i = 0; i < from->n; i++) {
    if (maps_has(notIn, &from->a[i])) continue;
    printf("%s[\"0x%llx\",\"0x%llx\",\"%s\"]", c++ ? "," : "", from->a[i].start, from->a[i].end, from->a[i].perms);
  }
  printf("]");
}
/* Mappings added and removed between two snapshots. */
static void kv_maps_diff(const Maps *before, const Maps *after) {
  print_areas("mapsAdded", after, before);
  print_areas("mapsRemoved", before, after);
}
/* The mapping holding address `a`, if any. */
static void kv_area_of(const char *k, unsigned long long a) {
  Maps m = maps_read();
  for (int i = 0; i < m.n; i++)
    if (m.a[i].start <= a && a < m.a[i].end) {
      printf(",\"%s\":[\"0x%llx\",\"0x%llx\",\"%s\"]", k, m.a[i].start, m.a[i].end, m.a[i].perms);
      free(m.a);
      return;
    }
  printf(",\"%s\":null", k);
  free(m.a);
}

// ------------------------------------------------------------------ logged calls

static int g_maps = 1;          /* log maps diffs around reserve and free */
static unsigned long long g_ref; /* the experiment's reference address; offsets are from it */

/* cuMemAddressReserve, logged; returns the address (0 on failure). */
static CUdeviceptr reserve(const char *tag, size_t size, size_t align, CUdeviceptr hint) {
  Maps before = g_maps ? maps_read() : (Maps){0, 0};
  CUdeviceptr p = 0;
  CUresult rc = p_cuMemAddressReserve(&p, size, align, hint, 0);
  event_open("reserve");
  if (tag) kv_str("tag", tag);
  kv_mib("size", (long long)size);
  if (align) kv_mib("align", (long long)align);
  if (hint) {
    kv_hex("hint", hint);
    if (g_ref) kv_mib("hintAt", (long long)(hint - g_ref));
  }
  kv_int("rc", rc);
  if (rc == 0) {
    kv_hex("got", p);
    kv_int("alignLog2", align_log2(p));
    if (g_ref) kv_mib("at", (long long)(p - g_ref));
    if (hint) kv_bool("gotHint", p == hint);
  }
  if (g_maps) {
    Maps after = maps_read();
    kv_maps_diff(&before, &after);
    free(after.a);
    free(before.a);
  }
  event_close();
  return rc == 0 ? p : 0;
}

static void address_free(const char *tag, CUdeviceptr p, size_t size) {
  if (!p) return;
  Maps before = g_maps ? maps_read() : (Maps){0, 0};
  CUresult rc = p_cuMemAddressFree(p, size);
  event_open("free");
  if (tag) kv_str("tag", tag);
  kv_hex("va", p);
  if (g_ref) kv_mib("at", (long long)(p - g_ref));
  kv_mib("size", (long long)size);
  kv_int("rc", rc);
  if (g_maps) {
    Maps after = maps_read();
    kv_maps_diff(&before, &after);
    free(after.a);
    free(before.a);
  }
  event_close();
}

/* A range `size` bytes long that the driver would hand out now, reserved and freed (cases.ts's unreserved). */
static CUdeviceptr unreserved(size_t size) {
  CUdeviceptr p = reserve("probe", size, 0, 0);
  address_free("probe", p, size);
  return p;
}

static void note(const char *text) {
  event_open("note");
  kv_str("text", text);
  event_close();
}

// ------------------------------------------------------------------ experiments

/* Un-hinted reserves of growing sizes, all kept live: bases, alignment, gaps; then freed. */
static void ex_placement_ascending(void) {
  static const size_t mib[] = {2, 2, 2, 4, 4, 8, 8, 16, 16, 24, 32, 32, 48, 64, 64, 128, 128, 256, 512, 1024, 2048,
                               4096, 2, 2, 32, 2};
  enum { N = sizeof mib / sizeof mib[0] };
  CUdeviceptr p[N];
  for (int i = 0; i < N; i++) p[i] = reserve(NULL, mib[i] * MiB, 0, 0);
  for (int i = N - 1; i >= 0; i--) address_free(NULL, p[i], mib[i] * MiB);
  // cuMemAlloc's addresses beside them: the same heap or another?
  CUdeviceptr a = 0, b = 0;
  int rca = p_cuMemAlloc(&a, 2 * MiB), rcb = p_cuMemAlloc(&b, 64 * MiB);
  event_open("cuMemAlloc");
  kv_int("rc2MiB", rca);
  kv_hex("got2MiB", a);
  kv_int("rc64MiB", rcb);
  kv_hex("got64MiB", b);
  event_close();
  CUdeviceptr r = reserve("afterAlloc", 2 * MiB, 0, 0);
  address_free(NULL, r, 2 * MiB);
  if (a) p_cuMemFree(a);
  if (b) p_cuMemFree(b);
}

static void ex_placement_descending(void) {
  static const size_t mib[] = {1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 2, 2, 2, 32, 32, 64};
  enum { N = sizeof mib / sizeof mib[0] };
  CUdeviceptr p[N];
  for (int i = 0; i < N; i++) p[i] = reserve(NULL, mib[i] * MiB, 0, 0);
  for (int i = 0; i < N; i++) address_free(NULL, p[i], mib[i] * MiB);
}

/* Small and large reserves alternating: do small ones fill a shared block while large ones go elsewhere? */
static void ex_placement_interleaved(void) {
  static const size_t mib[] = {2, 64, 2, 64, 2, 32, 2, 32, 4, 16, 4, 16, 2, 30, 2, 18, 2, 34, 2};
  enum { N = sizeof mib / sizeof mib[0] };
  CUdeviceptr p[N];
  for (int i = 0; i < N; i++) p[i] = reserve(NULL, mib[i] * MiB, 0, 0);
  for (int i = 0; i < N; i++) address_free(NULL, p[i], mib[i] * MiB);
}

/* Reserve S, free, reserve S again (same base?), then a 2 MiB one (where?). */
static void ex_reuse(void) {
  static const size_t mib[] = {2, 4, 8, 16, 18, 24, 30, 32, 34, 48, 64, 128, 512, 2048};
  for (unsigned i = 0; i < sizeof mib / sizeof mib[0]; i++) {
    size_t s = mib[i] * MiB;
    CUdeviceptr a = reserve("first", s, 0, 0);
    g_ref = a;
    address_free("first", a, s);
    CUdeviceptr b = reserve("again", s, 0, 0);
    address_free("again", b, s);
    CUdeviceptr c = reserve("small", 2 * MiB, 0, 0);
    CUdeviceptr d = reserve("small2", 2 * MiB, 0, 0);
    address_free("small", c, 2 * MiB);
    address_free("small2", d, 2 * MiB);
    g_ref = 0;
  }
}

/* The hint matrix, all in one process as the conformance recorder runs its cases. */
static void hint_combo(size_t freed, size_t off, size_t req, size_t align) {
  CUdeviceptr probe = unreserved(freed);
  if (!probe) return;
  g_ref = probe;
  CUdeviceptr p = reserve("hinted", req, align, probe + off);
  address_free("hinted", p, req);
  g_ref = 0;
}
static void ex_matrix(void) {
  static const size_t mib[] = {2,  4,  6,  8,  10, 12, 14, 16, 18, 20,  22,  24,  26,  28,  30,
                               32, 34, 36, 40, 48, 62, 64, 66, 96, 128, 256, 512, 1024, 2048};
  for (unsigned i = 0; i < sizeof mib / sizeof mib[0]; i++) {
    size_t f = mib[i];
    size_t offs[] = {0, 2, f / 4 / 2 * 2, f / 2 / 2 * 2, f - 2};
    for (int k = 0; k < 5; k++) {
      size_t o = offs[k];
      if (o >= f) continue;
      int dup = 0;
      for (int j = 0; j < k; j++) dup |= offs[j] == o;
      if (dup) continue;
      hint_combo(f * MiB, o * MiB, 2 * MiB, 0);
      if (f - o > 2) hint_combo(f * MiB, o * MiB, (f - o) * MiB, 0);
    }
  }
}
/* The same sweep with no maps logging, sizes descending: does order or history change the answers? */
static void ex_matrix_descending(void) {
  g_maps = 0;
  static const size_t mib[] = {1024, 512, 128, 64, 48, 34, 32, 30, 24, 18, 16, 8, 4, 2};
  for (unsigned i = 0; i < sizeof mib / sizeof mib[0]; i++) {
    size_t f = mib[i];
    hint_combo(f * MiB, 0, 2 * MiB, 0);
    hint_combo(f * MiB, 2 * MiB, 2 * MiB, 0);
    if (f >= 8) hint_combo(f * MiB, f / 2 / 2 * 2 * MiB, 2 * MiB, 0);
  }
}

/* One combination as the very first reservations of a fresh process. */
static void ex_fresh(size_t f, size_t off) { hint_combo(f * MiB, off * MiB, 2 * MiB, 0); }
static void ex_fresh16(void) { ex_fresh(16, 2); }
static void ex_fresh24(void) { ex_fresh(24, 2); }
static void ex_fresh32(void) { ex_fresh(32, 2); }
static void ex_fresh64(void) { ex_fresh(64, 2); }
static void ex_fresh64half(void) { ex_fresh(64, 32); }
static void ex_fresh4(void) { ex_fresh(4, 2); }

/* Three reservations of F side by side, freed in some order, then a hint 2 MiB into each. */
static void several(size_t f, int order) {
  size_t s = f * MiB;
  CUdeviceptr r[3];
  for (int i = 0; i < 3; i++) r[i] = reserve("trio", s, 0, 0);
  g_ref = r[0];
  static const int orders[3][3] = {{0, 1, 2}, {2, 1, 0}, {1, -1, -1}};
  for (int k = 0; k < 3; k++)
    if (orders[order][k] >= 0) address_free("trio", r[orders[order][k]], s);
  for (int i = 0; i < 3; i++) {
    int freed = 0;
    for (int k = 0; k < 3; k++) freed |= orders[order][k] == i;
    if (!freed) continue;
    CUdeviceptr p = reserve("hintInto", 2 * MiB, 0, r[i] + 2 * MiB);
    address_free("hintInto", p, 2 * MiB);
  }
  for (int i = 0; i < 3; i++) {
    int freed = 0;
    for (int k = 0; k < 3; k++) freed |= orders[order][k] == i;
    if (!freed) continue;
    CUdeviceptr p = reserve("hintBase", 2 * MiB, 0, r[i]);
    address_free("hintBase", p, 2 * MiB);
  }
  if (order == 2) {
    address_free("trio", r[0], s);
    address_free("trio", r[2], s);
  }
  g_ref = 0;
}
static void ex_several(void) {
  static const size_t mib[] = {2, 8, 16, 32, 64};
  for (unsigned i = 0; i < sizeof mib / sizeof mib[0]; i++)
    for (int order = 0; order < 3; order++) several(mib[i], order);
}

/* Does a large freed range stay unusable for hints while something else lives beside it? */
static void ex_neighbours(void) {
  // 64 MiB freed between two live small reservations.
  CUdeviceptr a = reserve("before", 2 * MiB, 0, 0);
  CUdeviceptr big = reserve("big", 64 * MiB, 0, 0);
  CUdeviceptr b = reserve("after", 2 * MiB, 0, 0);
  g_ref = big;
  address_free("big", big, 64 * MiB);
  CUdeviceptr p = reserve("hint+2", 2 * MiB, 0, big + 2 * MiB);
  address_free(NULL, p, 2 * MiB);
  p = reserve("hint+0", 2 * MiB, 0, big);
  CUdeviceptr q = reserve("hint+2WithBaseTaken", 2 * MiB, 0, big + 2 * MiB);
  address_free(NULL, q, 2 * MiB);
  address_free(NULL, p, 2 * MiB);
  // A hinted 64 MiB at the big one's base, then hints inside the *live* range are refused (taken);
  // then into the tail after a hinted small one at its base.
  p = reserve("hintBig+0", 64 * MiB, 0, big);
  address_free(NULL, p, 64 * MiB);
  address_free("before", a, 2 * MiB);
  address_free("after", b, 2 * MiB);
  g_ref = 0;
  // A 64 MiB reservation whose tail half is freed only as a whole: hint into it after a 2 MiB one took its base.
  CUdeviceptr c = reserve("big2", 64 * MiB, 0, 0);
  g_ref = c;
  address_free("big2", c, 64 * MiB);
  CUdeviceptr d = reserve("atBase", 2 * MiB, 0, c);
  CUdeviceptr e = reserve("next", 2 * MiB, 0, c + 2 * MiB);
  CUdeviceptr f = reserve("unhinted", 2 * MiB, 0, 0);
  address_free(NULL, f, 2 * MiB);
  address_free(NULL, e, 2 * MiB);
  address_free(NULL, d, 2 * MiB);
  g_ref = 0;
}

/* Hints into address space no reservation ever held. */
static void ex_never(void) {
  CUdeviceptr b = reserve("anchor", 2 * MiB, 0, 0);
  g_ref = b;
  static const long long off_mib[] = {2,    4,     32,    64,    66,     512,     1024,     1026,
                                      4096, 16384, 65536, 262144, 1048576, -1024, -16384, -65536};
  for (unsigned i = 0; i < sizeof off_mib / sizeof off_mib[0]; i++) {
    unsigned long long h = b + (unsigned long long)(off_mib[i] * (long long)MiB);
    event_open("areaOfHint");
    kv_mib("hintAt", off_mib[i] * (long long)MiB);
    kv_area_of("area", h);
    event_close();
    Maps m = maps_read();
    int safe = 1;
    for (int k = 0; k < m.n; k++)
      if (m.a[k].start < h + 32 * MiB && h < m.a[k].end &&
          (strcmp(m.a[k].perms, "---p") != 0 || m.a[k].end - m.a[k].start < GiB))
        safe = 0; /* only unmapped space, or a large inaccessible area (the driver's, not malloc's 64 MiB arenas) */
    free(m.a);
    if (!safe) {
      note("hint overlaps a host mapping: not tried");
      continue;
    }
    CUdeviceptr p = reserve("never", 2 * MiB, 0, h);
    address_free(NULL, p, 2 * MiB);
    p = reserve("never32", 32 * MiB, 0, h);
    address_free(NULL, p, 32 * MiB);
  }
  address_free("anchor", b, 2 * MiB);
  g_ref = 0;
}

/* Hints with an alignment, and hinted requests larger than the freed range. */
static void ex_alignment_and_size(void) {
  hint_combo(64 * MiB, 2 * MiB, 2 * MiB, 2 * MiB);
  hint_combo(64 * MiB, 32 * MiB, 2 * MiB, 32 * MiB);
  hint_combo(64 * MiB, 0, 2 * MiB, 64 * MiB);
  hint_combo(64 * MiB, 2 * MiB, 2 * MiB, 4 * MiB);
  hint_combo(64 * MiB, 0, 128 * MiB, 0);
  hint_combo(16 * MiB, 0, 32 * MiB, 0);
  hint_combo(16 * MiB, 8 * MiB, 16 * MiB, 0);
  hint_combo(16 * MiB, 14 * MiB, 4 * MiB, 0);
  hint_combo(2 * MiB, 0, 4 * MiB, 0);
  hint_combo(32 * MiB, 0, 32 * MiB, 0);
  hint_combo(32 * MiB, 0, 64 * MiB, 0);
}

/* A large range that held mapped memory, then freed. */
static void ex_mapped(void) {
  AllocProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = 1; /* pinned */
  prop.location.type = 1; /* device */
  prop.location.id = g_dev;
  CUdeviceptr va = reserve("big", 64 * MiB, 0, 0);
  g_ref = va;
  CUmemHandle h = 0;
  int rc = p_cuMemCreate(&h, 2 * MiB, &prop, 0);
  int rm = rc ? -1 : p_cuMemMap(va + 4 * MiB, 2 * MiB, 0, h, 0);
  int ru = rm ? -1 : p_cuMemUnmap(va + 4 * MiB, 2 * MiB);
  if (!rc) p_cuMemRelease(h);
  event_open("mapUnmap");
  kv_int("create", rc);
  kv_int("map", rm);
  kv_int("unmap", ru);
  event_close();
  address_free("big", va, 64 * MiB);
  CUdeviceptr p = reserve("hint+2", 2 * MiB, 0, va + 2 * MiB);
  address_free(NULL, p, 2 * MiB);
  g_ref = 0;
}

/* Many reserve/free cycles first (as a test suite makes), then the small-freed hint. */
static void ex_churn(void) {
  g_maps = 0;
  for (int i = 0; i < 40; i++) {
    CUdeviceptr a = reserve("churn8", 8 * MiB, 0, 0);
    CUdeviceptr b = reserve("churn4", 4 * MiB, 0, 0);
    address_free(NULL, a, 8 * MiB);
    address_free(NULL, b, 4 * MiB);
  }
  g_maps = 1;
  hint_combo(4 * MiB, 2 * MiB, 2 * MiB, 0);
  hint_combo(8 * MiB, 2 * MiB, 2 * MiB, 0);
  // A live 8 MiB one, then the small-freed hint beside it.
  CUdeviceptr keep = reserve("keep8", 8 * MiB, 0, 0);
  hint_combo(4 * MiB, 2 * MiB, 2 * MiB, 0);
  address_free(NULL, keep, 8 * MiB);
  hint_combo(4 * MiB, 2 * MiB, 2 * MiB, 0);
}

/* Two chunks with free tails: which heap does an un-hinted, and a hinted, search try first? */
static void ex_search_order(void) {
  CUdeviceptr a = reserve("older48", 48 * MiB, 0, 0);
  CUdeviceptr b = reserve("newer48", 48 * MiB, 0, 0);
  g_ref = a;
  CUdeviceptr u = reserve("unhinted2", 2 * MiB, 0, 0);
  address_free(NULL, u, 2 * MiB);
  CUdeviceptr p = reserve("hintFreeInOlderTail", 2 * MiB, 0, a + 48 * MiB);
  CUdeviceptr q = reserve("hintAtTakenOlder", 2 * MiB, 0, a);
  CUdeviceptr r = reserve("hintAtTakenNewer", 2 * MiB, 0, b);
  CUdeviceptr w = reserve("unhintedAfter", 2 * MiB, 0, 0);
  address_free(NULL, w, 2 * MiB);
  address_free(NULL, r, 2 * MiB);
  address_free(NULL, q, 2 * MiB);
  address_free(NULL, p, 2 * MiB);
  // A hint below both chunks' tails but inside the older one's taken part, with only the newer one's tail free.
  CUdeviceptr fill = reserve("fillOlderTail", 16 * MiB, 0, a + 48 * MiB);
  CUdeviceptr s2 = reserve("hintAtTakenOlderOnlyNewerFree", 2 * MiB, 0, a);
  address_free(NULL, s2, 2 * MiB);
  address_free(NULL, fill, 16 * MiB);
  address_free("newer48", b, 48 * MiB);
  address_free("older48", a, 48 * MiB);
  g_ref = 0;
}

/* A freed large range whose chunk still holds another reservation: hints into it. */
static void ex_chunk_kept_alive(void) {
  CUdeviceptr a = reserve("large48", 48 * MiB, 0, 0);
  g_ref = a;
  CUdeviceptr b = reserve("small2InItsChunk", 2 * MiB, 0, 0);
  address_free("large48", a, 48 * MiB);
  CUdeviceptr p = reserve("hint+2", 2 * MiB, 0, a + 2 * MiB);
  address_free(NULL, p, 2 * MiB);
  p = reserve("hint+16For32", 32 * MiB, 0, a + 16 * MiB);
  address_free(NULL, p, 32 * MiB);
  p = reserve("hint+0For48", 48 * MiB, 0, a);
  address_free(NULL, p, 48 * MiB);
  address_free("small2", b, 2 * MiB);
  p = reserve("hint+2AfterChunkGone", 2 * MiB, 0, a + 2 * MiB);
  address_free(NULL, p, 2 * MiB);
  g_ref = 0;
}

/* The start-up heap filled with 2 MiB reservations: then a small range gets a chunk of its own. */
static void ex_startup_heap_full(void) {
  enum { N = 20 };
  CUdeviceptr p[N];
  int n = 0, spill = -1;
  for (; n < N; n++) {
    p[n] = reserve("fill2", 2 * MiB, 0, 0);
    if (p[n] && p[n] < 0x7f0000000000ull) {
      spill = n;
      break;
    }
  }
  if (spill >= 0) {
    address_free("spilled", p[spill], 2 * MiB);
    n = spill;
  }
  CUdeviceptr probe = reserve("probe4", 4 * MiB, 0, 0);
  g_ref = probe;
  address_free("probe4", probe, 4 * MiB);
  CUdeviceptr h = reserve("hint+2", 2 * MiB, 0, probe + 2 * MiB);
  address_free(NULL, h, 2 * MiB);
  h = reserve("hint+0", 2 * MiB, 0, probe);
  address_free(NULL, h, 2 * MiB);
  g_ref = 0;
  for (int i = n - 1; i >= 0; i--) address_free("fill2", p[i], 2 * MiB);
}

/* A whole-handle map running past the end of a reservation that fills its chunk, into VA no heap holds. */
static void ex_map_past_chunk_end(void) {
  AllocProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = 1;
  prop.location.type = 1;
  prop.location.id = g_dev;
  CUdeviceptr va = reserve("full32", 32 * MiB, 0, 0);
  g_ref = va;
  CUmemHandle h = 0;
  int rc = p_cuMemCreate(&h, 4 * MiB, &prop, 0);
  int rm = rc ? -1 : p_cuMemMap(va + 30 * MiB, 4 * MiB, 0, h, 0);
  event_open("mapPastChunkEnd");
  kv_int("create", rc);
  kv_int("map", rm);
  event_close();
  CUdeviceptr after = reserve("hintRightAfterChunk", 2 * MiB, 0, va + 32 * MiB);
  address_free(NULL, after, 2 * MiB);
  if (rm == 0) {
    event_open("unmap");
    kv_int("rc", p_cuMemUnmap(va + 30 * MiB, 4 * MiB));
    event_close();
  }
  if (!rc) p_cuMemRelease(h);
  address_free("full32", va, 32 * MiB);
  g_ref = 0;
}

/* Un-hinted small reservations with large alignments: the start-up heap, or a chunk aligned so? */
static void ex_large_alignment(void) {
  static const size_t align_mib[] = {4, 32, 64, 1024, 4096};
  for (unsigned i = 0; i < sizeof align_mib / sizeof align_mib[0]; i++) {
    CUdeviceptr p = reserve("aligned", 2 * MiB, align_mib[i] * MiB, 0);
    address_free(NULL, p, 2 * MiB);
  }
  CUdeviceptr p = reserve("aligned64For48", 48 * MiB, 64 * MiB, 0);
  address_free(NULL, p, 48 * MiB);
}

/* The driver's mappings right after start-up: where its address space lies. */
static void ex_startup_maps(void) {
  Maps m = maps_read();
  Maps none = {0, 0};
  event_open("maps");
  print_areas("areas", &m, &none);
  event_close();
  free(m.a);
}

typedef struct {
  const char *name;
  void (*run)(void);
} Experiment;
static const Experiment EXPERIMENTS[] = {
    {"startupMaps", ex_startup_maps},
    {"placementAscending", ex_placement_ascending},
    {"placementDescending", ex_placement_descending},
    {"placementInterleaved", ex_placement_interleaved},
    {"reuse", ex_reuse},
    {"matrix", ex_matrix},
    {"matrixDescending", ex_matrix_descending},
    {"fresh4Plus2", ex_fresh4},
    {"fresh16Plus2", ex_fresh16},
    {"fresh24Plus2", ex_fresh24},
    {"fresh32Plus2", ex_fresh32},
    {"fresh64Plus2", ex_fresh64},
    {"fresh64Plus32", ex_fresh64half},
    {"several", ex_several},
    {"neighbours", ex_neighbours},
    {"never", ex_never},
    {"alignmentAndSize", ex_alignment_and_size},
    {"mapped", ex_mapped},
    {"churn", ex_churn},
    {"searchOrder", ex_search_order},
    {"chunkKeptAlive", ex_chunk_kept_alive},
    {"startupHeapFull", ex_startup_heap_full},
    {"mapPastChunkEnd", ex_map_past_chunk_end},
    {"largeAlignment", ex_large_alignment},
};
enum { NEXPERIMENTS = sizeof EXPERIMENTS / sizeof EXPERIMENTS[0] };

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--list")) {
    for (int i = 0; i < NEXPERIMENTS; i++) printf("%s\n", EXPERIMENTS[i].name);
    return 0;
  }
  if (argc != 2) fail("usage: hint_probe --list | hint_probe NAME");
  for (int i = 0; i < NEXPERIMENTS; i++) {
    if (strcmp(argv[1], EXPERIMENTS[i].name)) continue;
    init();
    printf("{\"experiment\":\"%s\",\"cudaDriverVersion\":%d,\"events\":[", EXPERIMENTS[i].name, g_version);
    EXPERIMENTS[i].run();
    printf("\n]}\n");
    return 0;
  }
  fail("no such experiment");
}
