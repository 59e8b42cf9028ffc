/**
 * A compile-time check that a list names every method of an interface: the
 * backend's and core's operation lists use it, so a method added without
 * being listed (traced, or declared a query) fails to compile. It lives in
 * util, beneath every layer, so the backend need not import core's tracing.
 */

/** The string-named methods of T. */
export type MethodNames<T> = {
  [K in Extract<keyof T, string>]: T[K] extends (...args: never[]) => unknown ? K : never;
}[Extract<keyof T, string>];

/**
 * `true` when every method of T is in Listed; otherwise a type naming the
 * missing ones, so `const ok: MethodsListed<T, L> = true` fails to compile
 * until a new method is traced or declared a query.
 */
export type MethodsListed<T, Listed> = [Exclude<MethodNames<T>, Listed>] extends [never]
  ? true
  : { readonly missing: Exclude<MethodNames<T>, Listed> };
