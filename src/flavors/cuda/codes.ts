/** The CUDA front end's error factory: VendorCodes, and each device fault it answers told to the flavour. */
import { isVmmError } from '../../core/errors.js';
import { VendorCodes } from '../common/error-table.js';

export class CudaCodes extends VendorCodes {
  /**
   * Told of every 'device-fault' a call answers, with the device whose work
   * faulted where the error names it (undefined: the real driver's 719,
   * which names none). The flavour marks the device (Note [Faulted devices]
   * in contexts.ts); until it sets this, nothing is told.
   */
  onDeviceFault: (device: number | undefined) => void = () => {};

  override code(e: unknown): number {
    if (isVmmError(e) && e.kind === 'device-fault') this.onDeviceFault(e.device);
    return super.code(e);
  }
}
