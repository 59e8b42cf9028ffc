/**
 * A memory limit as people give one: bytes with a unit, or a fraction of a
 * device, as torch.cuda.set_per_process_memory_fraction takes it.
 *
 * Note [Memory limits]
 * - A size with a unit (`14000MiB`, `13.7GiB`, `14.7GB`, `512KiB`) is bytes
 *   (Note [Byte size units] in byte-size.ts).
 * - A unitless number in (0, 1], or a percentage (`90%`), is a fraction of
 *   the device's memory. PyTorch 2.11 turns fraction f into
 *   static_cast<size_t>(f * totalGlobalMem) bytes: a double product,
 *   truncated. JavaScript's numbers are the same doubles and Number() reads
 *   "0.9" as strtod does, so Math.floor of the product is that exact byte
 *   count. A fraction needs the device: its name (device-specs.ts) or its
 *   memory in bytes.
 * - A unitless whole number of at least 1 MiB is bytes, as before.
 * - Any other unitless number is refused: `14000` cannot be meant as 14,000
 *   bytes (no allocator fits in 14 KB; the person meant MiB or MB), and
 *   reading it so made every run end in OOMs with nothing said.
 */
import { parseByteSize } from './byte-size.js';
import { findDevice } from './device-specs.js';
import { ByteSizeError, MemoryLimitError } from './errors.js';

const MiB = 1024 * 1024;

/** The forms a limit may take, for refusals. */
export const MEMORY_LIMIT_FORMS =
  'write bytes with a unit (14000MiB, 13.7GiB, 14.7GB), whole bytes of at least 1 MiB, or a fraction of the device (0.9 or 90%)';

/** A device's memory: its spec, its name in the device table, or its total in bytes. */
export type DeviceMemory = { readonly totalMemory: number } | string | number;

/** Bytes of `device`'s memory as its driver reports them. Throws UnknownDeviceError for a name not in the table. */
export function deviceTotalMemory(device: DeviceMemory): number {
  if (typeof device === 'number') {
    if (!(Number.isSafeInteger(device) && device > 0))
      throw new MemoryLimitError(
        `a device's memory is a positive whole number of bytes, not ${device}`,
        'no-memory',
      );
    return device;
  }
  return (typeof device === 'string' ? findDevice(device) : device).totalMemory;
}

/**
 * Bytes a limit allows (Note [Memory limits]): `limit` as text or as a
 * number (bytes, or a fraction in (0, 1]), `device` for a fraction. Throws
 * MemoryLimitError (its kind says why) or UnknownDeviceError.
 */
export function parseMemoryLimit(limit: string | number, device?: DeviceMemory): number {
  const shown = typeof limit === 'string' ? limit.trim() : String(limit);
  let fraction: number | undefined;
  if (typeof limit === 'number') {
    if (!Number.isFinite(limit) || limit <= 0)
      throw new MemoryLimitError(`${shown} is no memory at all`, 'no-memory');
    if (limit <= 1) fraction = limit;
    else if (Number.isSafeInteger(limit) && limit >= MiB) return limit;
    else throw ambiguous(shown);
  } else if (typeof limit === 'string') {
    const text = limit.trim();
    const percent = /^(\d+(?:\.\d*)?|\.\d+)\s*%$/.exec(text);
    if (percent !== null) {
      fraction = Number(percent[1]) / 100;
      if (fraction > 1)
        throw new MemoryLimitError(`${shown} is more than the whole device (100%)`, 'over-device');
    } else if (/^(\d+(?:\.\d*)?|\.\d+)$/.test(text)) {
      const n = Number(text);
      if (n > 0 && n <= 1) fraction = n;
      else if (n !== 0 && !(Number.isInteger(n) && n >= MiB)) throw ambiguous(shown);
    }
    if (fraction === undefined) {
      let bytes: number;
      try {
        bytes = parseByteSize(text);
      } catch (e) {
        if (e instanceof ByteSizeError)
          throw new MemoryLimitError(`${e.message}; ${MEMORY_LIMIT_FORMS}`, 'not-a-size');
        throw e;
      }
      if (bytes <= 0) throw new MemoryLimitError(`${shown} is no memory at all`, 'no-memory');
      return bytes;
    }
  } else {
    throw new MemoryLimitError(`a memory limit is a string or a number, not ${typeof limit}`, 'not-a-size');
  }
  if (fraction === 0) throw new MemoryLimitError(`${shown} is no memory at all`, 'no-memory');
  if (device === undefined)
    throw new MemoryLimitError(
      `${shown} is a fraction of the device's memory, and no device is given`,
      'fraction-needs-device',
    );
  // set_per_process_memory_fraction: static_cast<size_t>(fraction * totalGlobalMem).
  const bytes = Math.floor(fraction * deviceTotalMemory(device));
  if (bytes <= 0) throw new MemoryLimitError(`${shown} of the device is no memory at all`, 'no-memory');
  return bytes;
}

function ambiguous(shown: string): MemoryLimitError {
  return new MemoryLimitError(
    `${shown} has no unit and is below 1 MiB, so it cannot be meant as bytes; ${MEMORY_LIMIT_FORMS}`,
    'ambiguous-number',
  );
}
