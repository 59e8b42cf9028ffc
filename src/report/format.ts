/** Numbers as the pictures print them. */

const KiB = 1024;
const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

/** Bytes in the unit that reads best: "4.29 GiB", "20.0 MiB", "512 KiB", "96 B". */
export function formatBytes(n: number): string {
  const a = Math.abs(n);
  if (a >= GiB) return `${(n / GiB).toFixed(2)} GiB`;
  if (a >= MiB) return `${(n / MiB).toFixed(1)} MiB`;
  if (a >= KiB) return `${(n / KiB).toFixed(0)} KiB`;
  return `${n} B`;
}

export function hex(n: number): string {
  return `0x${n.toString(16)}`;
}

/** Text safe inside XML and HTML, attributes included. */
export function escapeXml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Microseconds as ms or s. */
export function formatMicros(us: number): string {
  return us >= 1e6 ? `${(us / 1e6).toFixed(2)} s` : `${(us / 1000).toFixed(1)} ms`;
}
