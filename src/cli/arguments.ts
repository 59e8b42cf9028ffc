/**
 * Command-line arguments: one parser for every command. A command is
 * described once (a CommandSpec in command-specs.ts: its operands, its
 * options with a line of help each, an example, its exit codes), and from
 * that description come its usage line, its --help and the reading of its
 * arguments, so the three cannot disagree.
 *
 * Note [Reading options]
 * `--name value` and `--name=value` both give a value. A value may start
 * with one dash (`--memory-limit -3GiB` is read, and refused by the limit's
 * own check, which says why) but not with two: `--alloc-conf --json` is a
 * missing value, not the configuration "--json". An option that takes no
 * value refuses one (`--json=yes`). One given twice is a mistake unless it
 * may repeat (`--allocator`): which of two limits was meant cannot be
 * guessed. `--` ends the options. Anything else starting with a dash is an
 * unknown option, and every mistake is a UsageError (one line, exit 2).
 */
import { UsageError } from './errors.js';

// The command line's errors live in errors.ts; UsageError is re-exported here, where it was.
export { UsageError } from './errors.js';

/** One option of a command. */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  /** May be given several times (its values come as a list). */
  readonly multiple?: boolean;
  /** The value's name in the usage line: SIZE, NAME, FILE, `sim|cuda`. */
  readonly value?: string;
  /** One line for --help: what it does, its default. */
  readonly help: string;
}

/** What a command takes besides its options. */
export interface OperandSpec {
  /** As the usage line shows it: `<snapshot.pickle[.gz]>`. */
  readonly usage: string;
  /** As a mistake names it: 'snapshot file', 'script'. */
  readonly what: string;
  /** One (default), or one or more. */
  readonly count?: 'one' | 'one-or-more';
}

/** A command as the parser, its usage line and its --help know it. */
export interface CommandSpec {
  readonly name: string;
  /** One sentence: what the command answers. */
  readonly summary: string;
  /** Its operands; none for a command that takes no file. */
  readonly operand?: OperandSpec;
  readonly options: Readonly<Record<string, OptionSpec>>;
  /** Command lines that run as they are written, from the repository's root. */
  readonly examples: readonly string[];
  /** What each exit code means. */
  readonly exitCodes: string;
}

type OptionValue<O> = O extends { type: 'boolean' }
  ? boolean
  : O extends { multiple: true }
    ? string[]
    : string;

/** The options a command was given, by name (absent: not given), and its operands in order. */
export interface ParsedCommand<O extends Readonly<Record<string, OptionSpec>>> {
  readonly values: { readonly [K in keyof O]?: OptionValue<O[K]> };
  readonly operands: readonly string[];
}

/** Read `argv` as `spec` describes (Note [Reading options]); throws UsageError. */
export function parseCommand<S extends CommandSpec>(
  spec: S,
  argv: readonly string[],
): ParsedCommand<S['options']> {
  const values: Record<string, string | string[] | boolean> = {};
  const operands: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      operands.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-' || /^-\d/.test(arg)) {
      operands.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') ? arg.slice(2, eq < 0 ? undefined : eq) : '';
    const option = name !== '' && Object.hasOwn(spec.options, name) ? spec.options[name] : undefined;
    if (option === undefined) throw new UsageError(`unknown option '${eq < 0 ? arg : arg.slice(0, eq)}'`);
    let value: string | boolean = true;
    if (option.type === 'boolean') {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`);
    } else if (eq >= 0) {
      value = arg.slice(eq + 1);
    } else {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) throw new UsageError(`--${name} needs a value`);
      value = next;
      i++;
    }
    if (option.multiple === true) {
      const list = (values[name] as string[] | undefined) ?? [];
      list.push(value as string);
      values[name] = list;
    } else if (Object.hasOwn(values, name)) {
      throw new UsageError(`--${name} is given twice; give it once`);
    } else {
      values[name] = value;
    }
  }
  checkOperands(spec, operands);
  return { values: values as ParsedCommand<S['options']>['values'], operands };
}

function checkOperands(spec: CommandSpec, operands: readonly string[]): void {
  const o = spec.operand;
  if (o === undefined) {
    if (operands.length > 0) throw new UsageError(`${spec.name} takes no file, not '${operands[0]}'`);
    return;
  }
  if (operands.length === 0) throw new UsageError(`no ${o.what} given`);
  if ((o.count ?? 'one') === 'one' && operands.length > 1) throw new UsageError(`give one ${o.what}`);
}

/** The command's usage line: `vmmkit replay <snapshot.pickle[.gz]> [--allocator NAME ...] ...`. */
export function usageOf(spec: CommandSpec): string {
  const operand =
    spec.operand === undefined
      ? []
      : [`${spec.operand.usage}${spec.operand.count === 'one-or-more' ? '...' : ''}`];
  const options = Object.entries(spec.options).map(([name, o]) => `[${optionText(name, o)}]`);
  return ['vmmkit', spec.name, ...operand, ...options].join(' ');
}

function optionText(name: string, o: OptionSpec): string {
  if (o.type === 'boolean') return `--${name}`;
  return `--${name} ${o.value ?? 'VALUE'}${o.multiple === true ? ' ...' : ''}`;
}

/** What `vmmkit COMMAND --help` prints: the usage line, the summary, each option on a line, examples, exit codes. */
export function helpOf(spec: CommandSpec): string[] {
  const rows: [string, string][] = [
    ...Object.entries(spec.options).map(([name, o]): [string, string] => [optionText(name, o), o.help]),
    ['-h, --help', 'this help'],
    ['--version', "vmmkit's version"],
  ];
  const width = Math.max(...rows.map(([left]) => left.length));
  return [
    `usage: ${usageOf(spec)}`,
    '',
    spec.summary,
    '',
    'options:',
    ...rows.map(([left, help]) => `  ${left.padEnd(width)}  ${help}`),
    '',
    spec.examples.length === 1 ? 'example:' : 'examples:',
    ...spec.examples.map((e) => `  ${e}`),
    '',
    spec.exitCodes,
  ];
}

/**
 * What every command prints for a usage mistake: one line, what is wrong
 * and then the command's usage, so a person sees both and a script reading
 * stderr gets one line (exit 2 goes with it).
 */
export function usageLine(command: string, message: string, usage: string): string {
  return `vmmkit ${command}: ${message} (usage: ${usage})`;
}
