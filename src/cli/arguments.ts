/**
 * Command-line arguments: a usage error type, node's parseArgs with its
 * errors as usage errors, and the two readers that take an option out of the
 * list as they read it, so what is left is the positional rest (onlyArgument
 * checks it).
 */
import { parseArgs } from 'node:util';
import { UsageError } from './errors.js';

/**
 * The value after `name` (removed with it), or undefined when `name` is absent. The value must
 * be there: a missing one, or another option in its place, is a usage error.
 */
export function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const value = args[i + 1];
  if (value === undefined || value.startsWith('--')) throw new UsageError(`${name} needs a value`);
  args.splice(i, 2);
  return value;
}

/** Whether `name` is present (removed). */
export function flag(args: string[], name: string): boolean {
  const i = args.indexOf(name);
  if (i >= 0) args.splice(i, 1);
  return i >= 0;
}

/**
 * What is left of `args` once `option` and `flag` have read the options out must be one
 * `what` (a snapshot file): an option still there is unknown, none or several is a mistake.
 */
export function onlyArgument(args: readonly string[], what: string): string {
  const unknown = args.find((a) => a.startsWith('--'));
  if (unknown !== undefined) throw new UsageError(`unknown option '${unknown}'`);
  if (args.length !== 1) throw new UsageError(args.length === 0 ? `no ${what} given` : `give one ${what}`);
  return args[0];
}

// The command line's errors live in errors.ts; UsageError is re-exported here, where it was.
export { UsageError } from './errors.js';

/**
 * What every command prints for a usage mistake: one line, what is wrong
 * and then the command's usage, so a person sees both and a script reading
 * stderr gets one line (exit 2 goes with it).
 */
export function usageLine(command: string, message: string, usage: string): string {
  return `vmmkit ${command}: ${message} (usage: ${usage})`;
}

type OptionSpec = Record<string, { type: 'string'; multiple?: boolean } | { type: 'boolean' }>;

type OptionValue<O> = O extends { type: 'boolean' }
  ? boolean
  : O extends { multiple: true }
    ? string[]
    : string;

/** Node's own util.parseArgs (strict), its errors turned into one short line (report and map). */
export function parseOptions<T extends OptionSpec>(
  argv: readonly string[],
  options: T,
): { values: { [K in keyof T]?: OptionValue<T[K]> }; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options,
      allowPositionals: true,
      strict: true,
    });
    return { values: values as never, positionals };
  } catch (e) {
    const code = (e as { code?: string }).code;
    const name = /'(--?[^' <]+)/.exec(e instanceof Error ? e.message : '')?.[1] ?? '?';
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw new UsageError(`unknown option '${name}'`);
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') throw new UsageError(`${name} needs a value`);
    throw new UsageError(e instanceof Error ? e.message.split('\n')[0] : String(e));
  }
}
