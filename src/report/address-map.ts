/**
 * The address-space map: a process's reservations, mappings and handles
 * (Runtime.describe()) drawn as one SVG, with an allocator's live blocks on
 * top when they are known (the report's map at the peak).
 *
 * Note [Wrapped address strip]: reservations are laid end to end in address
 * order and the strip is wrapped into rows, as memory_viz draws segments, so
 * a thousand small segments and one large one fit the same picture. Address
 * space that is reserved but not mapped costs nothing and can be huge (an
 * expandable segment reserves 1.125x the device), so an unmapped run longer
 * than a few percent of the mapped bytes is drawn at that width and labelled
 * with its real size; mapped bytes are always drawn to scale.
 *
 * What a page can give back: a granule of a mapping that no live block
 * touches holds memory for nothing; an allocator could unmap and release it
 * without moving a byte. Those are hatched, and their bytes summed.
 */
import type { RuntimeDescription } from '../core/runtime.js';
import { Access } from '../core/types.js';
import { escapeXml, formatBytes, hex } from './format.js';
import type { LiveBlock } from './recorder.js';

export interface MapOptions {
  /** Live blocks to draw over the mappings (address order); without them the map shows mappings by handle. */
  readonly blocks?: readonly LiveBlock[];
  /** The colour of mapped memory and blocks (default: one hue per handle). */
  readonly color?: string;
  /** Page size for "could be released" (default: the first device's minimum granularity). */
  readonly pageSize?: number;
  /** Width in pixels (default 960). */
  readonly width?: number;
  /** A line above the map. */
  readonly title?: string;
  /** Prefix of the SVG's pattern ids, unique per map when several share a page (default 'map'). */
  readonly idPrefix?: string;
  /** Data attributes on the root element (the report names the allocator and device). */
  readonly attributes?: Readonly<Record<string, string>>;
  /** The frames that allocated a block (its plan id), shown when hovering over it; none: its address and size only. */
  readonly stackOf?: (block: number) => readonly string[] | undefined;
}

/** What the map counted, beside the picture. */
export interface MapSummary {
  readonly reservations: number;
  readonly reservedAddressBytes: number;
  readonly mappings: number;
  readonly mappedBytes: number;
  readonly handles: number;
  readonly blocks: number;
  readonly blockBytes: number;
  /** Mapped bytes in whole pages no live block touches (only when blocks are given). */
  readonly releasableBytes: number;
}

interface Piece {
  /** Where it starts in the strip, in drawn bytes. */
  readonly at: number;
  readonly va: number;
  readonly size: number;
  readonly drawn: number;
  readonly mapped: boolean;
}

const ROW_HEIGHT = 22;
const ROW_GAP = 6;
/** Rows of the strip: enough for many reservations to read, few for a small map. */
const MAX_ROWS = 16;
const MARGIN = 12;
const HEADER = 42;

/** Render `description` as an SVG document (a string). */
export function renderMap(description: RuntimeDescription, options: MapOptions = {}): string {
  return layoutMap(description, options).svg;
}

/** Render and count (the report prints the counts beside each map). */
export function layoutMap(
  description: RuntimeDescription,
  options: MapOptions = {},
): { svg: string; summary: MapSummary } {
  const width = options.width ?? 960;
  const id = options.idPrefix ?? 'map';
  const pageSize = options.pageSize ?? description.devices[0]?.minimumGranularity ?? 2 * 1024 * 1024;
  const reservations = [...description.reservations].sort((a, b) => a.base - b.base);
  const mappedBytes = reservations.reduce((s, r) => s + r.mappings.reduce((t, m) => t + m.size, 0), 0);
  const collapseAt = Math.max(pageSize, mappedBytes * 0.03);

  // The strip: per reservation its mapped runs to scale and its unmapped runs, long ones shortened.
  const pieces: Piece[][] = [];
  let at = 0;
  for (const r of reservations) {
    const own: Piece[] = [];
    let va = r.base;
    const push = (to: number, mapped: boolean) => {
      if (to <= va) return;
      const size = to - va;
      const drawn = mapped || size <= collapseAt ? size : collapseAt;
      own.push({ at, va, size, drawn, mapped });
      at += drawn;
      va = to;
    };
    for (const m of [...r.mappings].sort((a, b) => a.va - b.va)) {
      push(m.va, false);
      push(m.va + m.size, true);
    }
    push(r.base + r.size, false);
    pieces.push(own);
  }
  const total = Math.max(at, 1);
  const pieceCount = pieces.reduce((n, own) => n + own.length, 0);
  const ROWS = pieceCount <= 4 ? 1 : Math.min(MAX_ROWS, Math.ceil(pieceCount / 3));
  const rowBytes = total / ROWS;
  const inner = width - 2 * MARGIN;
  const scale = inner / rowBytes;
  const rowsUsed = Math.max(1, Math.ceil(at / rowBytes - 1e-9));

  /** Rectangles for drawn bytes [from, to) of the strip, split at row ends. */
  const rects = (
    from: number,
    to: number,
    cls: string,
    extra = '',
    band?: { top: number; height: number },
  ): string => {
    let out = '';
    let a = from;
    while (a < to - 1e-6) {
      const row = Math.min(ROWS - 1, Math.floor(a / rowBytes + 1e-9));
      const rowEnd = (row + 1) * rowBytes;
      const b = Math.min(to, rowEnd);
      const x = MARGIN + (a - row * rowBytes) * scale;
      const w = Math.max(0.5, (b - a) * scale);
      const y = HEADER + row * (ROW_HEIGHT + ROW_GAP) + (band?.top ?? 0);
      // An `extra` with a title child ends in its own `</rect`: closed by `>`, not `/>` (the map must be well-formed XML).
      const close = extra.endsWith('</rect') ? '>' : '/>';
      out += `<rect class="${cls}" x="${x.toFixed(2)}" y="${y}" width="${w.toFixed(2)}" height="${band?.height ?? ROW_HEIGHT}"${extra}${close}`;
      a = b;
    }
    return out;
  };
  /** Drawn position of address `va` inside piece `p`. */
  const place = (p: Piece, va: number) => p.at + ((va - p.va) * p.drawn) / p.size;

  const handleIndex = new Map(description.allocations.map((a, i) => [a.handle, i]));
  const blocks = options.blocks;
  const color = options.color;
  let body = '';
  let releasableBytes = 0;
  let blockBytes = 0;
  let blockCount = 0;
  let b = 0;
  for (const [ri, r] of reservations.entries()) {
    const own = pieces[ri];
    let g = '';
    for (const p of own) {
      if (!p.mapped) {
        const label = p.drawn < p.size ? ` (drawn shortened)` : '';
        g += rects(
          p.at,
          p.at + p.drawn,
          'unmapped',
          ` fill="url(#${id}-unmapped)"><title>${escapeXml(`${formatBytes(p.size)} reserved, not mapped at ${hex(p.va)}${label}`)}</title></rect`,
        );
      }
    }
    for (const m of [...r.mappings].sort((x, y) => x.va - y.va)) {
      const p = pieceAt(own, m.va);
      const hue = color ?? handleColor(handleIndex.get(m.handle) ?? 0);
      const access = m.access
        .map(
          (x, d) =>
            `device ${d} ${x === Access.ReadWrite ? 'read-write' : x === Access.Read ? 'read' : 'none'}`,
        )
        .join(', ');
      const tip = `mapping ${hex(m.va)}, ${formatBytes(m.size)}, handle ${m.handle}${m.offset ? ` at offset ${formatBytes(m.offset)}` : ''}; ${access}`;
      g += `<g class="mapping" data-va="${m.va}" data-handle="${m.handle}">${rects(
        place(p, m.va),
        place(p, m.va + m.size),
        'mapping-part',
        ` fill="${hue}" fill-opacity="${blocks === undefined ? 0.75 : 0.18}"><title>${escapeXml(tip)}</title></rect`,
      )}`;
      if (blocks === undefined && m.access.every((x) => x === Access.None)) {
        g += rects(place(p, m.va), place(p, m.va + m.size), 'no-access', ` fill="url(#${id}-noaccess)"`);
      }
      if (blocks === undefined) {
        // One band per device along the row's bottom: dark for read-write, light for read only.
        const bandHeight = Math.max(1.5, Math.min(4, 12 / m.access.length));
        m.access.forEach((x, d) => {
          if (x === Access.None) return;
          const top = ROW_HEIGHT - bandHeight * (m.access.length - d);
          g += rects(
            place(p, m.va),
            place(p, m.va + m.size),
            'access',
            ` data-device="${d}" fill="${x === Access.ReadWrite ? '#1b5e20' : '#9ccc65'}"`,
            { top, height: bandHeight },
          );
        });
      }
      g += '</g>';
    }
    if (blocks !== undefined) {
      // Blocks in this reservation, and the pages of its mappings none of them touch.
      const end = r.base + r.size;
      while (b < blocks.length && blocks[b].address < r.base) b++;
      const mine: LiveBlock[] = [];
      for (let k = b; k < blocks.length && blocks[k].address < end; k++) mine.push(blocks[k]);
      for (const blk of mine) {
        const p = pieceAt(own, blk.address);
        if (!p.mapped) continue;
        const last = pieceAt(own, blk.address + blk.size - 1);
        blockCount++;
        blockBytes += blk.size;
        g += `<g class="block" data-address="${blk.address}">${rects(
          place(p, blk.address),
          place(last, blk.address + blk.size),
          'block-part',
          // A thin light edge keeps neighbouring blocks apart.
          ` fill="${color ?? '#3465a4'}" stroke="#ffffff" stroke-opacity="0.7" stroke-width="0.6"><title>${escapeXml(`block ${hex(blk.address)}, ${formatBytes(blk.size)}${stackLines(blk.block === undefined ? undefined : options.stackOf?.(blk.block))}`)}</title></rect`,
        )}</g>`;
      }
      // Untouched pages in runs (one rectangle per run, not per page), across touching mappings.
      let runStart = -1;
      let runEnd = -1;
      const flush = () => {
        if (runStart < 0) return;
        g += rects(
          place(pieceAt(own, runStart), runStart),
          place(pieceAt(own, runEnd - 1), runEnd),
          'releasable',
          ` fill="url(#${id}-releasable)"`,
        );
        runStart = -1;
      };
      let k = 0;
      for (const m of [...r.mappings].sort((x, y) => x.va - y.va)) {
        for (let page = m.va; page + pageSize <= m.va + m.size; page += pageSize) {
          while (k < mine.length && mine[k].address + mine[k].size <= page) k++;
          const touched = k < mine.length && mine[k].address < page + pageSize;
          if (touched) {
            flush();
            continue;
          }
          releasableBytes += pageSize;
          if (runStart >= 0 && runEnd === page) runEnd = page + pageSize;
          else {
            flush();
            runStart = page;
            runEnd = page + pageSize;
          }
        }
      }
      flush();
    }
    const first = own[0];
    const tip = `reservation ${hex(r.base)}, ${formatBytes(r.size)} (${r.origin === 'malloc' ? 'one-step malloc' : 'reserved'}), ${r.mappings.length} mapping(s)`;
    body += `<g class="reservation" data-base="${r.base}" data-size="${r.size}"><title>${escapeXml(tip)}</title>${g}${
      first === undefined ? '' : boundary(first.at, rowBytes, scale, ROWS)
    }</g>`;
  }

  const summary: MapSummary = {
    reservations: reservations.length,
    reservedAddressBytes: reservations.reduce((s, r) => s + r.size, 0),
    mappings: reservations.reduce((s, r) => s + r.mappings.length, 0),
    mappedBytes,
    handles: description.allocations.length,
    blocks: blockCount,
    blockBytes,
    releasableBytes,
  };
  const height = HEADER + rowsUsed * (ROW_HEIGHT + ROW_GAP) + 64;
  const line =
    blocks === undefined
      ? `${summary.reservations} reservations (${formatBytes(summary.reservedAddressBytes)} of address space), ${summary.mappings} mappings (${formatBytes(mappedBytes)}), ${summary.handles} handles`
      : `${summary.reservations} reservations, ${formatBytes(mappedBytes)} mapped, ${blockCount} live blocks (${formatBytes(blockBytes)}), ${formatBytes(releasableBytes)} in pages no block touches`;
  const attrs = Object.entries(options.attributes ?? {})
    .map(([k, v]) => ` data-${k}="${escapeXml(v)}"`)
    .join('');
  const legendY = HEADER + rowsUsed * (ROW_HEIGHT + ROW_GAP) + 18;
  const legend =
    blocks === undefined
      ? legendItems(legendY, [
          [`url(#${id}-swatch-mapped)`, 'mapped (colour per handle)'],
          [`url(#${id}-unmapped)`, 'reserved, not mapped'],
          [`url(#${id}-noaccess)`, 'mapped, no device access'],
          ['#1b5e20', 'band per device: read-write'],
          ['#9ccc65', 'read only'],
        ])
      : legendItems(legendY, [
          [color ?? '#3465a4', 'live block'],
          [withOpacity(color ?? '#3465a4'), 'mapped, free (hole)'],
          [`url(#${id}-releasable)`, 'whole page no block touches (releasable)'],
          [`url(#${id}-unmapped)`, 'reserved, not mapped'],
        ]);
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" class="address-map" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="12"${attrs} data-reservations="${summary.reservations}" data-blocks="${blockCount}">
<defs>
<pattern id="${id}-unmapped" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#f2f2f2"/><line x1="0" y1="0" x2="0" y2="6" stroke="#c8c8c8" stroke-width="2"/></pattern>
<pattern id="${id}-releasable" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect width="5" height="5" fill="#fde2d6" fill-opacity="0.9"/><line x1="0" y1="0" x2="0" y2="5" stroke="#d9480f" stroke-width="1.5"/></pattern>
<pattern id="${id}-noaccess" width="4" height="4" patternUnits="userSpaceOnUse"><circle cx="2" cy="2" r="0.9" fill="#222"/></pattern>
<linearGradient id="${id}-swatch-mapped"><stop offset="0" stop-color="${handleColor(0)}"/><stop offset="0.5" stop-color="${handleColor(1)}"/><stop offset="1" stop-color="${handleColor(2)}"/></linearGradient>
</defs>
<text x="${MARGIN}" y="16" font-weight="600" font-size="13">${escapeXml(options.title ?? `process ${description.pid}`)}</text>
<text x="${MARGIN}" y="32" fill="#444">${escapeXml(line)}</text>
${body}
${legend}
</svg>`;
  return { svg, summary };
}

/** The piece holding address `va` (pieces tile their reservation in address order). */
function pieceAt(own: readonly Piece[], va: number): Piece {
  let lo = 0;
  let hi = own.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (own[mid].va <= va) lo = mid;
    else hi = mid - 1;
  }
  return own[lo];
}

/** A dark tick where a reservation starts. */
function boundary(at: number, rowBytes: number, scale: number, rows: number): string {
  const row = Math.min(rows - 1, Math.floor(at / rowBytes + 1e-9));
  const x = MARGIN + (at - row * rowBytes) * scale;
  const y = HEADER + row * (ROW_HEIGHT + ROW_GAP);
  return `<line class="boundary" x1="${x.toFixed(2)}" y1="${y - 2}" x2="${x.toFixed(2)}" y2="${y + ROW_HEIGHT + 2}" stroke="#222" stroke-width="1.5"/>`;
}

function legendItems(y: number, items: readonly (readonly [string, string])[]): string {
  let x = MARGIN;
  let out = '<g class="legend">';
  for (const [fill, label] of items) {
    out += `<rect x="${x}" y="${y}" width="14" height="14" fill="${fill}" stroke="#888" stroke-width="0.5"/><text x="${x + 19}" y="${y + 11}">${escapeXml(label)}</text>`;
    x += 30 + label.length * 6.6;
  }
  return `${out}</g>`;
}

/** A distinct hue per handle, readable on white. */
function handleColor(i: number): string {
  const hue = (i * 137.508) % 360;
  return `hsl(${hue.toFixed(1)}, 55%, 55%)`;
}

function withOpacity(color: string): string {
  return color.startsWith('#') && color.length === 7 ? `${color}2e` : color;
}

/** A block's frames under its title, one a line (none: nothing). */
function stackLines(stack: readonly string[] | undefined): string {
  return stack === undefined || stack.length === 0 ? '' : `\n${stack.join('\n')}`;
}
