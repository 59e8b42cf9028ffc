/** Numbers as people read them, shared by the command line, replay's verdicts and the pictures. */

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
