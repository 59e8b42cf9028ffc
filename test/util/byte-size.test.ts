import { describe, expect, it } from 'vitest';
import { ByteSizeError, parseByteSize } from '../../src/util/byte-size.js';
import { thrown } from '../support/thrown.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

/** The ByteSizeError `text` throws. */
const refusal = (text: string) =>
  thrown(() => parseByteSize(text), ByteSizeError, `${JSON.stringify(text)} was accepted`);

describe('parseByteSize', () => {
  it('reads plain bytes', () => {
    expect(parseByteSize('150000000000')).toBe(150_000_000_000);
    expect(parseByteSize('0')).toBe(0);
    expect(parseByteSize('512B')).toBe(512);
    expect(parseByteSize('  4096  ')).toBe(4096);
    expect(parseByteSize('150109880320')).toBe(150_109_880_320); // the H200's capacity as its driver reports it
  });

  it('reads binary units as powers of 1024 and decimal ones as powers of 1000', () => {
    expect(parseByteSize('14000MiB')).toBe(14000 * MiB);
    expect(parseByteSize('8KiB')).toBe(8 * KiB);
    expect(parseByteSize('2GiB')).toBe(2 * GiB);
    expect(parseByteSize('1TiB')).toBe(1024 * GiB);
    expect(parseByteSize('1PiB')).toBe(1024 ** 5);
    expect(parseByteSize('3KB')).toBe(3000);
    expect(parseByteSize('14.7GB')).toBe(14_700_000_000);
    expect(parseByteSize('2MB')).toBe(2_000_000);
    expect(parseByteSize('1TB')).toBe(1e12);
    expect(parseByteSize('1PB')).toBe(1e15);
  });

  it('takes any case, a space before the unit, and the Kubernetes Ki/Mi/Gi/Ti forms', () => {
    expect(parseByteSize('14 GiB')).toBe(14 * GiB);
    expect(parseByteSize('14gib')).toBe(14 * GiB);
    expect(parseByteSize('14GIB')).toBe(14 * GiB);
    expect(parseByteSize('14gb')).toBe(14e9);
    expect(parseByteSize('14Gi')).toBe(14 * GiB);
    expect(parseByteSize('512mi')).toBe(512 * MiB);
    expect(parseByteSize('7kb')).toBe(7000);
    expect(parseByteSize('7b')).toBe(7);
  });

  it('reads decimals exactly and rounds down to a whole byte', () => {
    expect(parseByteSize('13.7GiB')).toBe(Math.floor(13.7 * GiB)); // 14710262988.8
    expect(parseByteSize('13.7GiB')).toBe(14_710_262_988);
    expect(parseByteSize('4.35GB')).toBe(4_350_000_000); // 4.35 * 1e9 is 4349999999.9999995 in floating point
    expect(parseByteSize('0.5KiB')).toBe(512);
    expect(parseByteSize('.5KiB')).toBe(512);
    expect(parseByteSize('1.KiB')).toBe(1024);
    expect(parseByteSize('1.0000000001KB')).toBe(1000);
    expect(parseByteSize('2.5')).toBe(2);
    expect(parseByteSize('0.999B')).toBe(0);
  });

  it('refuses a bare K, M, G or T as ambiguous, naming both readings', () => {
    for (const text of ['14G', '14g', '512M', '8K', '1T']) {
      const e = refusal(text);
      expect(e.message, text).toMatch(/could mean either/);
      expect(e.message, text).toMatch(/iB \(powers of 1024\) or .B \(powers of 1000\)/);
    }
    expect(refusal('14G').message).toBe(
      "unknown unit 'G' in byte size \"14G\" ('G' could mean either; write GiB (powers of 1024) or GB (powers of 1000))",
    );
  });

  it('refuses what is not a size, each with a one-line ByteSizeError', () => {
    const cases: [string, RegExp][] = [
      ['', /^empty byte size/],
      ['   ', /^empty byte size/],
      ['-1', /is negative$/],
      ['-1GiB', /is negative$/],
      ['NaN', /^not a byte size/],
      ['Infinity', /^not a byte size/],
      ['GiB', /^not a byte size/],
      ['1.5.2GiB', /^not a byte size/],
      ['1e9', /^not a byte size/],
      ['1_000', /^not a byte size/],
      ['1,000', /^not a byte size/],
      ['+5', /^not a byte size/],
      ['0x10', /^not a byte size/],
      ['14 GiB extra', /^not a byte size/],
      ['5XB', /^unknown unit 'XB'/],
      ['5bytes', /^unknown unit 'bytes'/],
    ];
    for (const [text, pattern] of cases) {
      const e = refusal(text);
      expect(e.message, text).toMatch(pattern);
      expect(e.message, text).not.toMatch(/\n/);
      expect(e.name).toBe('ByteSizeError');
      expect(e).toBeInstanceOf(Error);
    }
    expect(parseByteSize('5Gib\n')).toBe(5 * GiB); // surrounding whitespace is trimmed
    expect(() => parseByteSize(5 as unknown as string)).toThrow(ByteSizeError);
  });

  it('refuses sizes beyond 2^53 - 1 bytes', () => {
    expect(parseByteSize(String(Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
    expect(parseByteSize('7.99PiB')).toBe(8_995_940_255_672_565); // 799 * 2^50 / 100, rounded down
    expect(refusal('8PiB').message).toMatch(/beyond 2\^53 - 1 bytes$/); // 8 PiB is 2^53 exactly
    expect(refusal('9007199254740993').message).toMatch(/beyond 2\^53 - 1 bytes$/);
    expect(refusal('9PiB').message).toMatch(/beyond 2\^53 - 1 bytes$/);
    expect(refusal('99999999999999999999TB').message).toMatch(/beyond/);
  });
});
