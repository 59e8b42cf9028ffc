/*
 * The few CUDA driver types the probes in this folder pass, declared as
 * cuda.h lays them out, so that each probe builds with gcc alone (libcuda is
 * opened with dlopen; no CUDA headers needed).
 */
#ifndef VMMKIT_DRIVER_TYPES_H
#define VMMKIT_DRIVER_TYPES_H

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

#endif
