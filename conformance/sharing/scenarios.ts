/**
 * What must hold when processes share memory (issue 11, part 1), as
 * scenarios over peers (peer.ts): each peer is a simulated process on one
 * machine (the tests: harness sim-harness.ts) or a real OS process on the
 * GPU (conformance/gpu/share.ts: os-harness.ts). The same scenario code runs
 * on both, so what the H200 shows and what the simulator models are checked
 * by the same lines.
 *
 * Per flavour: (1) `shared`: bytes written by one process are read by the
 * other, both ways; device free memory falls by exactly the size at create,
 * not at import, and comes back to its baseline only when the last process
 * lets go (exporter first, then importer); a descriptor number that was
 * never passed is refused with the driver's code; the imported handle's
 * properties; the stitch (a local chunk and the imported one in one
 * reservation, copied across the boundary both ways); for ACL the pid
 * whitelist (a process not on it is refused, then allowed) and the
 * disable-pid-validation flag. (2) `exporter-exits` and (3)
 * `exporter-killed`: the exporter ends (exit, or SIGKILL) while the importer
 * maps the memory; the importer's bytes stay and the memory goes when the
 * importer lets go; for ACL a token of a dead exporter is refused.
 */
import { type Answer, b64, type FlavourName, fromB64, type PeerSteps } from './peer.js';

/** A peer in some process, reached asynchronously. */
export interface RemotePeer {
  readonly label: string;
  call<K extends keyof PeerSteps>(step: K, ...args: Parameters<PeerSteps[K]>): Promise<Answer>;
  /** End the process without any cleanup (SIGKILL; on the simulator, exit is all there is). */
  kill(): Promise<void>;
  /** End it as exit does (dispose, then exit). */
  exit(): Promise<void>;
}

export interface Harness {
  readonly kind: 'simulator' | 'os-processes';
  spawn(flavour: FlavourName, label: string): Promise<RemotePeer>;
}

export interface Check {
  readonly name: string;
  readonly pass: boolean;
  readonly detail?: unknown;
}

export interface ScenarioResult {
  readonly scenario: string;
  readonly flavour: FlavourName;
  readonly checks: Check[];
  /** What the peers answered that a reader wants to see (codes, properties, memory). */
  readonly observed: Record<string, unknown>;
  readonly error?: string;
}

/** The bytes at stake: 4 MiB chunks (two granules on the H200), a 16 KiB pattern across a boundary. */
export const CHUNK = 4 << 20;
const PIECE = 16 << 10;

export function pattern(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 167 + seed * 29 + (i >> 9)) & 255;
  return b;
}

class StepFailed extends Error {}

class Run {
  readonly checks: Check[] = [];
  readonly observed: Record<string, unknown> = {};
  constructor(
    readonly scenario: string,
    readonly flavour: FlavourName,
  ) {}

  /** A step that must succeed: its value. */
  async must(peer: RemotePeer, step: keyof PeerSteps, ...args: unknown[]): Promise<number> {
    const a = await (peer.call as (s: string, ...x: unknown[]) => Promise<Answer>)(step, ...args);
    if (a.code !== 0) {
      this.checks.push({ name: `${peer.label}.${step} succeeds`, pass: false, detail: a });
      throw new StepFailed(`${peer.label}.${step}(${args.join(', ')}) answered ${a.code}`);
    }
    return a.value ?? 0;
  }

  async read(peer: RemotePeer, va: number, n: number): Promise<Uint8Array> {
    const a = await peer.call('read', va, n);
    if (a.code !== 0 || a.bytes === undefined) {
      this.checks.push({ name: `${peer.label}.read succeeds`, pass: false, detail: a });
      throw new StepFailed(`${peer.label}.read answered ${a.code}`);
    }
    return fromB64(a.bytes);
  }

  check(name: string, pass: boolean, detail?: unknown): void {
    this.checks.push(detail === undefined ? { name, pass } : { name, pass, detail });
  }

  result(error?: unknown): ScenarioResult {
    const r: ScenarioResult = {
      scenario: this.scenario,
      flavour: this.flavour,
      checks: this.checks,
      observed: this.observed,
    };
    if (error === undefined) return r;
    return { ...r, error: error instanceof Error ? error.message : String(error) };
  }
}

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;

/** Codes a flavour gives for an import of a descriptor that is not this process's (the driver's 999 under CUDA). */
export const NEVER_PASSED_CODE: Record<FlavourName, number> = { cuda: 999, hip: 1, acl: 107000 };
/** ACL_ERROR_RT_NO_PERMISSION: an importer not on the token's pid list. */
export const ACL_NO_PERMISSION = 207006;

/** Export `handle` of `from` and bring it into `to`; returns the handle in `to` (and the exporter's fd or token). */
async function share(
  run: Run,
  flavour: FlavourName,
  from: RemotePeer,
  handle: number,
  to: RemotePeer,
  toPid: number,
  fromPid: number,
): Promise<{ imported: number; exported: number }> {
  const exported = await run.must(from, 'export', handle, [toPid]);
  if (flavour === 'acl') return { imported: await run.must(to, 'import', exported), exported };
  const taken = await run.must(to, 'take', fromPid, exported);
  const imported = await run.must(to, 'import', taken);
  // The imported handle holds the memory; the taken descriptor is no longer needed.
  await run.must(to, 'close', taken);
  return { imported, exported };
}

/** Memory the exporter made: created, mapped, granted, written with `data`. */
async function exporterChunk(run: Run, peer: RemotePeer, data: Uint8Array) {
  const handle = await run.must(peer, 'create', CHUNK);
  const va = await run.must(peer, 'reserve', CHUNK);
  await run.must(peer, 'map', va, CHUNK, handle);
  await run.must(peer, 'access', va, CHUNK);
  await run.must(peer, 'write', va, b64(data));
  return { handle, va };
}

async function teardown(run: Run, peer: RemotePeer, va: number, handle: number, size = CHUNK): Promise<void> {
  await run.must(peer, 'unmap', va, size);
  await run.must(peer, 'release', handle);
  await run.must(peer, 'free', va, size);
}

export async function sharedScenario(h: Harness, flavour: FlavourName): Promise<ScenarioResult> {
  const run = new Run('shared', flavour);
  const peers: RemotePeer[] = [];
  try {
    const x = await h.spawn(flavour, 'exporter');
    peers.push(x);
    const y = await h.spawn(flavour, 'importer');
    peers.push(y);
    const z = flavour === 'acl' ? await h.spawn(flavour, 'outsider') : undefined;
    if (z) peers.push(z);
    const xPid = await run.must(x, 'pid');
    const yPid = await run.must(y, 'pid');
    const f0 = await run.must(y, 'freeMemory');

    const p1 = pattern(CHUNK, 1);
    const xs = await exporterChunk(run, x, p1);
    const f1 = await run.must(y, 'freeMemory');
    run.check('create takes exactly its size of device memory', f0 - f1 === CHUNK, { f0, f1 });

    const { imported, exported } = await share(run, flavour, x, xs.handle, y, yPid, xPid);
    run.observed.importerProps = (await y.call('props', imported)).props;
    run.observed.exporterProps = (await x.call('props', xs.handle)).props;
    const yva = await run.must(y, 'reserve', CHUNK);
    // CUDA and HIP were told no size: the first map tells it (Note [Foreign memory sizes]).
    if (flavour !== 'hip') {
      // (HIP maps pieces of a handle on the simulator, whose sizes are known; over CUDA only whole ones.)
      const wrongMap = await y.call('map', yva, CHUNK / 2, imported);
      run.observed.mapOfWrongSize = wrongMap.code;
      run.check('a first map of another size is refused', wrongMap.code !== 0, wrongMap);
    }
    await run.must(y, 'map', yva, CHUNK, imported);
    await run.must(y, 'access', yva, CHUNK);
    run.check('the importer reads what the exporter wrote', sameBytes(await run.read(y, yva, CHUNK), p1));
    const f2 = await run.must(y, 'freeMemory');
    run.check('import and map take no device memory', f2 === f1, { f1, f2 });

    const p2 = pattern(PIECE, 2);
    await run.must(y, 'write', yva + CHUNK / 2, b64(p2));
    run.check(
      'the exporter reads what the importer wrote',
      sameBytes(await run.read(x, xs.va + CHUNK / 2, PIECE), p2),
    );

    // A descriptor number (or token) that was never passed to this process.
    const never = await y.call('import', flavour === 'acl' ? exported + 1 : exported);
    run.observed.neverPassedCode = never.code;
    run.check(
      "an fd or token never passed is refused with the driver's code",
      never.code === NEVER_PASSED_CODE[flavour],
      never,
    );

    // The stitch: [local chunk | imported chunk] in one reservation, copied across the boundary both ways.
    const base = await run.must(y, 'reserve', 2 * CHUNK);
    const local = await run.must(y, 'create', CHUNK);
    await run.must(y, 'map', base, CHUNK, local);
    if (flavour === 'acl') {
      // CANN: one range may not hold both allocated and imported memory (Note [ACL reservation holdings]).
      const mixed = await y.call('map', base + CHUNK, CHUNK, imported);
      run.observed.aclStitch = mixed.code;
      run.check('ACL refuses a range holding local and imported memory', mixed.code === 107000, mixed);
      await run.must(y, 'unmap', base, CHUNK);
      await run.must(y, 'release', local);
      await run.must(y, 'free', base, 2 * CHUNK);
    } else await stitch(run, x, y, xs.va, base, local, imported, f1);

    if (z) await aclWhitelist(run, x, z, exported);

    // The exporter lets go first: the importer still holds the memory.
    await teardown(run, x, xs.va, xs.handle);
    if (flavour !== 'acl') await run.must(x, 'close', exported);
    const f3 = await run.must(y, 'freeMemory');
    run.check('memory stays while the importer holds it', f3 === f1, { f1, f3 });
    run.check('the importer still reads its bytes', sameBytes(await run.read(y, yva + CHUNK / 2, PIECE), p2));
    if (flavour === 'acl') {
      const after = await y.call('import', exported);
      run.observed.tokenAfterFree = after.code;
      run.check('a token is withdrawn when its memory is freed', after.code === NEVER_PASSED_CODE.acl, after);
    }
    await teardown(run, y, yva, imported);
    const f4 = await run.must(y, 'freeMemory');
    run.check('memory goes back to the baseline when the last process lets go', f4 === f0, { f0, f4 });
    return run.result();
  } catch (e) {
    return run.result(e);
  } finally {
    for (const p of peers) await p.exit().catch(() => undefined);
  }
}

/** The rest of the stitch, after the local chunk is mapped at `base`: the imported one after it, copies across. */
async function stitch(
  run: Run,
  x: RemotePeer,
  y: RemotePeer,
  xva: number,
  base: number,
  local: number,
  imported: number,
  f1: number,
): Promise<void> {
  await run.must(y, 'map', base + CHUNK, CHUNK, imported);
  await run.must(y, 'access', base, CHUNK);
  await run.must(y, 'access', base + CHUNK, CHUNK);
  const q = pattern(PIECE, 3);
  await run.must(y, 'write', base, b64(q));
  const boundary = base + CHUNK - PIECE / 2;
  await run.must(y, 'copy', boundary, base, PIECE); // local -> across the boundary
  await run.must(y, 'copy', base + 2 * CHUNK - PIECE, boundary, PIECE); // across the boundary -> imported
  run.check(
    'the stitched range reads the copy across its boundary',
    sameBytes(await run.read(y, boundary, PIECE), q),
  );
  run.check(
    "the exporter sees the copy's second half at its chunk's start",
    sameBytes(await run.read(x, xva, PIECE / 2), q.subarray(PIECE / 2)),
  );
  run.check(
    "the exporter sees the copy from the boundary at its chunk's end",
    sameBytes(await run.read(x, xva + CHUNK - PIECE, PIECE), q),
  );
  const fStitch = await run.must(y, 'freeMemory');
  run.check('the stitch took only its local chunk', f1 - fStitch === CHUNK, { f1, fStitch });
  await run.must(y, 'unmap', base, CHUNK);
  await run.must(y, 'unmap', base + CHUNK, CHUNK);
  await run.must(y, 'release', local);
  await run.must(y, 'free', base, 2 * CHUNK);
}

/** ACL: the pid whitelist and the flag that turns it off, with a third process. */
async function aclWhitelist(run: Run, x: RemotePeer, z: RemotePeer, token: number): Promise<void> {
  const zPid = await run.must(z, 'pid');
  const refused = await z.call('import', token);
  run.observed.notWhitelisted = refused.code;
  run.check(
    'a process not on the pid list is refused (ACL_ERROR_RT_NO_PERMISSION)',
    refused.code === ACL_NO_PERMISSION,
    refused,
  );
  await run.must(x, 'allow', token, [zPid]);
  const zh = await run.must(z, 'import', token);
  await run.must(z, 'release', zh);
  run.check('once whitelisted, it imports', true);
  // A second handle, exported with ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION: anyone may import.
  const open = await run.must(x, 'create', CHUNK);
  const openToken = await run.must(x, 'export', open, 'any');
  const zo = await run.must(z, 'import', openToken);
  await run.must(z, 'release', zo);
  run.check('a token exported without pid validation imports anywhere', true);
  await run.must(x, 'release', open);
}

/** The exporter ends (exit or SIGKILL) while the importer maps its memory. */
export async function exporterEndsScenario(
  h: Harness,
  flavour: FlavourName,
  how: 'exit' | 'kill',
): Promise<ScenarioResult> {
  const run = new Run(how === 'exit' ? 'exporter-exits' : 'exporter-killed', flavour);
  const peers: RemotePeer[] = [];
  try {
    const x = await h.spawn(flavour, 'exporter');
    peers.push(x);
    const y = await h.spawn(flavour, 'importer');
    peers.push(y);
    const xPid = await run.must(x, 'pid');
    const yPid = await run.must(y, 'pid');
    const data = pattern(CHUNK, 4);
    const xs = await exporterChunk(run, x, data);
    const { imported, exported } = await share(run, flavour, x, xs.handle, y, yPid, xPid);
    const yva = await run.must(y, 'reserve', CHUNK);
    await run.must(y, 'map', yva, CHUNK, imported);
    await run.must(y, 'access', yva, CHUNK);
    if (how === 'exit') await x.exit();
    else await x.kill();
    const fGone = await run.must(y, 'freeMemory');
    run.check(
      "the importer's bytes are intact after the exporter is gone",
      sameBytes(await run.read(y, yva, CHUNK), data),
    );
    const more = pattern(PIECE, 5);
    await run.must(y, 'write', yva + PIECE, b64(more));
    run.check(
      'the importer still writes and reads it',
      sameBytes(await run.read(y, yva + PIECE, PIECE), more),
    );
    if (flavour === 'acl') {
      const stale = await y.call('import', exported);
      run.observed.tokenOfDeadExporter = stale.code;
      run.check(
        'a token of an exporter that is gone is refused',
        stale.code === NEVER_PASSED_CODE.acl,
        stale,
      );
    }
    await teardown(run, y, yva, imported);
    const fAfter = await run.must(y, 'freeMemory');
    run.check('the memory goes when the importer lets go', fAfter - fGone === CHUNK, { fGone, fAfter });
    return run.result();
  } catch (e) {
    return run.result(e);
  } finally {
    for (const p of peers) await p.exit().catch(() => undefined);
  }
}

/**
 * ACL's IPC by key (Note [ACL IPC keys]): aclrtMalloc memory shared under a
 * string key, whitelisted by pid; bytes both ways; a process not named is
 * refused; the exporter's aclrtFree withdraws the key while the importer's
 * mapping keeps the memory, which goes at the importer's close; a key
 * exported without pid validation imports anywhere.
 */
export async function aclIpcKeyScenario(h: Harness): Promise<ScenarioResult> {
  const run = new Run('ipc-key', 'acl');
  const peers: RemotePeer[] = [];
  const key = async (peer: RemotePeer, ...args: Parameters<PeerSteps['keyExport']>): Promise<string> => {
    const a = await peer.call('keyExport', ...args);
    if (a.code !== 0 || typeof a.props !== 'string') {
      run.check(`${peer.label}.keyExport succeeds`, false, a);
      throw new StepFailed(`${peer.label}.keyExport answered ${a.code}`);
    }
    return a.props;
  };
  try {
    const x = await h.spawn('acl', 'exporter');
    peers.push(x);
    const y = await h.spawn('acl', 'importer');
    peers.push(y);
    const z = await h.spawn('acl', 'outsider');
    peers.push(z);
    const yPid = await run.must(y, 'pid');
    const f0 = await run.must(x, 'freeMemory');
    // aclrtMalloc adds 32 bytes of padding: this size takes exactly one CHUNK.
    const size = CHUNK - 64;
    const xva = await run.must(x, 'malloc', size);
    const data = pattern(CHUNK - 64, 6);
    await run.must(x, 'write', xva, b64(data));
    const k = await key(x, xva, size, [yPid]);
    run.observed.keyLength = k.length;
    const refused = await z.call('keyImport', k);
    run.observed.outsiderImport = refused.code;
    run.check(
      'a process not on the pid list is refused (ACL_ERROR_RT_NO_PERMISSION)',
      refused.code === ACL_NO_PERMISSION,
      refused,
    );
    const yva = await run.must(y, 'keyImport', k);
    run.check('the importer reads what the exporter wrote', sameBytes(await run.read(y, yva, size), data));
    const back = pattern(PIECE, 7);
    await run.must(y, 'write', yva + PIECE, b64(back));
    run.check(
      'the exporter reads what the importer wrote',
      sameBytes(await run.read(x, xva + PIECE, PIECE), back),
    );
    await run.must(x, 'mfree', xva);
    const fHeld = await run.must(y, 'freeMemory');
    run.check("the importer's mapping keeps the memory after the exporter's aclrtFree", f0 - fHeld >= CHUNK, {
      f0,
      fHeld,
    });
    const late = await z.call('keyImport', k);
    run.observed.importAfterFree = late.code;
    run.check('aclrtFree withdrew the key', late.code === NEVER_PASSED_CODE.acl, late);
    run.check(
      "the importer's bytes are intact after the exporter's aclrtFree",
      sameBytes(await run.read(y, yva + PIECE, PIECE), back),
    );
    await run.must(y, 'keyClose', k);
    const fAfter = await run.must(y, 'freeMemory');
    run.check('the memory goes at the last close', fAfter - fHeld === CHUNK, { fHeld, fAfter });
    // Without pid validation anyone but the exporter imports.
    const open = await run.must(x, 'malloc', size);
    const k2 = await key(x, open, size, 'any');
    const zva = await run.must(z, 'keyImport', k2);
    run.check('a key exported without pid validation imports anywhere', zva !== 0);
    await run.must(z, 'keyClose', k2);
    await run.must(x, 'keyClose', k2);
    await run.must(x, 'mfree', open);
    return run.result();
  } catch (e) {
    return run.result(e);
  } finally {
    for (const p of peers) await p.exit().catch(() => undefined);
  }
}

export async function allScenarios(h: Harness, flavours: readonly FlavourName[] = ['cuda', 'hip', 'acl']) {
  const results: ScenarioResult[] = [];
  for (const f of flavours) {
    results.push(await sharedScenario(h, f));
    results.push(await exporterEndsScenario(h, f, 'exit'));
    results.push(await exporterEndsScenario(h, f, 'kill'));
    if (f === 'acl') results.push(await aclIpcKeyScenario(h));
  }
  return results;
}
