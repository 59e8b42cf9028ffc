/**
 * Hostile values of every JavaScript kind, for the fuzzer: wrong types,
 * NaN, infinities, -0, fractions, 2^53 + 1, huge and negative bigints, null
 * and frozen boxes, throwing getters, proxies (throwing, lying, revoked),
 * lying and detached typed arrays, and objects that cannot be formatted.
 * Each is made fresh by a call, so no two calls share a hostile object.
 */
import type { Random } from './random.js';

const throwingTraps: ProxyHandler<object> = {
  get() {
    throw new Error('fuzz: get trap');
  },
  set() {
    throw new Error('fuzz: set trap');
  },
  has() {
    throw new Error('fuzz: has trap');
  },
  getOwnPropertyDescriptor() {
    throw new Error('fuzz: descriptor trap');
  },
  getPrototypeOf() {
    throw new Error('fuzz: prototype trap');
  },
  ownKeys() {
    throw new Error('fuzz: keys trap');
  },
};

function revoked(target: object): object {
  const p = Proxy.revocable(target, {});
  p.revoke();
  return p.proxy;
}

class LyingLength extends Uint8Array {
  override get length(): number {
    return 1 << 30;
  }
}

class ThrowingView extends Uint8Array {
  override subarray(): Uint8Array<ArrayBuffer> {
    throw new Error('fuzz: subarray');
  }
  override set(): void {
    throw new Error('fuzz: set');
  }
}

function detached(): Uint8Array {
  const b = new Uint8Array(32);
  structuredClone(b.buffer, { transfer: [b.buffer] });
  return b;
}

function throwingGetter(field: string, base: object = {}): object {
  return Object.defineProperty({ ...base }, field, {
    get() {
      throw new Error(`fuzz: getter ${field}`);
    },
    enumerable: true,
  });
}

/** Getters whose answer changes between reads: valid first, garbage after. */
function changing(field: string, first: unknown, base: object = {}): object {
  let reads = 0;
  return Object.defineProperty({ ...base }, field, {
    get() {
      return reads++ === 0 ? first : 'changed';
    },
    enumerable: true,
  });
}

const SCALARS: readonly (() => unknown)[] = [
  () => undefined,
  () => null,
  () => 0,
  () => -0,
  () => 1,
  () => -1,
  () => 0.5,
  () => -2.5,
  () => Number.NaN,
  () => Number.POSITIVE_INFINITY,
  () => Number.NEGATIVE_INFINITY,
  () => 2 ** 53,
  () => 2 ** 53 + 2,
  () => Number.MAX_SAFE_INTEGER,
  () => Number.MIN_SAFE_INTEGER,
  () => 2 ** 64,
  () => Number.MAX_VALUE,
  () => Number.EPSILON,
  () => 0n,
  () => -1n,
  () => 1n,
  () => 2n ** 53n + 1n,
  () => 2n ** 64n,
  () => 2n ** 64n - 1n,
  () => -(2n ** 70n),
  () => 2n ** 200n,
  () => '',
  () => '0',
  () => '1',
  () => 'garbage',
  () => true,
  () => false,
  () => Symbol('fuzz'),
  () => Symbol.iterator,
];

const OBJECTS: readonly (() => unknown)[] = [
  () => ({}),
  () => [],
  () => [null],
  () => Object.create(null),
  () => Object.freeze({ value: 0 }),
  () => Object.freeze({ value: 0n }),
  () => Object.seal({}),
  () => Object.preventExtensions({}),
  () => Object.defineProperty({}, 'value', { value: 0, writable: false }),
  () => ({
    get value() {
      return 0;
    },
  }),
  () => ({
    set value(_v: unknown) {
      throw new Error('fuzz: setter');
    },
  }),
  () => Object.create(Object.freeze({ value: 0 })),
  () => new Proxy({ value: 0 }, throwingTraps),
  () => new Proxy({ value: 0 }, { set: () => false }),
  () => new Proxy([], throwingTraps),
  // An array that claims 2^40 elements and answers every index with a valid-looking descriptor.
  () =>
    new Proxy([], {
      get: (_t, key) => (key === 'length' ? 2 ** 40 : { location: { type: 1, id: 0 }, flags: 3 }),
    }),
  () => ({ length: 2 ** 53 - 1 }),
  () => revoked({ value: 0 }),
  () => revoked([]),
  () => revoked(new Uint8Array(16)),
  () => new Proxy(new Uint8Array(64), {}),
  () => new LyingLength(4),
  () => new ThrowingView(64),
  () => detached(),
  () => new Uint16Array(32),
  () => new Uint8ClampedArray(32),
  () => new DataView(new ArrayBuffer(32)),
  () => new ArrayBuffer(32),
  () => new Int8Array(64),
  () => new Date(0),
  () => /x/,
  () => new Map(),
  () => () => 0,
  () => throwingGetter('value'),
  () => throwingGetter('location'),
  () => throwingGetter('type'),
  () => throwingGetter('id'),
  () => throwingGetter('length', []),
  () => ({ type: Symbol('t'), id: Object.create(null), location: Object.create(null) }),
  () => ({ location: { type: 1, id: Symbol('id') }, flags: Object.create(null) }),
  () => changing('id', 0, { type: 1 }),
  () => ({ location: changing('id', 0, { type: 1 }), flags: 3 }),
  () => ({ valueOf: () => 1, toString: () => '1' }),
  () => ({
    [Symbol.toPrimitive]() {
      throw new Error('fuzz: toPrimitive');
    },
  }),
];

/** One hostile value, any kind. */
export function garbage(rng: Random): unknown {
  return rng.chance(0.45) ? rng.pick(SCALARS)() : rng.pick(OBJECTS)();
}

/** A valid struct with one field replaced by a hostile value, a throwing getter or a changing one. */
export function corrupt(rng: Random, valid: Record<string, unknown>): object {
  const keys = Object.keys(valid);
  const field = rng.pick(keys);
  const nested = valid[field];
  switch (rng.below(5)) {
    case 0:
      return throwingGetter(field, valid);
    case 1:
      return changing(field, nested, valid);
    case 2:
      return rng.chance(0.5) ? new Proxy({ ...valid }, throwingTraps) : revoked({ ...valid });
    case 3:
      if (typeof nested === 'object' && nested !== null)
        return { ...valid, [field]: corrupt(rng, nested as Record<string, unknown>) };
      return { ...valid, [field]: garbage(rng) };
    default:
      return { ...valid, [field]: garbage(rng) };
  }
}
