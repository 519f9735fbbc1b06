import type { AgentConfig, Config } from '../config/types.js';
import type { CatalogModel } from '../store/listModels.js';

/**
 * The start-up check of agents against the catalog: an agent whose model (or gate model)
 * the catalog does not know, or that lacks a capability its configuration needs. Needs:
 * `tools` when the agent offers any tool (or for a gate, which answers through a forced
 * tool call); `vision` when the agent says `vision: always`. A capability nobody reported
 * (null) is not a problem: the catalog cannot say. Pure: the caller logs, or fails with
 * `catalog.strict`.
 */
export interface CatalogProblem {
  agent: string;
  model: string;
  problem: 'unknown_model' | 'removed_model' | 'no_tools' | 'no_vision';
  message: string;
}

export function checkAgentModels(config: Config, models: CatalogModel[]): CatalogProblem[] {
  const byName = new Map(models.map((model) => [`${model.provider}/${model.model_id}`, model]));
  const problems: CatalogProblem[] = [];
  for (const agent of Object.values(config.agents)) {
    const uses: { role: string; model: AgentConfig['model']; tools: boolean; vision: boolean }[] = [
      {
        role: 'model',
        model: agent.model,
        tools: Object.values(agent.tools).some((tool) => tool.policy !== 'deny'),
        vision: agent.vision === 'always',
      },
    ];
    if (agent.gate)
      uses.push({ role: 'gate model', model: agent.gate.model, tools: true, vision: false });
    for (const use of uses) {
      const name = `${use.model.provider}/${use.model.modelId}`;
      const model = byName.get(name);
      const report = (problem: CatalogProblem['problem'], why: string) =>
        problems.push({
          agent: agent.name,
          model: name,
          problem,
          message: `agent "${agent.name}": its ${use.role} ${name} ${why}`,
        });
      if (!model) report('unknown_model', 'is not in the model catalog');
      else if (model.status === 'removed')
        report('removed_model', 'is no longer listed by its provider');
      else {
        if (use.tools && model.tools === false)
          report('no_tools', 'does not support tools, which the agent uses');
        if (use.vision && model.vision === false)
          report('no_vision', 'cannot see images, and the agent says vision: always');
      }
    }
  }
  return problems;
}
