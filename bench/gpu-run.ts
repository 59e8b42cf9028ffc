/** What the GPU benchmarks share: the commit a run measured and the cycle's structs as the checked layer encodes them. */
import { execFileSync } from 'node:child_process';

/** The commit measured: the one given (--commit), else git's HEAD where the tree is a checkout, else null. */
export function commitMeasured(given: string | undefined): string | null {
  if (given) return given;
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
}

/** CUmemAllocationProp (PINNED on device 0) and CUmemAccessDesc (device 0, read-write), encoded as the checked layer does. */
export function encodedStructs(): { prop: Uint8Array; desc: Uint8Array } {
  const prop = new Uint8Array(32);
  const p = new Int32Array(prop.buffer);
  p[0] = 1; // type PINNED
  p[2] = 1; // location.type DEVICE, id 0
  const desc = new Uint8Array(12);
  const q = new Int32Array(desc.buffer);
  q[0] = 1; // location.type DEVICE, id 0
  q[2] = 3; // flags READWRITE
  return { prop, desc };
}
