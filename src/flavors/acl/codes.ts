/** ACL's error factory: the vendor's codes, and the message each failure leaves for aclGetRecentErrMsg. */
import { isVmmError } from '../../core/errors.js';
import { show } from '../common/args.js';
import { VendorCodes } from '../common/error-table.js';
import * as C from './constants.js';

/**
 * Every refusal of an ACL call says why: a check answers through bad(code,
 * reason), core's failures through code(e) (the VmmError's message), and
 * the call's wrapper (answered) turns a failing answer into the process's
 * recent message, which aclGetRecentErrMsg reads and clears (ACL keeps it
 * until it is read; a success leaves it alone). Per process, never module
 * state.
 */
export class AclCodes extends VendorCodes {
  /** Why the current call failed, when a check or core said so. */
  #reason: string | undefined;
  /** The failure aclGetRecentErrMsg reports (and clears). */
  #recent: string | null = null;

  /** Refuse with `code`, remembering why. */
  bad(code: number, reason: string): number {
    this.#reason = reason;
    return code;
  }

  /** An out box that a Proxy refused after it passed isBox (Note [Untrusted arguments]). */
  unwritable(): number {
    return this.bad(C.ACL_ERROR_INVALID_PARAM, 'an out-parameter cannot be written');
  }

  /** VendorCodes' answer, with the reason aclGetRecentErrMsg reports. */
  override code(e: unknown): number {
    const code = super.code(e);
    this.#reason = isVmmError(e) ? e.message : `internal error: ${e instanceof Error ? e.message : show(e)}`;
    return code;
  }

  /** A call starts: no reason yet. */
  begin(): void {
    this.#reason = undefined;
  }

  /** A call of `name` answered `result`: a failure becomes the recent message. */
  answered(name: string, result: unknown): void {
    if (typeof result !== 'number' || result === C.ACL_SUCCESS) return;
    const codeName = C.ACL_ERROR_NAMES.get(result) ?? 'aclError';
    this.#recent = `${name} failed: ${codeName} (${result})${this.#reason ? `: ${this.#reason}` : ''}`;
  }

  /** The recent message, cleared by reading; null when there is none. */
  takeRecent(): string | null {
    const msg = this.#recent;
    this.#recent = null;
    return msg;
  }
}
