import { isDeepStrictEqual } from 'node:util';
import type { Report } from './tenancy.js';

/** The most JSON a tenant's `state.schema` may have. */
export const tenantStateSchemaBytes = 16_384;

/**
 * A tenant's `state.schema` is compiled and run in processes every tenant shares: it is
 * bounded in size (400), and its regular expressions (`pattern`, `patternProperties`) are
 * the operator's alone (403), since one badly written pattern can hold a worker for
 * minutes on a short string. The operator's own schema of the same definition is allowed
 * as it is.
 */
export function checkStateSchema(report: Report, schema: unknown, operators: unknown): void {
  if (operators !== undefined && isDeepStrictEqual(schema, operators)) return;
  if (JSON.stringify(schema).length > tenantStateSchemaBytes) {
    report(
      ['state', 'schema'],
      `at most ${tenantStateSchemaBytes} bytes of JSON Schema in a tenant's definition`,
      false,
    );
    return;
  }
  // Under these keywords the keys are names (a property called `pattern`), not keywords.
  const named = new Set(['properties', '$defs', 'definitions', 'dependentSchemas']);
  const walk = (node: unknown, path: (string | number)[]): void => {
    if (node === null || typeof node !== 'object') return;
    const names = named.has(String(path.at(-1)));
    for (const [key, value] of Object.entries(node)) {
      if (!names && (key === 'pattern' || key === 'patternProperties')) {
        report(
          ['state', 'schema', ...path, key],
          `only the operator sets regular expressions in a state schema (${key})`,
          true,
        );
        continue;
      }
      walk(value, [...path, key]);
    }
  };
  walk(schema, []);
}
