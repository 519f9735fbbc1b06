import type { Logger } from '../log.js';
import { providerCircuitOpened, providerCircuitState } from '../metrics.js';
import type { CircuitChange } from '../providers/circuit.js';
import type { Db } from '../store/db.js';
import { recordCircuit } from '../store/recordCircuit.js';

const gaugeValue = { closed: 0, open: 1, half_open: 2 } as const;

/**
 * What a process does when one of its provider circuits changes state: /metrics, the log,
 * and the catalog's row (written in the order the changes happened; a failed write is
 * logged, never thrown into the model call that caused it).
 */
export function circuitReporter(db: Db, log: Logger): (change: CircuitChange) => void {
  let written: Promise<void> = Promise.resolve();
  return (change) => {
    providerCircuitState.set({ provider: change.provider }, gaugeValue[change.state]);
    if (change.state === 'open') providerCircuitOpened.inc({ provider: change.provider });
    log[change.state === 'open' ? 'warn' : 'info'](
      { provider: change.provider, failures: change.failures },
      `provider circuit ${change.state}`,
    );
    written = written
      .then(() => recordCircuit(db, change))
      .catch((error: unknown) => log.warn({ err: error }, 'could not record a provider circuit'));
  };
}
