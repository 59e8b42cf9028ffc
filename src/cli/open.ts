/**
 * `vmmkit open [snapshot.pickle[.gz] ...] [--port N] [--no-browser]`
 *
 * Serves the page (src/web, built into dist/web/index.html) on 127.0.0.1,
 * prints its URL and opens it in a browser where there is one. The files
 * named on the command line are offered to the page, which reads and
 * answers them in its own Web Workers; more can be dropped on it.
 *
 * Note [What the server serves]: the server answers GET (and HEAD) for
 * exactly two kinds of path, matched as whole strings against a table made
 * at start: `/`, the page, and `/snapshot/K` for K the position of a file
 * named on the command line (written as String(K) writes it). Every other
 * request is 404, whatever its dots, slashes or percent signs: no part of a
 * request's path is ever decoded, joined to a folder or given to the file
 * system, so no path from a request can reach a file. It listens on the
 * loopback address only, and answers only requests whose Host is that
 * address or localhost at its port (a page elsewhere that resolves its own
 * name to 127.0.0.1 gets 403, not the files).
 *
 * Bad input (a file that is missing or not a file, a port in use, the page
 * not built) is one line on stderr and exit 1, before anything is served.
 */
import { spawn } from 'node:child_process';
import { createReadStream, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename } from 'node:path';
import type { SnapshotVendor } from '../replay/read/vendor.js';
import { pageHtml, withEmbedded } from '../report/html.js';
import { parseCommand, UsageError, usageOf } from './arguments.js';
import type { CliOutput } from './cli.js';
import { runCommand } from './command.js';
import { OPEN_SPEC } from './command-specs.js';
import { CommandError } from './errors.js';
import { readVendor } from './what-if-options.js';

export const OPEN_USAGE = usageOf(OPEN_SPEC);

/** A file the server offers the page. */
export interface OfferedFile {
  readonly path: string;
  readonly name: string;
  readonly size: number;
}

export interface OpenServer {
  /** The page's URL: http://127.0.0.1:PORT/ */
  readonly url: string;
  readonly port: number;
  /** Stop serving; resolves once the server is closed. Never throws. */
  close(): Promise<void>;
}

/** Headers every answer carries: nothing cached, sniffed or sent on; the page isolated (Note [What the server serves]). */
const HEADERS = {
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
} as const;

/** Check the files named: each must be a file this process can read. */
export function offeredFiles(paths: readonly string[]): OfferedFile[] {
  return paths.map((path) => {
    let size: number;
    try {
      const stat = statSync(path);
      if (!stat.isFile()) throw new CommandError(`${path} is not a file`);
      size = stat.size;
    } catch (e) {
      if (e instanceof CommandError) throw e;
      const code = (e as NodeJS.ErrnoException).code;
      throw new CommandError(`cannot read ${path}: ${code === 'ENOENT' ? 'no such file' : String(e)}`);
    }
    return { path, name: basename(path), size };
  });
}

/** Serve the page and `files` on 127.0.0.1 (port 0: any free one). */
export async function startOpenServer(
  files: readonly OfferedFile[],
  options: {
    readonly port?: number;
    readonly page?: string;
    /** --vendor: the page reads every file offered as made there (undefined: its own guess). */
    readonly vendor?: SnapshotVendor;
  } = {},
): Promise<OpenServer> {
  const shell = options.page ?? pageHtml();
  // The table of everything served (Note [What the server serves]).
  const routes = new Map<string, OfferedFile | 'page'>([['/', 'page']]);
  files.forEach((f, k) => {
    routes.set(`/snapshot/${k}`, f);
  });
  const page = withEmbedded(
    shell,
    'vmmkit-files',
    // The page's ServedFile (src/web/protocol.ts).
    files.map((f, k) => ({ name: f.name, size: f.size, url: `/snapshot/${k}`, vendor: options.vendor })),
  );
  let port = 0;
  const server = createServer((request, response) => answer(request, response, routes, page, port));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((e: NodeJS.ErrnoException) => {
    throw new CommandError(
      e.code === 'EADDRINUSE'
        ? `port ${options.port} on 127.0.0.1 is in use (--port 0 takes any free one)`
        : `cannot listen on 127.0.0.1: ${e.message}`,
    );
  });
  port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/`, port, close: () => closeServer(server) };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

function answer(
  request: IncomingMessage,
  response: ServerResponse,
  routes: ReadonlyMap<string, OfferedFile | 'page'>,
  page: string,
  port: number,
): void {
  const send = (status: number, text: string) => {
    response.writeHead(status, { ...HEADERS, 'Content-Type': 'text/plain; charset=utf-8' });
    response.end(request.method === 'HEAD' ? undefined : `${text}\n`);
  };
  const host = request.headers.host;
  if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`) {
    send(403, 'forbidden');
    return;
  }
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    send(405, 'method not allowed');
    return;
  }
  const route = routes.get(request.url ?? '');
  if (route === undefined) {
    send(404, 'not found');
    return;
  }
  if (route === 'page') {
    response.writeHead(200, { ...HEADERS, 'Content-Type': 'text/html; charset=utf-8' });
    response.end(request.method === 'HEAD' ? undefined : page);
    return;
  }
  response.writeHead(200, {
    ...HEADERS,
    'Content-Type': 'application/octet-stream',
    'Content-Length': String(route.size),
  });
  if (request.method === 'HEAD') {
    response.end();
    return;
  }
  const stream = createReadStream(route.path);
  stream.on('error', () => response.destroy());
  stream.pipe(response);
}

/** Open `url` in the desktop's browser where there is one; false when there is none to ask. */
export function openInBrowser(url: string): boolean {
  const command =
    process.platform === 'darwin'
      ? ['open', url]
      : process.platform === 'win32'
        ? ['cmd', '/c', 'start', '', url]
        : process.env.DISPLAY || process.env.WAYLAND_DISPLAY
          ? ['xdg-open', url]
          : undefined;
  if (command === undefined) return false;
  try {
    const child = spawn(command[0], command.slice(1), { detached: true, stdio: 'ignore' });
    child.on('error', () => {});
    child.unref();
    return true;
  } catch {
    return false;
  }
}

export interface OpenCliOptions {
  /** Told of the server once it listens (tests stop it with close()); default: nothing. */
  readonly onListening?: (server: OpenServer) => void;
}

/** Run `vmmkit open`; resolves with the exit code once the server stops (SIGINT, SIGTERM or close()). */
export function openCommand(
  io: CliOutput,
  argv: readonly string[],
  options: OpenCliOptions = {},
): Promise<number> {
  return runCommand(io, 'open', OPEN_USAGE, () => run(io, argv, options));
}

async function run(io: CliOutput, argv: readonly string[], options: OpenCliOptions): Promise<number> {
  const { values, operands } = parseOpen(argv);
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port > 65535)
      throw new UsageError(`--port: ${values.port} is not a port (0 to 65535; 0 takes any free one)`);
  }
  const vendor = readVendor(values.vendor);
  const files = offeredFiles(operands);
  const server = await startOpenServer(files, { port, vendor });
  io.out(`vmmkit: the page is at ${server.url}`);
  io.out(
    files.length === 0
      ? 'drop snapshots on it; they are read and replayed in the page, and nothing leaves this machine'
      : `it offers ${files.map((f) => f.name).join(', ')}; they are read and replayed in the page, and nothing leaves this machine`,
  );
  if (values['no-browser'] !== true && !openInBrowser(server.url))
    io.err('note: no browser to open here; open the URL in one on this machine');
  io.out('stop with Ctrl-C');
  let stopped: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    stopped = resolve;
  });
  const stop = async () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await server.close();
    stopped();
  };
  const onSignal = () => void stop();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // A close() from the caller ends the command too.
  options.onListening?.({ url: server.url, port: server.port, close: stop });
  await done;
  return 0;
}

/** open takes files or none (the page then waits for a drop); the parser is told which it got. */
function parseOpen(argv: readonly string[]) {
  try {
    return parseCommand(OPEN_SPEC, argv);
  } catch (e) {
    if (e instanceof UsageError && e.message === `no ${OPEN_SPEC.operand.what} given`)
      return parseCommand({ ...OPEN_SPEC, operand: undefined }, argv);
    throw e;
  }
}
