/*
 * One fresh process's draw of the GPU host's process state (Note [Process
 * states] in bench/gpu-paired.ts), with no JavaScript in it: the 2 MiB VMM
 * cycle from C (vmm_bench.c's vb_cycle, from the library given) and a loop
 * of pure arithmetic, each timed alone. bench/gpu-states.ts runs it many
 * times, pinned to one CPU and not, to see what the state follows.
 *
 *   gcc -O2 state_probe.c -o state_probe -ldl
 *   ./state_probe path/to/libvmm_bench.so
 *
 * Prints one JSON line: the CPU it started and ended on, and the median
 * microseconds of one cycle and of one arithmetic loop.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { WARM = 3000, ROUNDS = 3000, LOOP = 20000 };

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
  static double cycle[ROUNDS], arith[ROUNDS];
  for (int i = 0; i < WARM; i++) vb_cycle((size_t)2 << 20, 1), arithmetic_us();
  for (int i = 0; i < ROUNDS; i++) {
    cycle[i] = vb_cycle((size_t)2 << 20, 1);
    arith[i] = arithmetic_us();
    if (cycle[i] < 0) {
      fprintf(stderr, "vb_cycle failed: CUresult %d\n", (int)-cycle[i]);
      return 1;
    }
  }
  printf("{\"cpu_start\":%d,\"cpu_end\":%d,\"native_p50_us\":%.2f,\"arithmetic_p50_us\":%.2f}\n", cpu_start,
         sched_getcpu(), median(cycle, ROUNDS), median(arith, ROUNDS));
  return 0;
}
