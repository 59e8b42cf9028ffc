/*
 * One fresh process's draw of the GPU host's process state (Note [Process
 * states] in bench/gpu-paired.ts), with no JavaScript in it: the 2 MiB VMM
 * cycle from C (vmm_bench.c's vb_cycle, from the library given), a loop of
 * pure arithmetic, and two chases of dependent loads: one through a buffer
 * far larger than any cache (a load from memory), one through 64 KiB last
 * read just before a cycle (what a caller's code and data cost to fetch
 * again after a driver call). bench/gpu-states.ts runs it many times,
 * pinned to one CPU and not, to see what the state follows.
 *
 *   gcc -O2 state_probe.c -o state_probe -ldl
 *   ./state_probe path/to/libvmm_bench.so
 *
 * Prints one JSON line: the CPU it started and ended on, the median
 * microseconds of one cycle and of one arithmetic loop, and the median
 * nanoseconds of one load of each chase.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { WARM = 3000, ROUNDS = 3000, LOOP = 20000 };
/* The chases: 256 MiB (past any last-level cache) and 64 KiB (about what one JavaScript cycle touches), 64-byte lines. */
enum { LINE = 64, MEMORY_LINES = (256 << 20) / LINE, NEAR_LINES = (64 << 10) / LINE, STEPS = 1024 };

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *t, int n) {
  qsort(t, n, sizeof t[0], cmp);
  return t[n / 2];
}

/* A dependent chain of multiply-adds: CPU work alone, no memory beyond registers. */
static double arithmetic_us(void) {
  volatile uint64_t seed = 88172645463325252ull;
  uint64_t x = seed;
  double t0 = now_us();
  for (int i = 0; i < LOOP; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
  double t = now_us() - t0;
  seed = x;
  return t;
}

/*
 * A random cycle through `lines` cache lines of `buf`: each line's first word
 * is the index of the next, so each load waits for the one before.
 */
static void link_lines(uint64_t *buf, uint64_t lines) {
  uint64_t *order = malloc(lines * sizeof *order);
  for (uint64_t i = 0; i < lines; i++) order[i] = i;
  uint64_t x = 2463534242u;
  for (uint64_t i = lines - 1; i > 0; i--) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    uint64_t j = x % (i + 1), t = order[i];
    order[i] = order[j], order[j] = t;
  }
  for (uint64_t i = 0; i < lines; i++) buf[order[i] * (LINE / 8)] = order[(i + 1) % lines];
  free(order);
}

/* Where the chases ended: stored, so that the compiler keeps their loads. */
static volatile uint64_t chase_end;

/* Nanoseconds per load of `steps` dependent loads through the lines `link_lines` chained; `*at` is where it goes on. */
static double chase_ns(const uint64_t *buf, uint64_t *at, int steps) {
  uint64_t i = *at;
  double t0 = now_us();
  for (int k = 0; k < steps; k++) i = buf[i * (LINE / 8)];
  double t = now_us() - t0;
  chase_end = *at = i;
  return t * 1000 / steps;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: state_probe libvmm_bench.so\n");
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  int (*vb_init)(int) = (int (*)(int))dlsym(lib, "vb_init");
  double (*vb_cycle)(size_t, int) = (double (*)(size_t, int))dlsym(lib, "vb_cycle");
  if (!vb_init || !vb_cycle || vb_init(0) != 0) {
    fprintf(stderr, "vb_init failed\n");
    return 1;
  }
  int cpu_start = sched_getcpu();
  uint64_t *memory = malloc((size_t)MEMORY_LINES * LINE), *near = malloc((size_t)NEAR_LINES * LINE);
  if (!memory || !near) return 1;
  link_lines(memory, MEMORY_LINES);
  link_lines(near, NEAR_LINES);
  uint64_t at_memory = 0, at_near = 0;
  static double cycle[ROUNDS], arith[ROUNDS], memory_ns[ROUNDS], after_call_ns[ROUNDS];
  for (int i = 0; i < WARM; i++) vb_cycle((size_t)2 << 20, 1), arithmetic_us();
  for (int i = 0; i < ROUNDS; i++) {
    // The near lines are read whole, then a cycle runs, then they are read again: what the call left cold.
    chase_ns(near, &at_near, NEAR_LINES);
    cycle[i] = vb_cycle((size_t)2 << 20, 1);
    after_call_ns[i] = chase_ns(near, &at_near, NEAR_LINES);
    arith[i] = arithmetic_us();
    memory_ns[i] = chase_ns(memory, &at_memory, STEPS);
    if (cycle[i] < 0) {
      fprintf(stderr, "vb_cycle failed: CUresult %d\n", (int)-cycle[i]);
      return 1;
    }
  }
  printf("{\"cpu_start\":%d,\"cpu_end\":%d,\"native_p50_us\":%.2f,\"arithmetic_p50_us\":%.2f,"
         "\"memory_load_ns\":%.1f,\"after_call_load_ns\":%.2f}\n",
         cpu_start, sched_getcpu(), median(cycle, ROUNDS), median(arith, ROUNDS), median(memory_ns, ROUNDS),
         median(after_call_ns, ROUNDS));
  return 0;
}
