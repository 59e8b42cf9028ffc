/** What HIP keeps per calling thread (one thread per process here): the current device and the last error. */
import * as C from './constants.js';

/**
 * Note [HIP last error]: HIP keeps, per thread, the last error any API call
 * returned; hipGetLastError reads and clears it, hipPeekAtLastError reads
 * it, and a successful call leaves it alone. Each call of a HipFlavor is
 * wrapped to record a failing answer (watchAnswers).
 */
export class HipThread {
  /** The current device (hipSetDevice): where calls that name none act. */
  device = 0;
  /** The last failure a call answered (the Note). */
  lastError: number = C.hipSuccess;

  /** Keep a call's answer if it is a failure. */
  answered(result: unknown): void {
    if (typeof result === 'number' && result !== C.hipSuccess) this.lastError = result;
  }
}
