import type { Config } from '../config/types.js';
import type { Logger } from '../log.js';
import { listModels } from '../store/listModels.js';
import { checkAgentModels, type CatalogProblem } from './check.js';
import { syncCatalog, type CatalogDeps } from './sync.js';

export class CatalogCheckError extends Error {
  constructor(readonly problems: CatalogProblem[]) {
    super(
      `catalog.strict: ${problems.length} agent model problem(s):\n${problems.map((problem) => `  ${problem.message}`).join('\n')}`,
    );
    this.name = 'CatalogCheckError';
  }
}

/**
 * Start-up: refresh the catalog from every provider, then check each agent's models
 * against it. Problems are logged as warnings, or stop start-up with `catalog.strict`.
 * A provider that cannot be reached is logged and its previous rows are used.
 */
export async function refreshAndCheckCatalog(
  deps: CatalogDeps & { config: Config; log: Logger },
): Promise<CatalogProblem[]> {
  await syncCatalog(deps);
  const problems = checkAgentModels(
    deps.config,
    await listModels(deps.db, { includeRemoved: true }),
  );
  if (problems.length > 0 && deps.config.catalog.strict) throw new CatalogCheckError(problems);
  for (const problem of problems) {
    deps.log.warn(
      { agent: problem.agent, model: problem.model, problem: problem.problem },
      problem.message,
    );
  }
  return problems;
}
