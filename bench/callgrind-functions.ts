/**
 * Where a callgrind run's cost went, function by function, with V8's
 * compiled JavaScript named: callgrind knows the JIT's code only by address
 * ("0x000000000d0ae180"), and node run with --perf-basic-prof writes the
 * name of each piece of code it makes to /tmp/perf-PID.map ("start size
 * name" in hex). cycle-footprint's `--functions` uses it to say which
 * functions the cycle's instructions and cold lines are in.
 */

/** One function's self cost per cycle. */
export interface FunctionCost {
  readonly name: string;
  readonly ir: number;
  readonly code_lines: number;
  readonly data_lines: number;
}

/** A perf map's ranges, sorted by start, and the name of the one holding an address. */
export function perfMapNames(text: string): (address: number) => string | undefined {
  const ranges = text
    .split('\n')
    .map((line) => /^([0-9a-f]+) ([0-9a-f]+) (.*)$/i.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ start: Number.parseInt(m[1], 16), size: Number.parseInt(m[2], 16), name: m[3] }))
    .sort((a, b) => a.start - b.start);
  return (address) => {
    let lo = 0;
    let hi = ranges.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ranges[mid].start <= address) lo = mid + 1;
      else hi = mid;
    }
    const r = ranges[lo - 1];
    return r !== undefined && address < r.start + r.size ? r.name : undefined;
  };
}

/** "JS:*set file:///.../dist/src/util/ordered-map.js:69:8" as "set src/util/ordered-map.js:69". */
function shortName(name: string): string {
  const js = /^JS:[*^~+]?(\S*) .*?\/dist\/(.*?):(\d+):\d+$/.exec(name);
  return js === null ? name : `${js[1] || '(anonymous)'} ${js[2]}:${js[3]}`;
}

/**
 * Self cost per function in a callgrind output file (any `positions`, name
 * compression on or off), per cycle, the `top` largest by instructions.
 * A cost line right after `calls=` is the call's inclusive cost and is left
 * to the callee; JIT addresses are named through `nameOf` (perfMapNames).
 */
export function functionCosts(
  callgrind: string,
  nameOf: (address: number) => string | undefined,
  cycles: number,
  top: number,
): FunctionCost[] {
  const events = /^events: (.*)$/m.exec(callgrind)?.[1].split(' ') ?? [];
  const column = (event: string) => events.indexOf(event);
  const [ir, il, dl] = [column('Ir'), column('ILmr'), column('DLmr')];
  const positions = (/^positions: (.*)$/m.exec(callgrind)?.[1] ?? 'line').split(' ').length;
  const names = new Map<string, string>();
  const totals = new Map<string, [number, number, number]>();
  let fn = '';
  let afterCall = false;
  for (const line of callgrind.split('\n')) {
    const def = /^c?fn=\((\d+)\)(?: (.*))?$/.exec(line);
    if (def !== null) {
      if (def[2] !== undefined) names.set(def[1], def[2]);
      if (line.startsWith('fn=')) fn = names.get(def[1]) ?? def[1];
      continue;
    }
    if (line.startsWith('calls=')) {
      afterCall = true;
      continue;
    }
    if (!/^[-+*0-9]/.test(line)) continue;
    if (afterCall) {
      afterCall = false;
      continue;
    }
    const costs = line.trim().split(/\s+/).slice(positions).map(Number);
    const at = totals.get(fn) ?? [0, 0, 0];
    at[0] += costs[ir] ?? 0;
    at[1] += il < 0 ? 0 : (costs[il] ?? 0);
    at[2] += dl < 0 ? 0 : (costs[dl] ?? 0);
    totals.set(fn, at);
  }
  const byName = new Map<string, [number, number, number]>();
  for (const [raw, [i, c, d]] of totals) {
    const address = /^0x([0-9a-f]+)$/i.exec(raw);
    const name = shortName((address && nameOf(Number.parseInt(address[1], 16))) ?? raw);
    const at = byName.get(name) ?? [0, 0, 0];
    byName.set(name, [at[0] + i, at[1] + c, at[2] + d]);
  }
  return [...byName]
    .map(([name, [i, c, d]]) => ({
      name,
      ir: Math.round(i / cycles),
      code_lines: Math.round(c / cycles),
      data_lines: Math.round(d / cycles),
    }))
    .sort((a, b) => b.ir - a.ir)
    .slice(0, top);
}
