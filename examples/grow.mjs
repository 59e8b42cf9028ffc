// A script for `vmmkit trace`, `vmmkit inspect` and `vmmkit map`: a buffer grown
// in place on a simulated H200, reading back through the same pointer, then
// undone. mark('grown') names the point where both chunks are mapped:
//
//   vmmkit trace examples/grow.mjs
//   vmmkit inspect examples/grow.mjs --at grown
//   vmmkit map examples/grow.mjs --at grown --out grow.html
export default function ({ createCuda, mark }) {
  const cu = createCuda();
  const ctx = { value: 0n };
  cu.cuInit(0);
  cu.cuDevicePrimaryCtxRetain(ctx, 0);
  cu.cuCtxSetCurrent(ctx.value);
  const MiB2 = 2 * 1024 * 1024;
  const prop = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } };
  const rw = [{ location: { type: 1, id: 0 }, flags: 3 }];
  const base = { value: 0n };
  cu.cuMemAddressReserve(base, 4 * MiB2, 0, 0n, 0);
  const handles = [];
  for (let i = 0; i < 2; i++) {
    const h = { value: 0n };
    cu.cuMemCreate(h, MiB2, prop, 0);
    cu.cuMemMap(base.value + BigInt(i * MiB2), MiB2, 0, h.value, 0);
    cu.cuMemSetAccess(base.value + BigInt(i * MiB2), MiB2, rw, 1);
    handles.push(h.value);
  }
  cu.cuMemsetD8(base.value, 0x5a, 2 * MiB2);
  const out = new Uint8Array(4);
  cu.cuMemcpyDtoH(out, base.value + BigInt(MiB2 - 2), 4);
  mark('grown');
  cu.cuMemUnmap(base.value, 2 * MiB2);
  for (const h of handles) cu.cuMemRelease(h);
  cu.cuMemAddressFree(base.value, 4 * MiB2);
  cu.dispose();
}
