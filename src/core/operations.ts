import { BACKEND_EVENT_OPERATIONS, BACKEND_SHARING_OPERATIONS } from '../backend/backend.js';
import type { MethodsListed } from '../util/methods-listed.js';
import type { Runtime } from './runtime.js';

/**
 * The operations that get a trace span when a tracer is given: every method
 * that changes state or moves bytes. Those the Runtime has under the
 * Backend's names (sharing, events) spread the Backend's lists. The type
 * below fails to compile when a public method is neither listed here nor
 * named a query.
 */
export const TRACED_OPERATIONS = [
  'reserve',
  'free',
  'create',
  'release',
  'retain',
  'map',
  'unmap',
  'setAccess',
  'hostRead',
  'hostWrite',
  ...BACKEND_SHARING_OPERATIONS,
  'exportMalloc',
  'importMalloc',
  'write',
  'read',
  'copy',
  'fill',
  'malloc',
  'mfree',
  'createStream',
  'destroyStream',
  'synchronizeStream',
  'synchronize',
  ...BACKEND_EVENT_OPERATIONS,
  'beginCapture',
  'endCapture',
  'invalidateCapture',
  'instantiateGraph',
  'launchGraph',
  'destroyGraph',
  'destroyGraphExec',
  'resetDevice',
  'createContext',
  'destroyContext',
] as const satisfies readonly (keyof Runtime)[];

/** Methods that only read state: not traced. */
type RuntimeQueries =
  | 'device'
  | 'isDevice'
  | 'checkDevice'
  | 'memoryInfo'
  | 'reservationAt'
  | 'reservationContaining'
  | 'mappingAt'
  | 'mappingsIn'
  | 'nextMapping'
  | 'wholeMappings'
  | 'allocation'
  | 'getAccess'
  | 'stats'
  | 'reservations'
  | 'mappings'
  | 'hasStream'
  | 'streamDevice'
  | 'eventDevice'
  | 'eventDestroyed'
  | 'eventCount'
  | 'describe'
  | 'quietly'
  | 'dispose';

// Compile-time check: every method of Runtime is traced or a query.
const tracedOperationsAreComplete: MethodsListed<
  Runtime,
  (typeof TRACED_OPERATIONS)[number] | RuntimeQueries
> = true;
void tracedOperationsAreComplete;
