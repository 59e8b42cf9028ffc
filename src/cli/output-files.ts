/**
 * The files and folders a command writes (report --out and
 * --export-snapshot, map --out, replay --export), checked one way before
 * any work: a missing folder is never made, it is bad input (one line,
 * exit 1), whether the option names a file in it or the folder itself; a
 * file name whose extension the command does not write is a usage mistake
 * (exit 2).
 */
import { accessSync, constants, existsSync, statSync, writeFileSync } from 'node:fs';
import { dirname, extname, resolve } from 'node:path';
import { CommandError, UsageError } from './errors.js';

/**
 * The extension of `--out` among those a command writes (the first when the
 * name has none); another extension is a UsageError saying what it writes.
 */
export function checkOutName(path: string, written: readonly string[], what: string): string {
  if (existsSync(path) && statSync(path).isDirectory()) return written[0];
  const ext = extname(path).toLowerCase();
  if (ext === '') return written[0];
  if (!written.includes(ext)) throw new UsageError(`--out ${path}: ${what} (${written.join(', ')})`);
  return ext;
}

/** Fail before the work when `path` cannot be written: its folder must exist and be writable. */
export function checkWritable(path: string): void {
  const dir = dirname(resolve(path));
  if (!existsSync(dir)) throw new CommandError(`cannot write ${path}: no folder ${dir}`);
  if (existsSync(path) && statSync(path).isDirectory())
    throw new CommandError(`cannot write ${path}: it is a folder`);
  try {
    accessSync(existsSync(path) ? path : dir, constants.W_OK);
  } catch {
    throw new CommandError(`cannot write ${path}: permission denied`);
  }
}

/** Fail before the work when files cannot be written into folder `dir`: it must exist, be a folder, be writable. */
export function checkWritableFolder(dir: string): void {
  const path = resolve(dir);
  if (!existsSync(path)) throw new CommandError(`cannot write into ${dir}: no folder ${path}`);
  if (!statSync(path).isDirectory()) throw new CommandError(`cannot write into ${dir}: it is not a folder`);
  try {
    accessSync(path, constants.W_OK);
  } catch {
    throw new CommandError(`cannot write into ${dir}: permission denied`);
  }
}

/** Write a file; a failure is one line naming it. */
export function writeOut(path: string, content: string | Uint8Array): void {
  try {
    writeFileSync(path, content);
  } catch (e) {
    throw new CommandError(`cannot write ${path}: ${e instanceof Error ? e.message : String(e)}`);
  }
}
