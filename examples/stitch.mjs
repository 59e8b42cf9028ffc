// The seed's "stitch": one contiguous range holding a chunk of this process's
// memory and a chunk another process exported, written and copied across the
// boundary between them.
//
//   node examples/stitch.mjs          two processes on a simulated H200 (machine.passFd carries the fd)
//   node examples/stitch.mjs --gpu    two real OS processes on the GPU: this one forks the exporter,
//                                     takes its fd with takeFd (pidfd_getfd) and imports it
//
// The exporter creates 2 MiB, fills it with 0xE0 and exports it as a POSIX fd;
// the stitcher maps [its own chunk | the exporter's chunk] in one reservation
// (one cuMemSetAccess over both), writes "stitched!" at its own chunk's start,
// copies 4 KiB from there to 4 bytes before the boundary (cuMemcpyDtoD), and
// the exporter reads its own memory to see what landed there: "ched!", then
// the stitcher's 0x11 bytes.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CHUNK = 2 * 1024 * 1024;
const prop = { type: 1, requestedHandleTypes: 1, location: { type: 1, id: 0 } }; // PINNED, POSIX fd, device 0
const rw = [{ location: { type: 1, id: 0 }, flags: 3 }];

function must(code, call) {
  if (code !== 0) throw new Error(`${call} answered ${code}`);
}

function context(cu) {
  const ctx = { value: 0n };
  must(cu.cuInit(0), 'cuInit');
  must(cu.cuDevicePrimaryCtxRetain(ctx, 0), 'cuDevicePrimaryCtxRetain');
  must(cu.cuCtxSetCurrent(ctx.value), 'cuCtxSetCurrent');
}

/** The exporting process: memory filled with 0xE0, mapped so it can read it back later, exported as an fd. */
export function exporter(cu) {
  context(cu);
  const h = { value: 0n };
  const va = { value: 0n };
  const fd = { value: -1 };
  must(cu.cuMemCreate(h, CHUNK, prop, 0), 'cuMemCreate');
  must(cu.cuMemAddressReserve(va, CHUNK, 0, 0n, 0), 'cuMemAddressReserve');
  must(cu.cuMemMap(va.value, CHUNK, 0, h.value, 0), 'cuMemMap');
  must(cu.cuMemSetAccess(va.value, CHUNK, rw, 1), 'cuMemSetAccess');
  must(cu.cuMemsetD8(va.value, 0xe0, CHUNK), 'cuMemsetD8');
  must(cu.cuMemExportToShareableHandle(fd, h.value, 1, 0), 'cuMemExportToShareableHandle');
  return {
    fd: fd.value,
    /** What the exporter sees at the start of its chunk now. */
    head(n) {
      const out = new Uint8Array(n);
      must(cu.cuMemcpyDtoH(out, va.value, n), 'cuMemcpyDtoH (exporter)');
      return out;
    },
  };
}

/** The stitching process: [local chunk | imported chunk] in one reservation, bytes across the boundary. */
export function stitcher(cu, fd) {
  context(cu);
  const imported = { value: 0n };
  // The call takes no size: the first map of the handle tells it (Note [Foreign memory sizes]).
  must(cu.cuMemImportFromShareableHandle(imported, fd, 1), 'cuMemImportFromShareableHandle');
  const local = { value: 0n };
  const base = { value: 0n };
  must(cu.cuMemCreate(local, CHUNK, { ...prop, requestedHandleTypes: 0 }, 0), 'cuMemCreate');
  must(cu.cuMemAddressReserve(base, 2 * CHUNK, 0, 0n, 0), 'cuMemAddressReserve');
  const boundary = base.value + BigInt(CHUNK);
  must(cu.cuMemMap(base.value, CHUNK, 0, local.value, 0), 'cuMemMap (local)');
  must(cu.cuMemMap(boundary, CHUNK, 0, imported.value, 0), 'cuMemMap (imported)');
  must(cu.cuMemSetAccess(base.value, 2 * CHUNK, rw, 1), 'cuMemSetAccess (both chunks, one call)');
  must(cu.cuMemsetD8(base.value, 0x11, CHUNK), 'cuMemsetD8 (local)');
  const text = new TextEncoder().encode('stitched!');
  must(cu.cuMemcpyHtoD(base.value, text, text.length), 'cuMemcpyHtoD (local)');
  // 4 KiB from the local chunk's start copied to straddle the boundary: 4 bytes before it, the rest after.
  must(cu.cuMemcpyDtoD(boundary - 4n, base.value, 4096), 'cuMemcpyDtoD (across the boundary)');
  const around = new Uint8Array(12);
  must(cu.cuMemcpyDtoH(around, boundary - 4n, 12), 'cuMemcpyDtoH');
  must(cu.cuCtxSynchronize(), 'cuCtxSynchronize');
  return {
    around,
    undo() {
      must(cu.cuMemUnmap(base.value, 2 * CHUNK), 'cuMemUnmap');
      must(cu.cuMemRelease(local.value), 'cuMemRelease (local)');
      must(cu.cuMemRelease(imported.value), 'cuMemRelease (imported)');
      must(cu.cuMemAddressFree(base.value, 2 * CHUNK), 'cuMemAddressFree');
    },
  };
}

const show = (u) =>
  [...u]
    .map((b) => (b >= 0x21 && b < 0x7f ? ` ${String.fromCharCode(b)}` : b.toString(16).padStart(2, '0')))
    .join(' ');

/** Both processes on one simulated machine; returns what each saw. */
export function onSimulator({ createCuda, createMachine }) {
  const machine = createMachine({ devices: ['H200'] });
  const a = createCuda({ machine });
  const b = createCuda({ machine });
  const exported = exporter(a);
  const fd = machine.passFd(a, exported.fd, b); // what SCM_RIGHTS or pidfd_getfd does
  const s = stitcher(b, fd);
  const seen = { stitcher: s.around, exporter: exported.head(12) };
  s.undo();
  a.dispose();
  b.dispose();
  return seen;
}

function report(where, seen) {
  console.log(`stitch (${where}):`);
  console.log(`  stitcher reads around the boundary: ${show(seen.stitcher)}`);
  console.log(`  exporter reads its chunk's start:  ${show(seen.exporter)}`);
}

async function main() {
  const vmmkit = await import('vmmkit');
  const args = process.argv.slice(2);
  if (args[0] === '--exporter') {
    // The child: export, hand the fd's number to the parent, read once the parent has written.
    const cu = vmmkit.createCuda({ backend: 'cuda' });
    const exported = exporter(cu);
    process.send({ pid: process.pid, fd: exported.fd });
    process.once('message', () => {
      process.send({ head: [...exported.head(12)] }, () => {
        cu.dispose();
        process.exit(0);
      });
    });
    return;
  }
  if (!args.includes('--gpu')) {
    report('two processes on a simulated H200', onSimulator(vmmkit));
    return;
  }
  // Without a GPU (no libcuda, no device) that is one line and exit 1, before any process is forked.
  let cu;
  try {
    cu = vmmkit.createCuda({ backend: 'cuda' });
  } catch (e) {
    console.error(`stitch --gpu: ${oneLine(e)}`);
    process.exitCode = 1;
    return;
  }
  const child = fork(fileURLToPath(import.meta.url), ['--exporter']);
  // The exporter's next message, or its end if it dies before sending one (so the parent never waits forever).
  const next = () =>
    new Promise((resolve, reject) => {
      const exited = (code) => reject(new Error(`the exporter ended (exit code ${code}) before answering`));
      child.once('exit', exited);
      child.once('message', (m) => {
        child.off('exit', exited);
        resolve(m);
      });
    });
  const first = await next();
  const fd = vmmkit.takeFd(first.pid, first.fd); // pidfd_getfd: the exporter's fd, now this process's
  const s = stitcher(cu, fd);
  child.send('read');
  const second = await next();
  report(`process ${process.pid} stitching process ${first.pid}'s memory on the GPU`, {
    stitcher: s.around,
    exporter: Uint8Array.from(second.head),
  });
  s.undo();
  cu.dispose();
}

/** An error as one line (a driver's message may hold several). */
function oneLine(e) {
  return (e instanceof Error ? e.message : String(e)).replace(/\s*\n\s*/g, ' ');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await main().catch((e) => {
    console.error(`stitch: ${oneLine(e)}`);
    process.exitCode = 1;
  });
}
