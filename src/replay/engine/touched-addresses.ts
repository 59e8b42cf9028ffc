/**
 * The addresses a plan's walk has met (trace-plan.ts), asked about rarely.
 *
 * Note [Live and touched addresses]: the walk asks two things of an
 * address: the block live there, if any, and, where none is, whether an
 * event named the address before (a free of an address never named frees
 * a block live before the trace began; of one named and freed since, it is
 * an unmatched free). A trace of millions of events names millions of
 * addresses but holds a few thousand blocks at once, and only a free at an
 * address with no live block asks the second question. So the live blocks
 * are a map that stays small (and in the cache), and the addresses met are
 * appended to a list and put in a set only when a question comes, all of
 * those appended since the last: a walk whose questions come early (the
 * frees of blocks from before the trace) builds a set of the early
 * addresses only. Questions about many addresses at once (the segments'
 * blocks, at the end) are answered by one pass over what was appended.
 */
import { IntMap } from '../../util/int-map.js';

export class TouchedAddresses {
  #appended = new Float64Array(1024);
  #count = 0;
  readonly #set = new IntMap();

  add(address: number): void {
    if (this.#count === this.#appended.length) {
      const grown = new Float64Array(this.#count * 2);
      grown.set(this.#appended);
      this.#appended = grown;
    }
    this.#appended[this.#count++] = address;
  }

  has(address: number): boolean {
    const appended = this.#appended;
    for (let k = 0; k < this.#count; k++) this.#set.set(appended[k], 1);
    this.#count = 0;
    return this.#set.has(address);
  }

  /** For each of `addresses`, whether it was added. */
  hasEach(addresses: readonly number[]): boolean[] {
    const asked = new IntMap();
    for (let k = 0; k < addresses.length; k++) asked.set(addresses[k], k);
    const out = addresses.map((a) => this.#set.has(a));
    const appended = this.#appended;
    for (let k = 0; k < this.#count; k++) {
      const at = asked.get(appended[k]);
      if (at >= 0) out[at] = true;
    }
    // A key asked twice is asked at its last place in `addresses`: the others take its answer.
    return addresses.map((a, k) => out[k] || out[asked.get(a)]);
  }
}
