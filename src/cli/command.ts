/**
 * How a command that reads options and then works ends when it throws: a usage mistake is one
 * line with the command's usage (exit 2), any other failure one line for a person (exit 1), never
 * a stack trace; a progress bar still drawn is cleared first, so the line stands on its own.
 */
import { UsageError, usageLine } from './arguments.js';
import type { CliOutput } from './cli.js';

export async function runCommand(
  io: CliOutput,
  command: string,
  usage: string,
  body: () => Promise<number>,
): Promise<number> {
  try {
    return await body();
  } catch (e) {
    io.progress?.(-1);
    if (e instanceof UsageError) {
      io.err(usageLine(command, e.message, usage));
      return 2;
    }
    io.err(`vmmkit ${command}: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}
