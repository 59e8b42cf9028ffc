/*
 * What the probes in this folder share: the few CUDA driver types they pass,
 * declared as cuda.h lays them out, and opening libcuda with dlopen, so that
 * each probe builds with gcc alone (no CUDA headers needed). A probe defines
 * PROBE_NAME, its messages' prefix, before including this file.
 */
#ifndef VMMKIT_PROBE_H
#define VMMKIT_PROBE_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemHandle;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;

/* CUmemAllocationProp. */
typedef struct {
  int type;
  int requestedHandleTypes;
  struct {
    int type;
    int id;
  } location;
  void *win32HandleMetaData;
  struct {
    unsigned char compressionType, gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} AllocProp;

/* CUmemAccessDesc. */
typedef struct {
  struct {
    int type;
    int id;
  } location;
  unsigned long long flags;
} AccessDesc;

/* A step the probe cannot go on without failed: say which, exit 1. */
static void fail(const char *what) {
  fprintf(stderr, PROBE_NAME ": %s\n", what);
  exit(1);
}

/* libcuda.so.1, or exit 1 with dlerror()'s reason. */
static void *open_libcuda(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) fail(dlerror());
  return lib;
}

/* The driver function `name` of `lib` into the function pointer `sym`, or exit 1. */
#define LOAD(sym, name)                                \
  do {                                                 \
    *(void **)(&sym) = dlsym(lib, name);               \
    if (!sym) fail("no " name " in libcuda.so.1");     \
  } while (0)

#endif
