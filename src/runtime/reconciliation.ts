import type { BurstCall } from '../store/types.js';

/**
 * A call whose result was lost in a crash, confirmed to have taken effect (by a person's
 * answer to its `reconciliation` request, or by the tool's `reconcile`): it is done, and
 * the model reads that it happened, that its result is unknown, and not to run it again.
 */
export function tookEffect(call: BurstCall, confirmedBy: string): void {
  call.status = 'done';
  delete call.error;
  call.result = {
    took_effect: true,
    result: null,
    confirmed_by: confirmedBy,
    message: `This call took effect (confirmed by ${confirmedBy}); its result is unknown. Do not run it again.`,
  };
}
