/**
 * What PyTorch's memory_viz (torch/utils/viz/MemoryViz.js) needs of a
 * snapshot, as facts checked on our export, not its code:
 *
 * - Its own unpickler knows these opcodes only (protocols 2 to 4, no bytes,
 *   no LONG4, no BINUNICODE8), and reads the file as it is (no gzip).
 * - Its segment view starts from the final `segments` (blocks tiling each
 *   segment in order; it takes a block's address from the sizes before it)
 *   and walks the trace backwards: an alloc removes its block, a free
 *   brings it back, a free_requested marks a block that must exist;
 *   segment_alloc removes the segment at that address, segment_map cuts its
 *   range out of the one segment that contains it, and segment_free /
 *   segment_unmap add them back (unmap merging with touching segments of the
 *   same stream). A range it cannot find is an error there.
 */
import { Op } from '../../src/replay/read/pickle/opcodes.js';
import type { PickleDict } from '../../src/replay/read/pickle/value.js';

/** Opcode -> bytes of argument (-1: one length byte then that many; -4: a 4-byte length then that many). */
const KNOWN = new Map<number, number>([
  [Op.PROTO, 1],
  [Op.FRAME, 8],
  [Op.MARK, 0],
  [Op.STOP, 0],
  [Op.APPEND, 0],
  [Op.APPENDS, 0],
  [Op.LIST, 0],
  [Op.TUPLE, 0],
  [Op.TUPLE1, 0],
  [Op.TUPLE2, 0],
  [Op.TUPLE3, 0],
  [Op.EMPTY_TUPLE, 0],
  [Op.EMPTY_LIST, 0],
  [Op.EMPTY_DICT, 0],
  [Op.DICT, 0],
  [Op.SETITEM, 0],
  [Op.SETITEMS, 0],
  [Op.NONE, 0],
  [Op.NEWTRUE, 0],
  [Op.NEWFALSE, 0],
  [Op.BININT, 4],
  [Op.BININT1, 1],
  [Op.BININT2, 2],
  [Op.BINFLOAT, 8],
  [Op.LONG1, -1],
  [Op.SHORT_BINUNICODE, -1],
  [Op.BINUNICODE, -4],
  [Op.MEMOIZE, 0],
  [Op.BINPUT, 1],
  [Op.LONG_BINPUT, 4],
  [Op.BINGET, 1],
  [Op.LONG_BINGET, 4],
]);

/** The first problem memory_viz's reader would have with `bytes`, or undefined. */
export function unreadableByMemoryViz(bytes: Uint8Array): string | undefined {
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) return 'gzip: memory_viz reads the pickle itself';
  let at = 0;
  while (at < bytes.length) {
    const op = bytes[at++];
    const arg = KNOWN.get(op);
    if (arg === undefined) return `opcode 0x${op.toString(16)} at ${at - 1}`;
    if (op === Op.PROTO && (bytes[at] < 2 || bytes[at] > 4)) return `protocol ${bytes[at]}`;
    if (op === Op.LONG1 && bytes[at] > 8) return `a LONG1 of ${bytes[at]} bytes at ${at - 1}`;
    if (op === Op.STOP) return at === bytes.length ? undefined : `bytes after STOP at ${at - 1}`;
    if (arg >= 0) at += arg;
    else if (arg === -1) at += 1 + bytes[at];
    else at += 4 + (bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16)) + bytes[at + 3] * 2 ** 24;
  }
  return 'no STOP';
}

interface Range {
  addr: number;
  size: number;
  stream: number;
}

/** Walk the export backwards as memory_viz's segment view does; the first inconsistency, or undefined. */
export function inconsistencyForMemoryViz(snapshot: PickleDict, device: number): string | undefined {
  const segments: Range[] = [];
  const blocks = new Set<number>();
  for (const s of snapshot.segments as PickleDict[]) {
    if (s.device !== device) continue;
    segments.push({ addr: s.address as number, size: s.total_size as number, stream: s.stream as number });
    let addr = s.address as number;
    for (const b of s.blocks as PickleDict[]) {
      if (b.state !== 'inactive') blocks.add(addr);
      addr += b.size as number;
    }
    if (addr !== (s.address as number) + (s.total_size as number))
      return `blocks of ${s.address} do not tile it`;
  }
  const events = (snapshot.device_traces as PickleDict[][])[device];
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    const addr = e.addr as number;
    const size = e.size as number;
    const stream = e.stream as number;
    switch (e.action) {
      case 'alloc':
        if (!blocks.delete(addr)) return `event ${i}: alloc of ${addr}, which is not live after it`;
        break;
      case 'free_completed':
        blocks.add(addr);
        break;
      case 'free_requested':
        if (!blocks.has(addr)) return `event ${i}: free_requested of ${addr}, not live then`;
        break;
      case 'segment_alloc': {
        const k = segments.findIndex((s) => s.addr === addr);
        if (k < 0) return `event ${i}: segment_alloc of ${addr}, no such segment after it`;
        segments.splice(k, 1);
        break;
      }
      case 'segment_map': {
        const k = segments.findIndex((s) => s.addr <= addr && addr + size <= s.addr + s.size);
        if (k < 0) return `event ${i}: segment_map of [${addr}, +${size}) inside no segment`;
        const s = segments[k];
        const end = s.addr + s.size;
        const parts: Range[] = [];
        if (s.addr < addr) parts.push({ ...s, size: addr - s.addr });
        if (addr + size < end) parts.push({ ...s, addr: addr + size, size: end - addr - size });
        segments.splice(k, 1, ...parts);
        break;
      }
      case 'segment_free':
        segments.push({ addr, size, stream });
        break;
      case 'segment_unmap': {
        const r = { addr, size, stream };
        for (const s of [...segments]) {
          if (s.stream !== stream) continue;
          if (s.addr + s.size === r.addr || r.addr + r.size === s.addr) {
            segments.splice(segments.indexOf(s), 1);
            const lo = Math.min(s.addr, r.addr);
            r.size = Math.max(s.addr + s.size, r.addr + r.size) - lo;
            r.addr = lo;
          }
        }
        segments.push(r);
        break;
      }
    }
  }
  return blocks.size === 0 ? undefined : `${blocks.size} block(s) live before the first event`;
}
