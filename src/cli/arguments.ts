/**
 * Options of the report and map subcommands, parsed by Node's own
 * util.parseArgs (strict: an unknown option or a missing value is an
 * error), with its errors turned into one short line.
 */
import { parseArgs } from 'node:util';

/** A mistake in how the command was called (exit 2). */
export class UsageError extends Error {}

type OptionSpec = Record<string, { type: 'string'; multiple?: boolean }>;

export function parseOptions<T extends OptionSpec>(
  argv: readonly string[],
  options: T,
): { values: { [K in keyof T]?: T[K]['multiple'] extends true ? string[] : string }; positionals: string[] } {
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
