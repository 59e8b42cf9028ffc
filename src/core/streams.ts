import type { Backend, DestroyStreamOptions } from '../backend/backend.js';
import { vmmError } from './errors.js';

/**
 * One process's live streams, each with its device. Stream 0, every device's
 * default stream, is never in the table: it belongs to every device and is
 * never created or destroyed.
 */
export class StreamTable {
  readonly #devices = new Map<number, number>();

  constructor(readonly backend: Backend) {}

  /** Live streams. */
  get size(): number {
    return this.#devices.size;
  }

  create(device: number): number {
    const s = this.backend.createStream(device);
    this.#devices.set(s, device);
    return s;
  }

  /** Destroy a live stream after its queued work, or (`discard`) dropping it (Note [Forced stream destroy]). */
  destroy(stream: number, options: DestroyStreamOptions = {}): void {
    this.check(stream);
    try {
      if (options.discard) this.backend.destroyStream(stream, options);
      else this.backend.destroyStream(stream);
    } finally {
      // The stream is gone even when its last queued work failed (that failure is still thrown).
      this.#devices.delete(stream);
    }
  }

  /** Destroy every stream of `device` (-1: of every device), each through `quietly`. */
  destroyEach(device: number, quietly: (step: () => void) => void): void {
    for (const [s, d] of [...this.#devices])
      if (device === -1 || d === device) quietly(() => this.destroy(s));
  }

  has(stream: number): boolean {
    return this.#devices.has(stream);
  }

  /** The device of a live stream (undefined for none; stream 0 belongs to every device). */
  deviceOf(stream: number): number | undefined {
    return this.#devices.get(stream);
  }

  /** Throws invalid-stream unless `stream` is live. */
  check(stream: number): void {
    if (!this.#devices.has(stream)) throw vmmError('invalid-stream', `no stream ${stream}`);
  }

  synchronize(stream: number): void {
    this.check(stream);
    this.backend.synchronizeStream(stream);
  }
}
