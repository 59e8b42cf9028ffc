/**
 * `vmmkit open`'s server: it serves the page and the files named on its
 * command line, and nothing else (Note [What the server serves]). Requests
 * are written on a raw socket, so that their paths reach the server exactly
 * as written (a URL class would resolve the dots first): `..`, percent- and
 * double-encoded dots and slashes, absolute paths and absolute-form
 * requests all get 404, and no byte of any other file comes back.
 */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { type OpenServer, offeredFiles, openCommand, startOpenServer } from '../../src/cli/open.js';

const TRACE = fileURLToPath(new URL('../../traces/h200/phases_streams-native.pickle.gz', import.meta.url));
const PACKAGE = fileURLToPath(new URL('../../package.json', import.meta.url));
// A stand-in page: the server's rules do not depend on what the page holds.
const PAGE = '<!doctype html><title>page</title><!--data--><p>the page</p>';

interface Raw {
  readonly status: number;
  readonly headers: string;
  readonly body: Buffer;
}

/** One request written as `requestLine` with `host`, on a raw socket; the answer as it came. */
function raw(port: number, requestLine: string, host = `127.0.0.1:${port}`): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const all = Buffer.concat(chunks);
      const split = all.indexOf('\r\n\r\n');
      const headers = all.subarray(0, split).toString('latin1');
      resolve({ status: Number(headers.split(' ')[1]), headers, body: all.subarray(split + 4) });
    });
    socket.write(`${requestLine}\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  });
}

describe('vmmkit open serves the page and the files named, nothing else', () => {
  let server: OpenServer;
  beforeAll(async () => {
    server = await startOpenServer(offeredFiles([TRACE]), { page: PAGE });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('listens on 127.0.0.1 and serves the page with the files it offers listed in it', async () => {
    expect(server.url).toBe(`http://127.0.0.1:${server.port}/`);
    const r = await raw(server.port, 'GET / HTTP/1.1');
    expect(r.status).toBe(200);
    expect(r.headers).toMatch(/content-type: text\/html/i);
    const html = r.body.toString('utf8');
    const list = JSON.parse(
      /<script type="application\/json" id="vmmkit-files">(.*?)<\/script>/.exec(html)![1],
    );
    expect(list).toEqual([
      { name: 'phases_streams-native.pickle.gz', size: readFileSync(TRACE).length, url: '/snapshot/0' },
    ]);
  });

  it('serves each file named, byte for byte, at /snapshot/K', async () => {
    const r = await raw(server.port, 'GET /snapshot/0 HTTP/1.1');
    expect(r.status).toBe(200);
    expect(Buffer.compare(r.body, readFileSync(TRACE))).toBe(0);
    expect((await raw(server.port, 'GET /snapshot/1 HTTP/1.1')).status).toBe(404);
  });

  it('answers 404 to every traversal: dots, encoded, double-encoded, absolute, and any other path', async () => {
    const secret = readFileSync(PACKAGE, 'utf8');
    const attempts = [
      '/../package.json',
      '/snapshot/../../package.json',
      '/snapshot/0/../../package.json',
      '/%2e%2e/package.json',
      '/%2E%2E%2Fpackage.json',
      '/snapshot/%2e%2e%2f%2e%2e%2fpackage.json',
      '/%252e%252e/%252e%252e/package.json',
      '/..%2f..%2fetc%2fpasswd',
      '/..\\..\\package.json',
      '//etc/passwd',
      '/etc/passwd',
      `/${PACKAGE}`,
      'http://127.0.0.1/etc/passwd',
      `file://${PACKAGE}`,
      '/snapshot/00',
      '/snapshot/0/',
      '/snapshot/0?x=../package.json',
      '/snapshot/-1',
      '/snapshot/',
      '/package.json',
      '/index.html',
      '/?',
    ];
    for (const path of attempts) {
      const r = await raw(server.port, `GET ${path} HTTP/1.1`);
      expect([400, 404], path).toContain(r.status);
      const body = r.body.toString('utf8');
      expect(body, path).not.toContain('"name": "vmmkit"');
      expect(body, path).not.toContain('root:');
      expect(body.length, path).toBeLessThan(Math.min(secret.length, 100));
    }
  });

  it('refuses a Host other than its own (403), and methods other than GET and HEAD (405)', async () => {
    const foreign = await raw(server.port, 'GET / HTTP/1.1', `attacker.example:${server.port}`);
    expect(foreign.status).toBe(403);
    expect(foreign.body.toString()).not.toContain('the page');
    expect((await raw(server.port, 'GET / HTTP/1.1', `localhost:${server.port}`)).status).toBe(200);
    expect((await raw(server.port, 'POST / HTTP/1.1')).status).toBe(405);
    expect((await raw(server.port, 'PUT /snapshot/0 HTTP/1.1')).status).toBe(405);
  });
});

describe('vmmkit open on the command line', () => {
  it('prints the URL, serves until stopped, and exits 0', async () => {
    const out: string[] = [];
    const err: string[] = [];
    let server: OpenServer | undefined;
    const ended = openCommand({ out: (l) => out.push(l), err: (l) => err.push(l) }, [TRACE, '--no-browser'], {
      onListening: (s) => {
        server = s;
      },
    });
    await expect.poll(() => server).toBeDefined();
    const page = await fetch(server!.url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('id="vmmkit-files"');
    await server!.close();
    expect(await ended).toBe(0);
    expect(err).toEqual([]);
    expect(out[0]).toBe(`vmmkit: the page is at ${server!.url}`);
    expect(out[1]).toContain('phases_streams-native.pickle.gz');
  });

  it('--vendor names the machine of every file offered, for the page to read them as; a bad one is refused', async () => {
    const io = { out: () => {}, err: () => {} };
    let server: OpenServer | undefined;
    const ended = openCommand(io, [TRACE, '--no-browser', '--vendor', 'npu'], {
      onListening: (s) => {
        server = s;
      },
    });
    await expect.poll(() => server).toBeDefined();
    const html = await (await fetch(server!.url)).text();
    const list = JSON.parse(
      /<script type="application\/json" id="vmmkit-files">(.*?)<\/script>/.exec(html)![1],
    );
    expect(list.map((f: { vendor?: string }) => f.vendor)).toEqual(['npu']);
    await server!.close();
    expect(await ended).toBe(0);
    const lines: string[] = [];
    const say = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
    expect(await runCli(['open', TRACE, '--no-browser', '--vendor', 'tpu'], say)).toBe(2);
    expect(lines[0]).toMatch(/^vmmkit open: --vendor: 'tpu' is not cuda, rocm or npu \(usage: vmmkit open /);
  });

  it('is a command of the table: vmmkit open --help', async () => {
    const lines: string[] = [];
    expect(await runCli(['open', '--help'], { out: (l) => lines.push(l), err: (l) => lines.push(l) })).toBe(
      0,
    );
    expect(lines[0]).toMatch(/^usage: vmmkit open /);
  });

  it('refuses a missing file and a bad port with one line', async () => {
    const lines: string[] = [];
    const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
    expect(await runCli(['open', 'no-such.pickle', '--no-browser'], io)).toBe(1);
    expect(lines).toEqual(['vmmkit open: cannot read no-such.pickle: no such file']);
    lines.length = 0;
    expect(await runCli(['open', '--port', 'http', '--no-browser'], io)).toBe(2);
    expect(lines[0]).toMatch(/--port: http is not a port/);
  });
});
