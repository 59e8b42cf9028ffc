/**
 * The inspection view: a process's state in its vendor's object model (HIP:
 * parent virtual buffers, sub-buffers cross-linked to GenericAllocations and
 * their reference counts; CUDA and ACL in their own words, each vendor's
 * layers.ts), or in vmmkit's own words for a process no front end made.
 * `inspect(process)` shows one from code; `vmmkit inspect` prints every
 * process a script made, and `vmmkit trace --break NAME` the state at each
 * breakpoint (src/cli). The one place that knows every vendor's view.
 */
import type { Runtime, RuntimeDescription } from '../core/runtime.js';
import type { BreakContext } from '../core/trace.js';
import { ACL_VIEW } from './acl/layers.js';
import { devicesOf, hex, placeOf, renderState, type VendorView } from './common/layers.js';
import { CUDA_VIEW } from './cuda/layers.js';
import { HIP_VIEW } from './hip/layers.js';

/** Each vendor's view, by the name its layer table (and its process's `vendor`) gives. */
const VIEWS: Readonly<Record<string, VendorView>> = { HIP: HIP_VIEW, CUDA: CUDA_VIEW, ACL: ACL_VIEW };

/** The state of a process no front end made (createRuntime), in vmmkit's own words. */
export function formatCoreState(d: RuntimeDescription): string {
  return renderState(d, {
    process: (x) => `process ${x.pid} (${devicesOf(x)})`,
    reservation: (r) => `reservation ${hex(r.base)} +${hex(r.size)}`,
    mapping: (m, access) =>
      `mapping ${hex(m.va)} +${hex(m.size)} -> handle ${hex(m.handle)} (offset ${hex(m.offset)}); ${access}`,
    oneStep: (r, access) => `malloc ${hex(r.base)} +${hex(r.size)}; ${access}`,
    allocation: (a, at) =>
      `handle ${hex(a.handle)}: ${hex(a.size)} on ${placeOf(a.location)} (${a.origin}); handle references ` +
      `${a.handleRefs}, mappings ${a.mapRefs}${at.length > 0 ? `; mapped at ${at.map(hex).join(', ')}` : ''}`,
    access: (a) => (a === 3 ? 'read-write' : a === 1 ? 'read' : 'none'),
  });
}

/** A state in the words of `vendor` ('HIP', 'CUDA', 'ACL'; anything else: vmmkit's own). */
export function formatState(d: RuntimeDescription, vendor?: string): string {
  const view = vendor === undefined ? undefined : VIEWS[vendor];
  return view === undefined ? formatCoreState(d) : view.formatState(d);
}

/**
 * What a process is, for the inspection view: a front end in its vendor's
 * words (its `vendor`, unless `vendor` names another), a bare runtime in vmmkit's.
 */
export function inspect(
  process: Runtime | { readonly runtime: Runtime; readonly vendor?: string },
  vendor?: string,
): string {
  const rt = 'runtime' in process ? process.runtime : process;
  const own = 'vendor' in process ? process.vendor : undefined;
  return formatState(rt.describe(), vendor ?? own);
}

/** What `vmmkit trace --break` prints when a breakpoint fires: where, then the state there. */
export function formatBreak(context: BreakContext): string {
  const where = context.path.map((s) => `[${s.layer}] ${s.name}`).join(' > ');
  const d = context.describe();
  const state =
    d === undefined
      ? '  (no process state: the call runs outside a runtime)'
      : formatState(d, context.vendor);
  return `--- break at ${context.span.name}: ${where}\n${state}`;
}
