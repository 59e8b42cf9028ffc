/**
 * The CPU's access to host-located memory (Note [Host access] in
 * src/backend/backend.ts): core keeps the CPU's grant per mapping, grants it
 * as one step of setAccess's transaction, and checks it before every load or
 * store, so an access the hardware would fault on is a refusal instead.
 */
import type { Backend } from '../backend/backend.js';
import type { AddressBook } from './address-book.js';
import { vmmError } from './errors.js';
import { HOST_ACCESS, type Mapping } from './objects.js';
import type { Transaction } from './transaction.js';
import { Access } from './types.js';

/** Throws not-supported unless `m` maps host-located memory (CUDA's driver answers a HOST descriptor on device memory so). */
export function checkHostReachable(m: Mapping): void {
  if (m.allocation.props.location.type !== 'host')
    throw vmmError('not-supported', `0x${m.va.toString(16)} maps device memory, which the CPU cannot reach`);
}

/** Grant the CPU `host` over `mappings`, which tile [va, va + size), as a step of `tx` that undoes to each one's access before. */
export function grantHostAccess(
  tx: Transaction,
  backend: Backend,
  mappings: readonly Mapping[],
  va: number,
  size: number,
  host: Access,
): void {
  backend.setHostAccess(va, size, host);
  const before = mappings.map((m) => m.hostAccess);
  for (const m of mappings) m[HOST_ACCESS] = host;
  tx.undo(() =>
    mappings.forEach((m, i) => {
      backend.setHostAccess(m.va, m.size, before[i]);
      m[HOST_ACCESS] = before[i];
    }),
  );
}

/** Every byte of [va, va + length) in mappings whose CPU access includes `need`; else the error a load would be. */
export function checkHostAccess(book: AddressBook, va: number, length: number, need: Access): void {
  if (length === 0) return;
  let m = book.mappingAt(va);
  if (m === undefined) throw vmmError('not-mapped', `nothing is mapped at 0x${va.toString(16)}`);
  const end = va + length;
  for (;;) {
    if ((m.hostAccess & need) !== need)
      throw vmmError(
        'access-denied',
        `the CPU may not ${need === Access.Read ? 'read' : 'write'} 0x${Math.max(va, m.va).toString(16)}`,
      );
    if (m.end >= end) return;
    const next = book.nextMapping(m);
    if (next === undefined || next.va !== m.end)
      throw vmmError('not-mapped', `0x${m.end.toString(16)} is not mapped`);
    m = next;
  }
}
