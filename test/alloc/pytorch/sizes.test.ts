import { describe, expect, it } from 'vitest';
import {
  allocationSize,
  floorLog2,
  MiB,
  roundSize,
  roundUpToPowerOfTwoDivision,
  roundupInterval,
} from '../../../src/alloc/pytorch/sizes.js';

const none = new Array<number>(16).fill(0);
const all = (d: number) => new Array<number>(16).fill(d);

describe('N2 round_size', () => {
  it('rounds below 512 to 512 and otherwise up to a multiple of 512 when no divisions are set', () => {
    expect(roundSize(1, none, false)).toBe(512);
    expect(roundSize(511, none, false)).toBe(512);
    expect(roundSize(512, none, false)).toBe(512);
    expect(roundSize(513, none, false)).toBe(1024);
    expect(roundSize(3 * MiB + 1, none, false)).toBe(3 * MiB + 512);
  });

  it('rounds to the next of d steps between powers of two (PyTorch comment: 1200 with 4 divisions is 1280)', () => {
    expect(roundUpToPowerOfTwoDivision(1200, 4)).toBe(1280);
    expect(roundUpToPowerOfTwoDivision(1024, 4)).toBe(1024);
    expect(roundUpToPowerOfTwoDivision(1280, 4)).toBe(1280);
    expect(roundUpToPowerOfTwoDivision(1793, 4)).toBe(2048);
    // Step smaller than one byte: the next power of two.
    expect(roundUpToPowerOfTwoDivision(3, 4)).toBe(4);
  });

  it('applies divisions only above 512 * d, per interval of floor(log2 size) - 20', () => {
    expect(roundSize(1_300_000, all(4), true)).toBe(1_310_720); // 1 MiB + 256 KiB
    expect(roundSize(1500, all(4), true)).toBe(1536); // 1500 <= 2048: plain rounding
    expect(roundSize(5 * MiB + 1, all(2), true)).toBe(6 * MiB); // [4 MiB, 8 MiB) in halves
    expect(roundSize(4 * MiB, all(2), true)).toBe(4 * MiB); // powers of two stay
    const onlySecond = none.slice();
    onlySecond[1] = 8; // the "2" key: sizes in [2 MiB, 4 MiB)
    expect(roundSize(2 * MiB + 1, onlySecond, true)).toBe(2 * MiB + 256 * 1024);
    expect(roundSize(4 * MiB + 1, onlySecond, true)).toBe(4 * MiB + 512);
    expect(roundupInterval(100)).toBe(0);
    expect(roundupInterval(2 * MiB)).toBe(1);
    expect(roundupInterval(2 ** 40)).toBe(15);
  });

  it('floorLog2 is exact just below powers of two, where Math.log2 rounds', () => {
    for (const k of [20, 40, 50, 52]) {
      expect(floorLog2(2 ** k)).toBe(k);
      expect(floorLog2(2 ** k - 1)).toBe(k - 1);
    }
    expect(floorLog2(2 ** 53 - 1)).toBe(52);
  });
});

describe('N4 get_allocation_size', () => {
  it('2 MiB up to 1 MiB, 20 MiB below 10 MiB, else a multiple of 2 MiB', () => {
    expect(allocationSize(512)).toBe(2 * MiB);
    expect(allocationSize(MiB)).toBe(2 * MiB);
    expect(allocationSize(MiB + 512)).toBe(20 * MiB);
    expect(allocationSize(10 * MiB - 512)).toBe(20 * MiB);
    expect(allocationSize(10 * MiB)).toBe(10 * MiB);
    expect(allocationSize(10 * MiB + 512)).toBe(12 * MiB);
  });
});
