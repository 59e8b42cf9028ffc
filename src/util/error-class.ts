/**
 * Note [One error factory per layer]
 * Every layer outside core keeps its errors in one module (alloc, replay,
 * report, util, cli: test/compose/error-modules.test.ts), and each module
 * makes its classes with errorClass, as memfs makes all its Node-style errors
 * from one function over a base class: the class it returns carries its own
 * name (in `name`, and as the constructor's name) and takes a one-line
 * message. A module writes `class X extends errorClass('X') {}`, so each error
 * stays a class of its own that callers catch with instanceof, and adds
 * fields (a kind, sizes) only where the error has them. Core's one VmmError
 * with its kinds is made by core's own factory, vmmError.
 */

/**
 * Any Error class a layer's error may extend (Error, RangeError, or another of
 * its layer's); `any[]` is what TypeScript asks of a class a function extends.
 */
// biome-ignore lint/suspicious/noExplicitAny: a mixin's base takes any arguments
type ErrorBase = new (...args: any[]) => Error;

/** A base for the layer's error class `name`: `Base` (Error unless given) with that name. */
export function errorClass<B extends ErrorBase = ErrorConstructor>(
  name: string,
  Base: B = Error as unknown as B,
): B {
  const named = class extends Base {
    override readonly name: string = name;
  };
  Object.defineProperty(named, 'name', { value: name });
  return named;
}
