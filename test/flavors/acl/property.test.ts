import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMachine } from '../../../src/backends/sim/machine.js';
import { createAcl } from '../../../src/entry/processes.js';
import type { AclFlavor } from '../../../src/flavors/acl/acl.js';
import * as C from '../../../src/flavors/acl/constants.js';
import { G, prop } from './helpers.js';

/**
 * Long random sequences of valid and invalid ACL calls from two processes
 * sharing a machine of two Ascend 910B, checked call by call against a small
 * shadow model: every aclError, no overlapping mappings, no access without a
 * grant, every byte read equal to the last byte written through any alias
 * (a second mapping, or another process's import), and nothing left behind.
 */

interface Alloc {
  id: bigint;
  mem: number;
  device: number;
  imported: boolean;
  refs: number;
  mapRefs: number;
  exported: boolean;
  /** Freed (refs and mappings gone): its exported tokens are withdrawn. */
  freed?: boolean;
}
interface Res {
  base: bigint;
  granules: number;
  slots: (MapRec | undefined)[];
}
interface MapRec {
  va: bigint;
  res: Res;
  alloc: Alloc;
  access: number[];
}
interface Token {
  /** The exporting process's allocation: freeing it withdraws the token. */
  source: Alloc;
  value: bigint;
  owner: number;
  mem: number;
  device: number;
  checkPid: boolean;
  allowed: boolean;
}
interface Proc {
  acl: AclFlavor;
  device: number;
  reservations: Res[];
  allocs: Alloc[];
  mappings: MapRec[];
}

type Op =
  | { k: 'setDevice'; p: number; d: number }
  | { k: 'reserve'; p: number; granules: number; bad: boolean }
  | { k: 'release'; p: number; i: number }
  | { k: 'create'; p: number; d: number; bad: boolean }
  | { k: 'free'; p: number; i: number }
  | { k: 'map'; p: number; r: number; slot: number; h: number; grant: boolean }
  | { k: 'unmap'; p: number; i: number; inside: boolean }
  | { k: 'access'; p: number; i: number; d: number; flags: number }
  | { k: 'write'; p: number; i: number; off: number; len: number; seed: number }
  | { k: 'read'; p: number; i: number; off: number; len: number }
  | { k: 'retain'; p: number; i: number }
  | { k: 'export'; p: number; h: number; disable: boolean }
  | { k: 'allow'; p: number; t: number }
  | { k: 'import'; p: number; t: number }
  | { k: 'null'; p: number; which: number };

const p = fc.integer({ min: 0, max: 1 });
const i = fc.nat(20);
/** Mostly well-formed calls; one in five of the size-bearing ones is malformed. */
const bad = fc.integer({ min: 0, max: 4 }).map((n) => n === 0);
/** Offsets inside a 2 MiB mapping: a few hot spots (so reads meet earlier writes) and anywhere. */
const offset = fc.oneof(fc.constantFrom(0, 32, 4096, G - 64), fc.nat(G - 64));
const w = <T>(weight: number, arbitrary: fc.Arbitrary<T>) => ({ weight, arbitrary });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  w(1, fc.record({ k: fc.constant('setDevice' as const), p, d: fc.integer({ min: 0, max: 1 }) })),
  w(
    4,
    fc.record({
      k: fc.constant('reserve' as const),
      p,
      granules: fc.integer({ min: 1, max: 3 }),
      bad,
    }),
  ),
  w(1, fc.record({ k: fc.constant('release' as const), p, i })),
  w(4, fc.record({ k: fc.constant('create' as const), p, d: fc.integer({ min: 0, max: 1 }), bad })),
  w(1, fc.record({ k: fc.constant('free' as const), p, i })),
  w(3, fc.record({ k: fc.constant('map' as const), p, r: i, slot: fc.nat(3), h: i, grant: fc.boolean() })),
  w(3, fc.record({ k: fc.constant('map' as const), p, r: i, slot: fc.nat(3), h: i, grant: fc.boolean() })),
  w(1, fc.record({ k: fc.constant('unmap' as const), p, i, inside: fc.boolean() })),
  w(
    6,
    fc.record({
      k: fc.constant('access' as const),
      p,
      i,
      d: fc.constantFrom(0, 0, 0, 1),
      flags: fc.constantFrom(0, 1, 3, 3, 3),
    }),
  ),
  w(
    3,
    fc.record({
      k: fc.constant('write' as const),
      p,
      i,
      off: offset,
      len: fc.integer({ min: 1, max: 64 }),
      seed: fc.nat(255),
    }),
  ),
  w(
    3,
    fc.record({
      k: fc.constant('write' as const),
      p,
      i,
      off: offset,
      len: fc.integer({ min: 1, max: 64 }),
      seed: fc.nat(255),
    }),
  ),
  w(
    3,
    fc.record({
      k: fc.constant('read' as const),
      p,
      i,
      off: offset,
      len: fc.integer({ min: 1, max: 64 }),
    }),
  ),
  w(1, fc.record({ k: fc.constant('retain' as const), p, i })),
  w(2, fc.record({ k: fc.constant('export' as const), p, h: i, disable: fc.boolean() })),
  w(2, fc.record({ k: fc.constant('allow' as const), p, t: i })),
  w(2, fc.record({ k: fc.constant('import' as const), p, t: i })),
  w(1, fc.record({ k: fc.constant('null' as const), p, which: fc.nat(5) })),
);

const OK = C.ACL_SUCCESS;
const PARAM = C.ACL_ERROR_RT_PARAM_INVALID;
const NO_PERMISSION = C.ACL_ERROR_RT_NO_PERMISSION;

function pick<T>(list: readonly T[], index: number): T | undefined {
  return list.length === 0 ? undefined : list[index % list.length];
}

/** How often the interesting outcomes happened, to check the generator reaches them. */
const seen = { mapped: 0, verifiedBytes: 0, denied: 0, imported: 0, aliasReads: 0 };

function run(ops: readonly Op[]): void {
  const machine = createMachine({ devices: ['Ascend910B', 'Ascend910B'] });
  const procs: Proc[] = [0, 1].map(() => {
    const acl = createAcl({ machine });
    expect(acl.aclInit(null)).toBe(OK);
    expect(acl.aclrtSetDevice(0)).toBe(OK);
    return { acl, device: 0, reservations: [], allocs: [], mappings: [] };
  });
  const bytes = new Map<number, Map<number, number>>();
  const tokens: Token[] = [];
  let nextMem = 1;
  const live = (pr: Proc) => pr.allocs.filter((a) => a.refs > 0);
  const pidOf = (n: number) => procs[n].acl.runtime.pid;

  for (const op of ops) {
    const pr = procs[op.p];
    const acl = pr.acl;
    switch (op.k) {
      case 'setDevice': {
        expect(acl.aclrtSetDevice(op.d)).toBe(OK);
        pr.device = op.d;
        break;
      }
      case 'reserve': {
        const out = { value: 0n };
        // A ragged size (op.bad) is no error: it rounds up to whole granules (Note [ACL reservation sizes]).
        const size = op.granules * G + (op.bad ? 4096 : 0);
        const granules = Math.ceil(size / G);
        expect(acl.aclrtReserveMemAddress(out, size, 0, null, 0)).toBe(OK);
        pr.reservations.push({
          base: out.value,
          granules,
          slots: new Array(granules).fill(undefined),
        });
        break;
      }
      case 'release': {
        const r = pick(pr.reservations, op.i);
        if (r === undefined) {
          expect(acl.aclrtReleaseMemAddress(0x1234_0000_0000n)).toBe(PARAM);
          break;
        }
        const busy = r.slots.some((s) => s !== undefined);
        expect(acl.aclrtReleaseMemAddress(r.base)).toBe(busy ? PARAM : OK);
        if (!busy) pr.reservations.splice(pr.reservations.indexOf(r), 1);
        break;
      }
      case 'create': {
        const out = { value: 0n };
        const code = acl.aclrtMallocPhysical(out, op.bad ? G + 4096 : G, prop({}, op.d), 0);
        if (op.bad) expect(code).toBe(PARAM);
        else {
          expect(code).toBe(OK);
          pr.allocs.push({
            id: out.value,
            mem: nextMem++,
            device: op.d,
            imported: false,
            refs: 1,
            mapRefs: 0,
            exported: false,
          });
        }
        break;
      }
      case 'free': {
        const a = pick(live(pr), op.i);
        if (a === undefined) {
          expect(acl.aclrtFreePhysical(999n)).toBe(C.ACL_ERROR_RT_INVALID_HANDLE);
          break;
        }
        expect(acl.aclrtFreePhysical(a.id)).toBe(OK);
        a.refs--;
        forget(pr, a);
        break;
      }
      case 'map': {
        const r = pick(pr.reservations, op.r);
        const a = pick(live(pr), op.h);
        if (r === undefined || a === undefined) break;
        // Slots past the end may fall in a neighbouring reservation: the model looks the address up.
        const va = r.base + BigInt(op.slot * G);
        const target = pr.reservations.find((x) => va >= x.base && va < x.base + BigInt(x.granules * G));
        const slot = target === undefined ? -1 : Number((va - target.base) / BigInt(G));
        const others = target?.slots.filter((s): s is MapRec => s !== undefined) ?? [];
        let expected = OK;
        if (target === undefined || target.slots[slot] !== undefined) expected = PARAM;
        else if (others.some((m) => m.alloc.device !== a.device || m.alloc.imported !== a.imported))
          expected = PARAM;
        // aclrtMapMem grants the memory's own device read-write; aclrtMemMapNoAccess grants nothing.
        const code = op.grant
          ? acl.aclrtMapMem(va, G, 0, a.id, 0)
          : acl.aclrtMemMapNoAccess(va, G, 0, a.id, 0);
        expect(code).toBe(expected);
        if (expected === OK) {
          const m: MapRec = { va, res: target!, alloc: a, access: [0, 0] };
          target!.slots[slot] = m;
          seen.mapped++;
          pr.mappings.push(m);
          a.mapRefs++;
          if (op.grant) m.access[a.device] = 3;
        }
        break;
      }
      case 'unmap': {
        const m = pick(pr.mappings, op.i);
        if (m === undefined) break;
        if (op.inside) {
          expect(acl.aclrtUnmapMem(m.va + 4096n)).toBe(PARAM);
          break;
        }
        expect(acl.aclrtUnmapMem(m.va)).toBe(OK);
        pr.mappings.splice(pr.mappings.indexOf(m), 1);
        m.res.slots[m.res.slots.indexOf(m)] = undefined;
        m.alloc.mapRefs--;
        forget(pr, m.alloc);
        break;
      }
      case 'access': {
        const m = pick(pr.mappings, op.i);
        if (m === undefined) break;
        const desc = [{ flags: op.flags, location: { id: op.d, type: C.ACL_MEM_LOCATION_TYPE_DEVICE } }];
        // CANN supports READWRITE only; NONE and READ are refused and change nothing.
        const ok = op.flags === C.ACL_RT_MEM_ACCESS_FLAGS_READWRITE;
        expect(acl.aclrtMemSetAccess(m.va, G, desc, 1)).toBe(ok ? OK : PARAM);
        if (ok) m.access[op.d] = op.flags;
        break;
      }
      case 'write': {
        const m = pick(pr.mappings, op.i);
        if (m === undefined) break;
        const src = new Uint8Array(op.len);
        for (let j = 0; j < op.len; j++) src[j] = (op.seed + j * 13) & 0xff;
        const allowed = (m.access[pr.device] & 2) !== 0;
        const code = acl.aclrtMemcpy(m.va + BigInt(op.off), op.len, src, op.len, C.ACL_MEMCPY_HOST_TO_DEVICE);
        expect(code).toBe(allowed ? OK : NO_PERMISSION);
        if (!allowed) seen.denied++;
        if (allowed) {
          let shadow = bytes.get(m.alloc.mem);
          if (shadow === undefined) bytes.set(m.alloc.mem, (shadow = new Map()));
          for (let j = 0; j < op.len; j++) shadow.set(op.off + j, src[j]);
        }
        break;
      }
      case 'read': {
        const m = pick(pr.mappings, op.i);
        if (m === undefined) break;
        const dst = new Uint8Array(op.len);
        const allowed = (m.access[pr.device] & 1) !== 0;
        const code = acl.aclrtMemcpy(dst, op.len, m.va + BigInt(op.off), op.len, C.ACL_MEMCPY_DEVICE_TO_HOST);
        expect(code).toBe(allowed ? OK : NO_PERMISSION);
        if (allowed) {
          const shadow = bytes.get(m.alloc.mem);
          const want = Array.from({ length: op.len }, (_, j) => shadow?.get(op.off + j) ?? 0);
          expect([...dst]).toEqual(want);
          if (want.some((b) => b !== 0)) seen.verifiedBytes++;
          if (m.alloc.imported || m.alloc.mapRefs > 1) seen.aliasReads++;
        }
        break;
      }
      case 'retain': {
        const m = pick(pr.mappings, op.i);
        if (m === undefined) break;
        const out = { value: 0n };
        expect(acl.aclrtMemRetainAllocationHandle(m.va + 100n, out)).toBe(OK);
        expect(out.value).toBe(m.alloc.id);
        m.alloc.refs++;
        break;
      }
      case 'export': {
        const a = pick(live(pr), op.h);
        if (a === undefined) break;
        const out = { value: 0n };
        const flags = op.disable
          ? C.ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION
          : C.ACL_RT_VMM_EXPORT_FLAG_DEFAULT;
        const expected = a.imported || a.exported ? PARAM : OK;
        expect(acl.aclrtMemExportToShareableHandle(a.id, C.ACL_MEM_HANDLE_TYPE_NONE, flags, out)).toBe(
          expected,
        );
        if (expected === OK) {
          a.exported = true;
          tokens.push({
            source: a,
            value: out.value,
            owner: op.p,
            mem: a.mem,
            device: a.device,
            checkPid: !op.disable,
            allowed: false,
          });
        }
        break;
      }
      case 'allow': {
        const t = pick(tokens, op.t);
        if (t === undefined) break;
        const other = 1 - op.p;
        const code = acl.aclrtMemSetPidToShareableHandle(t.value, [pidOf(other)], 1);
        expect(code).toBe(t.owner === op.p && !t.source.freed ? OK : PARAM);
        if (code === OK) t.allowed = true;
        break;
      }
      case 'import': {
        const t = pick(tokens, op.t);
        if (t === undefined) break;
        const out = { value: 0n };
        // The flavor refuses its own tokens before asking the machine, which no longer knows withdrawn ones.
        const expected =
          t.owner === op.p
            ? C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT
            : t.source.freed
              ? PARAM
              : t.checkPid && !t.allowed
                ? NO_PERMISSION
                : OK;
        expect(acl.aclrtMemImportFromShareableHandle(t.value, 0, out)).toBe(expected);
        if (expected === OK) seen.imported++;
        if (expected === OK)
          pr.allocs.push({
            id: out.value,
            mem: t.mem,
            device: t.device,
            imported: true,
            refs: 1,
            mapRefs: 0,
            exported: false,
          });
        break;
      }
      case 'null': {
        const calls = [
          () => acl.aclrtMapMem(0n, G, 0, 1n, 0),
          () => acl.aclrtUnmapMem(0n),
          () => acl.aclrtReleaseMemAddress(null),
          () => acl.aclrtMallocPhysical({ value: 0n }, 0, prop(), 0),
          () => acl.aclrtMemSetAccess(0n, G, [], 1),
          () => acl.aclrtMemcpy(0n, 8, new Uint8Array(8), 8, C.ACL_MEMCPY_HOST_TO_DEVICE),
        ];
        expect(calls[op.which]()).toBe(C.ACL_ERROR_INVALID_PARAM);
        break;
      }
    }
    checkInvariants(procs);
  }

  // Teardown through the API, in the seed's order: unmap, free, release.
  for (const pr of procs) {
    for (const m of [...pr.mappings]) expect(pr.acl.aclrtUnmapMem(m.va)).toBe(OK);
    for (const a of pr.allocs) for (; a.refs > 0; a.refs--) expect(pr.acl.aclrtFreePhysical(a.id)).toBe(OK);
    for (const r of pr.reservations) expect(pr.acl.aclrtReleaseMemAddress(r.base)).toBe(OK);
    expect(pr.acl.runtime.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
  }
  for (const pr of procs) pr.acl.dispose();
  // Exported memory lives until its exporter exits; then nothing is left.
  expect(machine.liveAllocations).toBe(0);
}

/** Drop a model allocation that neither a handle nor a mapping holds. */
function forget(pr: Proc, a: Alloc): void {
  if (a.refs === 0 && a.mapRefs === 0) {
    pr.allocs.splice(pr.allocs.indexOf(a), 1);
    a.freed = true;
  }
}

function checkInvariants(procs: readonly Proc[]): void {
  for (const pr of procs) {
    const ms = [...pr.acl.runtime.mappings()].sort((x, y) => x.va - y.va);
    expect(ms.length).toBe(pr.mappings.length);
    for (let j = 1; j < ms.length; j++) expect(ms[j - 1].end).toBeLessThanOrEqual(ms[j].va);
    for (const m of pr.mappings) {
      const real = pr.acl.runtime.mappingAt(Number(m.va));
      expect(real?.va).toBe(Number(m.va));
      expect([real!.accessOf(0), real!.accessOf(1)]).toEqual(m.access);
    }
  }
}

describe('ACL property: random call sequences against a shadow model', () => {
  it('agrees with the model call by call and leaks nothing', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 40, maxLength: 120 }), (ops) => run(ops)),
      { numRuns: 150 },
    );
    expect(seen.mapped).toBeGreaterThan(100);
    expect(seen.verifiedBytes).toBeGreaterThan(0);
    expect(seen.denied).toBeGreaterThan(10);
    expect(seen.imported).toBeGreaterThan(5);
    expect(seen.aliasReads).toBeGreaterThan(0);
    expect(seen.denied).toBeGreaterThan(0);
  });
});
