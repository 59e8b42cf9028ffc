/**
 * Sizes as people write them on a command line: `150000000000`, `14000MiB`,
 * `13.7GiB`, `14.7GB`, `512 KiB`. (Printing them is format.ts's formatBytes.)
 *
 * Note [Byte size units]
 * A number, decimals allowed, then an optional unit, case-insensitive:
 * B or none for bytes; KiB MiB GiB TiB PiB (also Ki Mi Gi Ti Pi, as
 * Kubernetes writes them) for powers of 1024; KB MB GB TB PB for powers of
 * 1000, as disk makers and nvidia-smi's "GB" column do. The letter B always
 * means bytes: nobody gives memory in bits. A bare K, M, G, T or P is
 * refused: people write `14G` for both 14 GiB and 14 GB (free -g and
 * PyTorch's own *_mb options mean powers of 1024, Kubernetes means 1000),
 * and a memory limit off by 7% is worse than a second try. The value is
 * computed exactly (decimal digits times the unit, in integers) and rounded
 * down to a whole byte; it must be at most 2^53 - 1, the largest size a
 * number holds exactly. Signs, exponents and digit separators are refused.
 */

import { ByteSizeError } from './errors.js';

// ByteSizeError lives in errors.ts; re-exported here, where it was.
export { ByteSizeError } from './errors.js';

const BINARY: Readonly<Record<string, number>> = Object.freeze({ k: 10, m: 20, g: 30, t: 40, p: 50 });
const DECIMAL: Readonly<Record<string, number>> = Object.freeze({ k: 3, m: 6, g: 9, t: 12, p: 15 });

const HOW = 'write bytes, or a number with KiB MiB GiB TiB (powers of 1024) or KB MB GB TB (powers of 1000)';

/** Bytes in `text` (Note [Byte size units]). Throws ByteSizeError. */
export function parseByteSize(text: string): number {
  if (typeof text !== 'string') throw new ByteSizeError(`not a byte size: ${typeof text}`);
  const shown = JSON.stringify(text);
  const trimmed = text.trim();
  if (trimmed === '') throw new ByteSizeError(`empty byte size (${HOW})`);
  if (trimmed.startsWith('-')) throw new ByteSizeError(`byte size ${shown} is negative`);
  const m = /^(\d+)(?:\.(\d*))?\s*([A-Za-z]*)$/.exec(trimmed) ?? /^()\.(\d+)\s*([A-Za-z]*)$/.exec(trimmed);
  if (m === null) throw new ByteSizeError(`not a byte size: ${shown} (${HOW})`);
  const [, whole, fraction = '', unitText] = m;
  const unit = unitBytes(unitText.toLowerCase());
  if (unit === undefined) {
    const hint = /^[kmgtp]$/i.test(unitText)
      ? `'${unitText}' could mean either; write ${unitText.toUpperCase()}iB (powers of 1024) or ${unitText.toUpperCase()}B (powers of 1000)`
      : HOW;
    throw new ByteSizeError(`unknown unit '${unitText}' in byte size ${shown} (${hint})`);
  }
  const bytes = (BigInt(`${whole}${fraction}` || '0') * unit) / 10n ** BigInt(fraction.length);
  if (bytes > BigInt(Number.MAX_SAFE_INTEGER))
    throw new ByteSizeError(`byte size ${shown} is beyond 2^53 - 1 bytes`);
  return Number(bytes);
}

function unitBytes(unit: string): bigint | undefined {
  if (unit === '' || unit === 'b') return 1n;
  const prefix = unit[0];
  const rest = unit.slice(1);
  if ((rest === 'ib' || rest === 'i') && prefix in BINARY) return 2n ** BigInt(BINARY[prefix]);
  if (rest === 'b' && prefix in DECIMAL) return 10n ** BigInt(DECIMAL[prefix]);
  return undefined;
}
