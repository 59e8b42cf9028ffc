/**
 * Makes a big memory snapshot with stacks from a real one, of any size (1 GiB
 * by default), as PyTorch's `_dump_snapshot` writes it: writeBigSnapshot
 * (Note [Big snapshot] in test/support/big-snapshot.ts) from the command line.
 *
 *   node dist/bench/big-snapshot.js --out FILE [--source SNAPSHOT] [--size 1GiB] [--protocol 4]
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { writeBigSnapshot } from '../test/support/big-snapshot.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** The committed trace used when traces/h200-whatif holds no snapshot with stacks. */
export const FALLBACK_SOURCE = 'traces/h200/transformer_train-native.pickle.gz';

/** The default source: a recorded snapshot with stacks (traces/h200-whatif) if there is one, else FALLBACK_SOURCE. */
export function defaultSource(): string {
  const dir = `${root}traces/h200-whatif/`;
  try {
    const withStacks = readdirSync(dir)
      .filter((f) => /stack/i.test(f) && /\.pickle(\.gz)?$/.test(f))
      .sort();
    if (withStacks.length > 0) return dir + withStacks[0];
  } catch {
    // No such folder yet.
  }
  return root + FALLBACK_SOURCE;
}

/** "1GiB", "512MiB", "1e9", "20MB" as bytes. */
export function parseSize(s: string): number {
  const m = /^([\d.e+]+)\s*(k|m|g)?(i)?b?$/i.exec(s.trim());
  if (m === null) throw new Error(`not a size: ${s}`);
  const unit = m[2]?.toLowerCase();
  const base = m[3] === undefined && unit !== undefined ? 1000 : 1024;
  const scale = unit === 'k' ? base : unit === 'm' ? base ** 2 : unit === 'g' ? base ** 3 : 1;
  return Math.round(Number(m[1]) * scale);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const at = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const out = at('--out');
  if (out === undefined) {
    console.error(
      'usage: node dist/bench/big-snapshot.js --out FILE [--source SNAPSHOT] [--size 1GiB] [--protocol 4]',
    );
    process.exit(2);
  }
  const t0 = performance.now();
  const info = writeBigSnapshot({
    source: at('--source') ?? defaultSource(),
    bytes: parseSize(at('--size') ?? '1GiB'),
    out,
    protocol: Number(at('--protocol') ?? 4),
  });
  console.log(JSON.stringify({ ...info, seconds: Math.round((performance.now() - t0) / 100) / 10 }));
}
