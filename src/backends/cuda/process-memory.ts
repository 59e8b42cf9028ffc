/**
 * The CPU's loads and stores at an address of this process (Note [Host
 * access] in src/backend/backend.ts): what a C program does by dereferencing
 * a pointer to host-located VMM memory. JavaScript cannot dereference an
 * address, so the bytes move by libc's memcpy, declared here once (twice, for
 * the two directions, so koffi passes the JavaScript side as a buffer and
 * the address as an integer) and loaded on first use (Note [Lazy FFI]).
 * Core checks the mapping and the CPU's grant before any call reaches here:
 * a load the hardware would fault on never does.
 */
import { koffi } from './koffi.js';

/** Copies between JavaScript buffers and this process's memory at an address. */
export interface ProcessMemory {
  /** dst <- the bytes at `address`. */
  read(address: number, dst: Uint8Array): void;
  /** The bytes at `address` <- src. */
  write(address: number, src: Uint8Array): void;
}

type Memcpy = (dst: unknown, src: unknown, n: number) => unknown;

/** The process's own memory, through libc's memcpy. */
export function libcProcessMemory(): ProcessMemory {
  let calls: { load: Memcpy; store: Memcpy } | undefined;
  const bind = () => {
    if (calls === undefined) {
      const libc = koffi().load('libc.so.6');
      calls = {
        load: libc.func('void *memcpy(_Out_ uint8_t *dst, uintptr_t src, size_t n)') as Memcpy,
        store: libc.func('void *memcpy(uintptr_t dst, const uint8_t *src, size_t n)') as Memcpy,
      };
    }
    return calls;
  };
  return {
    read(address, dst) {
      if (dst.length > 0) bind().load(dst, address, dst.length);
    },
    write(address, src) {
      if (src.length > 0) bind().store(address, src, src.length);
    },
  };
}
