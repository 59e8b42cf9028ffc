/**
 * A command's output lines, captured: `io` writes as to a pipe (no progress bar), `tty` as to a
 * terminal (progress fractions too, -1 when the bar is cleared).
 */
export function capture() {
  const out: string[] = [];
  const err: string[] = [];
  const progress: number[] = [];
  const io = { out: (l: string) => out.push(l), err: (l: string) => err.push(l) };
  return { io, tty: { ...io, progress: (f: number) => progress.push(f) }, out, err, progress };
}
