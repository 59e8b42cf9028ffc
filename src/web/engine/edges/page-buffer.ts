/**
 * Node's global `Buffer`, as much of it as the pickle reader uses, for the
 * page's engine worker (Note [Browser edges], fs.ts): a Uint8Array with
 * Buffer's static constructors and its latin1 and utf8 `toString`. The
 * reader calls nothing else of it.
 */
const UTF8 = new TextDecoder('utf-8');
const UTF8_ENCODER = new TextEncoder();

export class PageBuffer extends Uint8Array {
  static isBuffer(value: unknown): value is PageBuffer {
    return value instanceof PageBuffer;
  }

  /** A view of an ArrayBuffer (no copy), or a copy of bytes or a string's UTF-8. */
  static override from(value: unknown, offset?: unknown, length?: unknown): PageBuffer {
    if (
      value instanceof ArrayBuffer ||
      (typeof SharedArrayBuffer !== 'undefined' && value instanceof SharedArrayBuffer)
    )
      return new PageBuffer(
        value as ArrayBuffer,
        (offset as number | undefined) ?? 0,
        length as number | undefined,
      );
    if (typeof value === 'string') return PageBuffer.#copy(UTF8_ENCODER.encode(value));
    if (value instanceof Uint8Array) return PageBuffer.#copy(value);
    throw new TypeError('PageBuffer.from takes an ArrayBuffer, a Uint8Array or a string');
  }

  static #copy(bytes: Uint8Array): PageBuffer {
    const out = new PageBuffer(bytes.length);
    out.set(bytes);
    return out;
  }

  static concat(list: readonly Uint8Array[], total?: number): PageBuffer {
    const size = total ?? list.reduce((n, b) => n + b.length, 0);
    const out = new PageBuffer(size);
    let at = 0;
    for (const b of list) {
      if (at >= size) break;
      const part = b.subarray(0, size - at);
      out.set(part, at);
      at += part.length;
    }
    return out;
  }

  static allocUnsafe(size: number): PageBuffer {
    return new PageBuffer(size);
  }

  static alloc(size: number): PageBuffer {
    return new PageBuffer(size);
  }

  static byteLength(s: string): number {
    return UTF8_ENCODER.encode(s).length;
  }

  override toString(encoding: string = 'utf8', start = 0, end: number = this.length): string {
    const bytes = this.subarray(start, end);
    if (encoding === 'latin1' || encoding === 'binary') {
      // Byte for code point, 0 to 255 (TextDecoder's 'latin1' is windows-1252, which differs at 0x80-0x9f).
      let s = '';
      for (let i = 0; i < bytes.length; i += 8192)
        s += String.fromCharCode.apply(null, bytes.subarray(i, i + 8192) as unknown as number[]);
      return s;
    }
    if (encoding === 'utf8' || encoding === 'utf-8') return UTF8.decode(bytes);
    throw new TypeError(`PageBuffer decodes latin1 and utf8, not ${encoding}`);
  }
}
