import { lstatSync, readFileSync, realpathSync } from 'node:fs';
import { join, sep } from 'node:path';
import { ToolError, type Tool } from '../types.js';
import type { SkillCatalog } from './catalog.js';

/** The options the registry gives load_skill for one agent: the skills it may load. */
export interface LoadSkillOptions {
  skills: string[];
}

const MAX_FILE_BYTES = 256 * 1024;

function readSkillFile(dir: string, file: string): string {
  const path = join(dir, file);
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    throw new ToolError('not_found', `the skill has no file ${file}`);
  }
  // Resolved, then checked: a `..` or a symlink must not lead out of the skill's folder.
  if (!real.startsWith(realpathSync(dir) + sep) || !lstatSync(real).isFile()) {
    throw new ToolError('not_found', `the skill has no file ${file}`);
  }
  if (lstatSync(real).size > MAX_FILE_BYTES) {
    throw new ToolError('too_large', `${file} is larger than ${MAX_FILE_BYTES} bytes`);
  }
  return readFileSync(real, 'utf8');
}

/**
 * `load_skill {name, file?}`: the instructions of one of the agent's skills (and the
 * list of its other files), or with `file` the text of one of those files. A skill the
 * agent does not list, or that does not exist, is refused as a tool error.
 */
export function createLoadSkill(catalog: SkillCatalog): Tool {
  return {
    name: 'load_skill',
    source: 'skill',
    description:
      'Loads the instructions of one of your skills by name (see the list in your ' +
      'instructions). With file, returns one of the files the skill ships instead.',
    inputSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 64 },
        file: { type: 'string', minLength: 1, maxLength: 512 },
      },
      required: ['name'],
      additionalProperties: false,
    },
    async execute(args, context) {
      const { name, file } = args as { name: string; file?: string };
      const allowed = (context.options as Partial<LoadSkillOptions>).skills ?? [];
      const skill = allowed.includes(name) ? catalog.skills.get(name) : undefined;
      if (!skill) {
        throw new ToolError(
          'not_allowed',
          `no skill named ${JSON.stringify(name.slice(0, 64))} is available to this agent` +
            (allowed.length > 0 ? ` (available: ${allowed.join(', ')})` : ''),
        );
      }
      if (file !== undefined) {
        return { name: skill.name, file, text: readSkillFile(skill.dir, file) };
      }
      return { name: skill.name, instructions: skill.instructions, files: skill.files };
    },
  };
}
