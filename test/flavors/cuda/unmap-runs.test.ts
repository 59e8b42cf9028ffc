/**
 * cuMemUnmap over holes is one transaction (Note [Unmapping around holes] in
 * src/flavors/cuda/vmm.ts): when a later run fails, the earlier runs are
 * mapped back, a span among them stays one span (its pieces are the new
 * mappings), and the next cuMemUnmap of the range takes all of it, the
 * span's hidden reservation included.
 */
import { expect, it } from 'vitest';
import { createMachine } from '../../../src/backends/sim/machine.js';
import * as C from '../../../src/flavors/cuda/constants.js';
import { FaultyBackend } from '../../support/faulty-backend.js';
import { cudaWithContext, DEVICE_PROP as PROP, RW0 as RW } from './helpers.js';

const G = 2 * 1024 * 1024;

it('a failed run maps the span before it back, and a second unmap takes the span whole', () => {
  const faults = new FaultyBackend(createMachine({ devices: ['H200'] }).spawn());
  const cu = cudaWithContext({ backend: faults.backend });
  const ptr = { value: 0n };
  const next = { value: 0n };
  const h = { value: 0n };
  const other = { value: 0n };
  // At the start of just-freed VA, so the span's tail and `next` have free VA to go to (a lone G
  // reservation would land in the start-up heap's hole: Note [Mappings past a reservation's end]).
  expect(cu.cuMemAddressReserve(ptr, 4 * G, 0, 0n, 0)).toBe(C.CUDA_SUCCESS);
  expect(cu.cuMemAddressFree(ptr.value, 4 * G)).toBe(C.CUDA_SUCCESS);
  const free = ptr.value;
  expect(cu.cuMemAddressReserve(ptr, G, 0, free, 0)).toBe(C.CUDA_SUCCESS);
  expect(ptr.value).toBe(free);
  expect(cu.cuMemCreate(h, 2 * G, PROP, 0)).toBe(C.CUDA_SUCCESS);
  expect(cu.cuMemMap(ptr.value, 2 * G, 0, h.value, 0)).toBe(C.CUDA_SUCCESS);
  expect(cu.cuMemSetAccess(ptr.value, 2 * G, RW, 1)).toBe(C.CUDA_SUCCESS);
  expect(cu.cuMemAddressReserve(next, 2 * G, 0, ptr.value + BigInt(2 * G), 0)).toBe(C.CUDA_SUCCESS);
  expect(next.value).toBe(ptr.value + BigInt(2 * G));
  expect(cu.cuMemCreate(other, G, PROP, 0)).toBe(C.CUDA_SUCCESS);
  expect(cu.cuMemMap(next.value + BigInt(G), G, 0, other.value, 0)).toBe(C.CUDA_SUCCESS);
  const reservations = () => [...cu.runtime.reservations()].map((r) => r.base);
  const held = reservations();

  // The third unmap is the mapping after the hole: the span's two pieces are mapped back.
  faults.arm(3);
  expect(cu.cuMemUnmap(ptr.value, 4 * G)).not.toBe(C.CUDA_SUCCESS);
  faults.arm(0);
  expect([...cu.runtime.mappings()].map((m) => [m.va - Number(ptr.value), m.size, m.accessOf(0)])).toEqual([
    [0, G, 3],
    [G, G, 3],
    [3 * G, G, 0],
  ]);
  // The span reads as one range still, and its bytes are there to write.
  const size = { value: 0 };
  expect(cu.cuMemGetAddressRange(null, size, ptr.value + BigInt(G))).toBe(C.CUDA_SUCCESS);
  expect(size.value).toBe(2 * G);
  expect(cu.cuMemsetD8(ptr.value + BigInt(G), 7, 16)).toBe(C.CUDA_SUCCESS);

  expect(cu.cuMemUnmap(ptr.value, 4 * G)).toBe(C.CUDA_SUCCESS);
  expect([...cu.runtime.mappings()]).toEqual([]);
  // The hidden reservation went with the span; the program's two remain.
  expect(reservations()).toEqual(held.filter((base) => base !== Number(ptr.value) + G));
  expect(reservations()).toEqual([Number(ptr.value), Number(next.value)]);
  cu.dispose();
});
