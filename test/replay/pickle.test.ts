import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readPickle } from '../../src/replay/read/load.js';
import {
  encodeLong,
  Op,
  PickleError,
  PickleTuple,
  type PickleValue,
  pickle,
  readLong,
  unpickle,
} from '../../src/replay/read/pickle/index.js';
import { thrown } from '../support/thrown.js';
import { python, pythonMissing } from './python.js';

const noPython = pythonMissing();

/** A value that uses every kind the writer writes; python3's copy of it is in the program below. */
function sample(): PickleValue {
  const shared = { filename: 'train.py', line: 12, name: 'step' };
  return {
    ints: [0, 1, 255, 256, 65535, 65536, -1, -(2 ** 31), 2 ** 31, 2 ** 47 + 512, -(2 ** 40), 2 ** 53 - 1],
    big: [2n ** 64n, -(2n ** 63n) - 1n, 2n ** 2100n],
    floats: [0.5, -1e300, Number.POSITIVE_INFINITY],
    strings: ['', 'action', 'héllo wörld', 'x'.repeat(300)],
    misc: [null, true, false, Uint8Array.from([1, 2, 3]), new PickleTuple([]), new PickleTuple([1, 'a'])],
    long: Array.from({ length: 2500 }, (_, i) => i),
    frames: [shared, shared],
    map: new Map<PickleValue, PickleValue>([
      [1, 'one'],
      ['two', 2],
    ]),
  };
}

/** A pickle from opcode bytes, with PROTO 4 in front and STOP behind. */
function ops(...bytes: number[]): Uint8Array {
  return Uint8Array.from([Op.PROTO, 4, ...bytes, Op.STOP]);
}

const errorOf = (f: () => unknown) => thrown(f, PickleError, 'no error');

describe('pickle reader: opcodes', () => {
  it('reads each int opcode with its width and sign', () => {
    expect(unpickle(ops(Op.BININT1, 200))).toBe(200);
    expect(unpickle(ops(Op.BININT2, 0x34, 0x12))).toBe(0x1234);
    expect(unpickle(ops(Op.BININT, 0xff, 0xff, 0xff, 0xff))).toBe(-1);
    expect(unpickle(ops(Op.BININT, 0x00, 0x00, 0x00, 0x80))).toBe(-(2 ** 31));
    expect(unpickle(ops(Op.LONG1, 0))).toBe(0);
    expect(unpickle(ops(Op.LONG1, 2, 0xff, 0x00))).toBe(255);
    expect(unpickle(ops(Op.LONG1, 1, 0xff))).toBe(-1);
    expect(unpickle(ops(Op.LONG4, 1, 0, 0, 0, 0x7f))).toBe(127);
  });

  it('LONG1 gives a number while safe and a bigint beyond', () => {
    const le = (v: bigint) => [...encodeLong(v)];
    for (const v of [2n ** 47n + 5n, 2n ** 53n - 1n, -(2n ** 53n - 1n), 1_733_000_000_000_000n]) {
      const b = le(v);
      expect(unpickle(ops(Op.LONG1, b.length, ...b))).toBe(Number(v));
    }
    for (const v of [2n ** 53n, -(2n ** 53n), 2n ** 63n, -(2n ** 63n), 2n ** 64n + 1n, -(2n ** 100n)]) {
      const b = le(v);
      expect(unpickle(ops(Op.LONG1, b.length, ...b))).toBe(v);
    }
    // A non-minimal encoding of a small value is still a number.
    expect(readLong(Uint8Array.from([5, 0, 0, 0, 0, 0, 0, 0, 0, 0]), 0, 10)).toBe(5);
  });

  it('reads floats (big-endian), None, True, False', () => {
    const f = Buffer.alloc(8);
    f.writeDoubleBE(-2.5);
    expect(unpickle(ops(Op.BINFLOAT, ...f))).toBe(-2.5);
    expect(unpickle(ops(Op.NONE))).toBeNull();
    expect(unpickle(ops(Op.NEWTRUE))).toBe(true);
    expect(unpickle(ops(Op.NEWFALSE))).toBe(false);
  });

  it('reads the three string opcodes and bytes, UTF-8 included', () => {
    const s = Buffer.from('héllo', 'utf8');
    expect(unpickle(ops(Op.SHORT_BINUNICODE, s.length, ...s))).toBe('héllo');
    expect(unpickle(ops(Op.BINUNICODE, s.length, 0, 0, 0, ...s))).toBe('héllo');
    expect(unpickle(ops(Op.BINUNICODE8, s.length, 0, 0, 0, 0, 0, 0, 0, ...s))).toBe('héllo');
    expect(unpickle(ops(Op.BINBYTES, 2, 0, 0, 0, 7, 8))).toEqual(Uint8Array.from([7, 8]));
    expect(unpickle(ops(Op.SHORT_BINBYTES, 1, 9))).toEqual(Uint8Array.from([9]));
  });

  it('builds lists, dicts and tuples with MARK, APPEND(S), SETITEM(S) and the EMPTY_ opcodes', () => {
    const k = (c: string) => [Op.SHORT_BINUNICODE, 1, c.charCodeAt(0)];
    const v = unpickle(
      ops(
        Op.EMPTY_DICT,
        Op.MARK,
        ...k('l'),
        Op.EMPTY_LIST,
        Op.MARK,
        Op.BININT1,
        1,
        Op.BININT1,
        2,
        Op.APPENDS,
        Op.BININT1,
        3,
        Op.APPEND,
        ...k('t'),
        Op.BININT1,
        1,
        Op.BININT1,
        2,
        Op.TUPLE2,
        Op.SETITEMS,
        ...k('e'),
        Op.EMPTY_TUPLE,
        Op.SETITEM,
      ),
    ) as Record<string, PickleValue>;
    expect(v.l).toEqual([1, 2, 3]);
    expect(v.t).toBeInstanceOf(PickleTuple);
    expect((v.t as PickleTuple).items).toEqual([1, 2]);
    expect((v.e as PickleTuple).items).toEqual([]);
    expect(Object.keys(v)).toEqual(['l', 't', 'e']);
  });

  it('memo: MEMOIZE, BINPUT and LONG_BINPUT store, BINGET and LONG_BINGET give back the same object', () => {
    const v = unpickle(
      ops(
        Op.EMPTY_LIST,
        Op.MEMOIZE, // 0: the outer list
        Op.MARK,
        Op.EMPTY_DICT,
        Op.BINPUT,
        7,
        Op.BINGET,
        7,
        Op.EMPTY_LIST,
        Op.LONG_BINPUT,
        0x10,
        0x27,
        0,
        0,
        Op.LONG_BINGET,
        0x10,
        0x27,
        0,
        0,
        Op.BINGET,
        0,
        Op.APPENDS,
      ),
    ) as PickleValue[];
    expect(v).toHaveLength(5);
    expect(v[0]).toBe(v[1]);
    expect(v[2]).toBe(v[3]);
    expect(v[4]).toBe(v);
  });

  it('a dict with a key that is not a string becomes a Map, and the memo follows', () => {
    const s = Buffer.from('x');
    const v = unpickle(
      ops(
        Op.EMPTY_LIST,
        Op.MEMOIZE,
        Op.MARK,
        Op.EMPTY_DICT,
        Op.MEMOIZE, // 1: the dict
        Op.MARK,
        Op.SHORT_BINUNICODE,
        1,
        ...s,
        Op.BININT1,
        1,
        Op.BININT1,
        2,
        Op.BININT1,
        3,
        Op.SETITEMS,
        Op.BINGET,
        1,
        Op.APPENDS,
      ),
    ) as PickleValue[];
    expect(v[0]).toBeInstanceOf(Map);
    expect([...(v[0] as Map<PickleValue, PickleValue>)]).toEqual([
      ['x', 1],
      [2, 3],
    ]);
    expect(v[1]).toBe(v[0]);
  });

  it("a '__proto__' key is an own property, not a prototype change", () => {
    const k = Buffer.from('__proto__');
    const v = unpickle(
      ops(Op.EMPTY_DICT, Op.SHORT_BINUNICODE, k.length, ...k, Op.BININT1, 5, Op.SETITEM),
    ) as object;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(v, '__proto__')?.value).toBe(5);
  });

  it('refuses an opcode outside the subset, naming it and its offset', () => {
    const e = errorOf(() => unpickle(ops(Op.NONE, 0x63)));
    expect(e.kind).toBe('unsupported-opcode');
    expect(e.offset).toBe(3);
    expect(e.message).toContain("GLOBAL (0x63 'c') at offset 3");
    expect(errorOf(() => unpickle(ops(0x93))).message).toContain('STACK_GLOBAL (0x93)');
    expect(errorOf(() => unpickle(ops(0xff))).message).toContain('unknown opcode (0xff)');
  });

  it('truncation, a protocol out of range, no PROTO, bad memo and stack use are typed errors', () => {
    const full = ops(Op.BININT, 1, 2, 3, 4);
    const cut = errorOf(() => unpickle(full.subarray(0, 5)));
    expect(cut.kind).toBe('truncated');
    expect(cut.message).toContain('BININT');
    expect(errorOf(() => unpickle(full.subarray(0, full.length - 1))).message).toContain('no STOP');
    expect(errorOf(() => unpickle(Uint8Array.from([Op.PROTO, 6, Op.NONE, Op.STOP]))).message).toContain(
      'protocol 6',
    );
    expect(errorOf(() => unpickle(Buffer.from('{"json": true}'))).message).toContain('not a pickle');
    expect(errorOf(() => unpickle(ops(Op.BINGET, 3))).message).toContain('no entry 3');
    expect(errorOf(() => unpickle(ops(Op.APPENDS))).message).toContain('no MARK');
    expect(errorOf(() => unpickle(ops(Op.BININT1, 1, Op.APPEND))).kind).toBe('malformed');
    expect(errorOf(() => unpickle(ops())).message).toContain('stack is empty');
  });
});

describe('pickle reader: gzip', () => {
  it('inflates gzip input found by its magic bytes; corrupt gzip is a typed error', () => {
    const p = pickle({ a: [1, 2, 3] });
    expect(readPickle(gzipSync(p))).toEqual({ a: [1, 2, 3] });
    expect(readPickle(p)).toEqual({ a: [1, 2, 3] });
    const bad = gzipSync(p);
    bad[bad.length - 6] ^= 0xff; // the CRC
    expect(() => readPickle(bad)).toThrow(/gzip/);
    expect(() => readPickle(gzipSync(p).subarray(0, 12))).toThrow(/gzip/);
  });
});

describe('pickle writer', () => {
  it('round-trips through the reader, shared objects staying shared', () => {
    for (const protocol of [3, 4, 5]) {
      const back = unpickle(pickle(sample(), { protocol })) as Record<string, PickleValue[]>;
      expect(back).toEqual(sample());
      expect(back.frames[0]).toBe(back.frames[1]);
    }
    expect(unpickle(pickle({ a: 1 }, { protocol: 2 }))).toEqual({ a: 1 });
    expect(() => pickle(Uint8Array.from([1]), { protocol: 2 })).toThrow(PickleError);
    expect(() => pickle(1, { protocol: 1 })).toThrow(/protocol 1/);
  });

  it('round-trips any value of the mapping (property)', () => {
    const key = fc.string({ maxLength: 12 });
    const { value } = fc.letrec<{ value: PickleValue }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constant(null),
        fc.boolean(),
        fc.integer(),
        fc.maxSafeInteger(),
        fc.bigInt().filter((b) => !Number.isSafeInteger(Number(b)) || BigInt(Number(b)) !== b),
        fc.double({ noNaN: true }).filter((d) => !Number.isInteger(d) || !Number.isSafeInteger(d)),
        fc.string(),
        fc.uint8Array({ maxLength: 300 }),
        fc.array(tie('value'), { maxLength: 5 }),
        fc.array(tie('value'), { maxLength: 4 }).map((items) => new PickleTuple(items)),
        fc.dictionary(key, tie('value'), { maxKeys: 5 }).map((d) => ({ ...d }) as PickleValue),
      ),
    }));
    fc.assert(
      fc.property(value, fc.constantFrom(3, 4, 5), (v, protocol) => {
        expect(unpickle(pickle(v, { protocol }))).toEqual(v);
      }),
      { numRuns: 300 },
    );
  });

  it('-0 stays -0 (a float), as Python writes -0.0', () => {
    expect(Object.is(unpickle(pickle(-0)), -0)).toBe(true);
  });

  it('writes a repeated string once and BINGETs it after', () => {
    const p = pickle(['action', 'action', 'action']);
    expect(p.toString('latin1').split('action')).toHaveLength(2);
  });

  it('encodes longs with as few bytes as CPython', () => {
    expect([...encodeLong(0n)]).toEqual([]);
    expect([...encodeLong(127n)]).toEqual([0x7f]);
    expect([...encodeLong(128n)]).toEqual([0x80, 0x00]);
    expect([...encodeLong(-128n)]).toEqual([0x80]);
    expect([...encodeLong(-129n)]).toEqual([0x7f, 0xff]);
    expect([...encodeLong(255n)]).toEqual([0xff, 0x00]);
  });
});

describe.skipIf(noPython !== undefined)(
  `against python3's pickle${noPython ? ` (skipped: ${noPython})` : ''}`,
  () => {
    const program = `
import pickle, sys
shared = {'filename': 'train.py', 'line': 12, 'name': 'step'}
v = {'ints': [0, 1, 255, 256, 65535, 65536, -1, -2**31, 2**31, 2**47 + 512, -2**40, 2**53 - 1],
     'big': [2**64, -2**63 - 1, 2**2100], 'floats': [0.5, -1e300, float('inf')],
     'strings': ['', 'action', 'héllo wörld', 'x' * 300],
     'misc': [None, True, False, b'\\x01\\x02\\x03', (), (1, 'a')],
     'long': list(range(2500)), 'frames': [shared, shared], 'map': {1: 'one', 'two': 2}}
if sys.argv[1] == 'dump':
    if sys.argv[2] == '2':
        v['misc'].remove(b'\\x01\\x02\\x03')  # protocol 2 writes bytes through a GLOBAL
    sys.stdout.buffer.write(pickle.dumps(v, protocol=int(sys.argv[2])))
else:
    got = pickle.loads(sys.stdin.buffer.read())
    print('equal' if got == v and got['frames'][0] is got['frames'][1] else 'differ: %r' % (got,))
`;

    it('reads what python3 writes, protocols 2 to 5', () => {
      for (const protocol of [2, 3, 4, 5]) {
        const expected = sample() as Record<string, PickleValue[]>;
        if (protocol === 2) expected.misc.splice(3, 1);
        const back = unpickle(python(program, undefined, ['dump', String(protocol)])) as Record<
          string,
          PickleValue[]
        >;
        expect(back).toEqual(expected);
        expect(back.frames[0]).toBe(back.frames[1]);
      }
    });

    it("a snapshot the writer writes uses only opcodes memory_viz's reader knows", () => {
      // torch/utils/viz/MemoryViz.js unpickle(): protocols 2 to 4 and these opcodes, no bytes opcodes.
      const known = new Set(
        'PROTO FRAME STOP MARK APPEND APPENDS LIST TUPLE EMPTY_TUPLE TUPLE1 TUPLE2 TUPLE3 DICT EMPTY_DICT SETITEM SETITEMS EMPTY_LIST NONE NEWTRUE NEWFALSE BININT BININT1 BININT2 LONG1 BINFLOAT SHORT_BINUNICODE BINUNICODE MEMOIZE BINPUT LONG_BINPUT BINGET LONG_BINGET'.split(
          ' ',
        ),
      );
      const { trace } = {
        trace: Array.from({ length: 1500 }, (_, i) => ({
          action: i % 2 ? 'alloc' : 'free_completed',
          addr: 0x7f00_0000_0000 + i * 512,
          size: i * 1000,
          stream: 0,
          time_us: 1_733_000_000_000_000 + i,
          frames: [],
        })),
      };
      const snapshot = { segments: [], device_traces: [trace], allocator_settings: { max_split_size: -1 } };
      const names = python(
        'import pickletools, sys\nprint(" ".join(sorted({op.name for op, _, _ in pickletools.genops(sys.stdin.buffer.read())})))',
        pickle(snapshot),
      )
        .toString()
        .trim()
        .split(' ');
      expect(names.filter((n) => !known.has(n))).toEqual([]);
      expect(names).toContain('MEMOIZE');
    });

    it('python3 reads what the writer writes as the same value', () => {
      for (const protocol of [3, 4, 5]) {
        expect(python(program, pickle(sample(), { protocol }), ['load']).toString().trim()).toBe('equal');
      }
    });
  },
);
