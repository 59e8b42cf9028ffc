/** Numbers as the pictures print them. */

export { formatBytes } from '../util/format.js';

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
