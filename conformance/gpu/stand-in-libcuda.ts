/**
 * Builds conformance/gpu/libcuda-stand-in.c into a libcuda.so.1 of its own: a
 * null driver the real CUDA backend loads through koffi (no GPU needed).
 * Every DRIVER_API function the C file does not define gets a weak default
 * here, made from the declaration list itself, that answers CUDA_SUCCESS and
 * writes nothing; so the stand-in always has every symbol the list declares.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import koffi from 'koffi';
import { DRIVER_API } from '../../src/backends/cuda/driver-api.js';
import { packagePath } from '../../src/util/package-path.js';

const SOURCE = packagePath('conformance/gpu/libcuda-stand-in.c') ?? 'conformance/gpu/libcuda-stand-in.c';

/** Weak definitions of every declared driver function: `int name() { return 0; }` (any arguments, none read). */
export function weakDefaults(): string {
  const lines = Object.keys(DRIVER_API).map(
    (symbol) => `__attribute__((weak)) int ${symbol}() { return 0; }`,
  );
  return `/* Made by conformance/gpu/stand-in-libcuda.ts from DRIVER_API. */\n${lines.join('\n')}\n`;
}

/** Compile the stand-in into `dir`/libcuda.so.1 and answer its path. Needs a C compiler (cc, or $CC). */
export function buildStandInLibcuda(dir: string, source = SOURCE): string {
  mkdirSync(dir, { recursive: true });
  const defaults = join(dir, 'defaults.c');
  writeFileSync(defaults, weakDefaults());
  const path = join(dir, 'libcuda.so.1');
  execFileSync(process.env.CC || 'cc', [
    '-O2',
    '-std=gnu11',
    '-shared',
    '-fPIC',
    source,
    defaults,
    '-o',
    path,
  ]);
  return path;
}

/** What the stand-in says of its last cycle call, and its knobs (conformance/gpu/libcuda-stand-in.c). */
export interface StandInControls {
  /** The last call: function number (1-7), its integer arguments, its struct's bytes. */
  last(): { fn: number; args: bigint[]; bytes: number[] };
  /** The next out-parameters of reserve and create (0n: fresh ones again). */
  setOut(value: bigint): void;
  /** KiB of memory each cycle call touches, to leave the caches cold as a real driver does. */
  setThrash(kib: number): void;
}

export function standInControls(path: string): StandInControls {
  const lib = koffi.load(path);
  const last = lib.func('int stand_in_last(_Out_ uint64_t *args, uint8_t *bytes)');
  const setOut = lib.func('void stand_in_set_out(uint64_t value)');
  const setThrash = lib.func('void stand_in_set_thrash(unsigned int kib)');
  return {
    last() {
      const args = new BigUint64Array(5);
      const bytes = new Uint8Array(32);
      const fn = last(args, bytes) as number;
      return { fn, args: [...args], bytes: [...bytes] };
    },
    setOut: (value) => setOut(value),
    setThrash: (kib) => setThrash(kib),
  };
}
