import type { Backend } from '../backend/backend.js';
import { isCount, isMultipleOf, isPowerOfTwo } from '../util/integers.js';
import { OrderedMap } from '../util/ordered-map.js';
import { vmmError } from './errors.js';
import { MAP_REFS, MAPPING_COUNT, type Mapping, OWNER, Reservation } from './objects.js';
import type { Runtime } from './runtime.js';
import type { Access } from './types.js';

/**
 * One process's address space as core's books hold it: its reservations and
 * its mappings, each in an ordered map by start address over [start, end),
 * the queries the Runtime answers from them, and the steps that reserve and
 * free address space. An object is booked only after the backend step it
 * records succeeded (invariant 1); a mapping is booked only once it is
 * checked to overlap none and lie inside one reservation (invariant 2).
 */
export class AddressBook {
  readonly reservations = new OrderedMap<Reservation>();
  readonly mappings = new OrderedMap<Mapping>();

  constructor(
    readonly owner: Runtime,
    readonly backend: Backend,
  ) {}

  /** Reserve address space in the backend and book it; the arguments are checked first. */
  reserve(
    size: number,
    alignment: number,
    hint: number,
    origin: Reservation['origin'],
    exact = false,
  ): Reservation {
    const g = this.owner.vaGranularity;
    if (!isCount(size) || size === 0 || !isMultipleOf(size, g)) {
      throw vmmError('invalid-value', `size ${size} is not a positive multiple of ${g}`);
    }
    if (!isCount(alignment) || (alignment !== 0 && !isPowerOfTwo(alignment))) {
      throw vmmError('invalid-value', `alignment ${alignment} is not 0 or a power of two`);
    }
    if (!isCount(hint)) throw vmmError('invalid-value', `address hint ${hint} is not an address`);
    const align = Math.max(alignment, g);
    const at = isMultipleOf(hint, align) ? hint : 0;
    // The fourth argument only when asked for, so traces of plain reserves stay as they were.
    const base =
      exact && at !== 0 ? this.backend.reserve(size, align, at, true) : this.backend.reserve(size, align, at);
    const r = new Reservation(base, size, align, origin);
    r[OWNER] = this.owner;
    this.reservations.set(base, r, base + size);
    return r;
  }

  /** Free a live reservation with nothing mapped in it, in the backend and then the books. */
  free(r: Reservation): void {
    if (r[OWNER] !== this.owner) throw vmmError('not-reserved', 'reservation is not live');
    if (r[MAPPING_COUNT] > 0)
      throw vmmError('in-use', `${r[MAPPING_COUNT]} mapping(s) still inside the reservation`);
    this.backend.free(r.base, r.size);
    this.reservations.delete(r.base);
    r[OWNER] = undefined;
  }

  /** The mapping containing address `va`. */
  mappingAt(va: number): Mapping | undefined {
    return this.mappings.containing(va);
  }

  /** Every mapping that intersects [va, va + size), in address order. */
  mappingsIn(va: number, size: number): Mapping[] {
    const out: Mapping[] = [];
    let m = this.mappingAt(va) ?? this.mappings.higher(va);
    while (m !== undefined && m.va < va + size) {
      out.push(m);
      m = this.mappings.higher(m.va);
    }
    return out;
  }

  /** The mapping that starts right after `m` ends, if any. */
  nextMapping(m: Mapping): Mapping | undefined {
    const n = this.mappings.higher(m.va);
    return n !== undefined && n.va === m.end ? n : undefined;
  }

  /**
   * The mappings that exactly tile [va, va + size): the range starts at a
   * mapping's start, ends at a mapping's end, has no holes and splits none.
   */
  wholeMappings(va: number, size: number): Mapping[] {
    const first = this.mappingAt(va);
    if (first === undefined) throw vmmError('not-mapped', `nothing is mapped at 0x${va.toString(16)}`);
    if (first.va !== va)
      throw vmmError('not-mapped', `0x${va.toString(16)} is inside a mapping, not at its start`);
    const end = va + size;
    const out = [first];
    let m = first;
    while (m.end < end) {
      const n = this.nextMapping(m);
      if (n === undefined) throw vmmError('not-mapped', `hole at 0x${m.end.toString(16)}`);
      out.push(n);
      m = n;
    }
    if (m.end !== end) throw vmmError('not-mapped', 'the range ends inside a mapping');
    return out;
  }

  /** Book a mapping the backend holds: it counts in its reservation and its allocation (invariant 3). */
  remember(m: Mapping): void {
    this.mappings.set(m.va, m, m.end);
    m[OWNER] = this.owner;
    m.reservation[MAPPING_COUNT]++;
    m.allocation[MAP_REFS]++;
  }

  /** Take a mapping out of the books (its backend mapping is already gone). */
  forget(m: Mapping): void {
    this.mappings.delete(m.va);
    m[OWNER] = undefined;
    m.reservation[MAPPING_COUNT]--;
    m.allocation[MAP_REFS]--;
  }
}

/** What a range check reads of a process's mappings (an AddressBook's queries, or the Runtime's). */
export interface MappingQueries {
  mappingAt(va: number): Mapping | undefined;
  nextMapping(m: Mapping): Mapping | undefined;
}

/** Whether every byte of [va, va + size) is mapped with at least `access` for `device`. */
export function rangeUsable(
  q: MappingQueries,
  device: number,
  va: number,
  size: number,
  access: Access,
): boolean {
  for (let at = va, m = q.mappingAt(va); at < va + size; m = m && q.nextMapping(m)) {
    if (m === undefined || m.va > at || (m.accessOf(device) & access) !== access) return false;
    at = m.end;
  }
  return true;
}
