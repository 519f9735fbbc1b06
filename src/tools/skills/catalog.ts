import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse as parseYaml } from 'yaml';

/** One skill: a folder of `skills_dir` with a SKILL.md, read once at start. */
export interface Skill {
  name: string;
  description: string;
  /** SKILL.md below its front matter. */
  instructions: string;
  dir: string;
  /** Other files of the folder, relative paths, for `load_skill {name, file}`. */
  files: string[];
}

export interface SkillCatalog {
  skills: Map<string, Skill>;
  /** Folders that hold no usable skill, with the reason (an agent listing one fails start). */
  broken: Map<string, string>;
}

export const skillNamePattern = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
const MAX_FILES = 200;

function listFiles(dir: string, root = dir, found: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (found.length >= MAX_FILES) break;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) listFiles(path, root, found);
    else if (entry.isFile() && !(dir === root && entry.name === 'SKILL.md')) {
      found.push(relative(root, path).split('\\').join('/'));
    }
  }
  return found.sort();
}

/** Splits `---\nfront matter\n---\nbody`; throws a message for the start-up error. */
function parseSkillFile(text: string): { front: Record<string, unknown>; body: string } {
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text.replace(/^\uFEFF/, ''));
  if (!match) throw new Error('SKILL.md must start with front matter between --- lines');
  const front: unknown = parseYaml(match[1] as string);
  if (front === null || typeof front !== 'object' || Array.isArray(front)) {
    throw new Error('the front matter must be a mapping (name, description)');
  }
  return { front: front as Record<string, unknown>, body: (match[2] as string).trim() };
}

function readSkill(folder: string, dir: string): Skill {
  const file = join(dir, 'SKILL.md');
  if (!existsSync(file)) throw new Error('no SKILL.md');
  const { front, body } = parseSkillFile(readFileSync(file, 'utf8'));
  const { name, description } = front;
  if (typeof name !== 'string' || name !== folder) {
    throw new Error(`front matter name must be "${folder}", the folder's name`);
  }
  if (typeof description !== 'string' || description.trim() === '') {
    throw new Error('front matter needs a description');
  }
  if (description.length > 1024) throw new Error('description: at most 1024 characters');
  if (body === '') throw new Error('SKILL.md has no instructions below its front matter');
  return { name, description: description.trim(), instructions: body, dir, files: listFiles(dir) };
}

/**
 * Reads every skill of `skillsDir` (one folder each). A missing directory is an empty
 * catalog; a folder that does not hold a valid skill is recorded as broken, not fatal.
 */
export function loadSkillCatalog(skillsDir: string): SkillCatalog {
  const catalog: SkillCatalog = { skills: new Map(), broken: new Map() };
  if (!existsSync(skillsDir) || !statSync(skillsDir).isDirectory()) return catalog;
  for (const entry of readdirSync(skillsDir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    if (!skillNamePattern.test(entry.name)) {
      catalog.broken.set(entry.name, 'a skill folder name is letters, digits, _ and - only');
      continue;
    }
    try {
      catalog.skills.set(entry.name, readSkill(entry.name, join(skillsDir, entry.name)));
    } catch (error) {
      catalog.broken.set(entry.name, (error as Error).message);
    }
  }
  return catalog;
}

/** Start-up check: every skill an agent lists exists and is valid. Returns the problems. */
export function checkAgentSkills(
  catalog: SkillCatalog,
  agents: Record<string, { skills: string[] }>,
  skillsDir: string,
): string[] {
  const problems: string[] = [];
  for (const [agent, { skills }] of Object.entries(agents)) {
    skills.forEach((name, index) => {
      if (catalog.skills.has(name)) return;
      const why = catalog.broken.get(name) ?? `no folder ${name} with a SKILL.md in ${skillsDir}`;
      problems.push(`agents.${agent}.skills.${index}: skill "${name}": ${why}`);
    });
  }
  return problems;
}

/**
 * What the model is told about the skills it may load (for the system prompt): each one's
 * name and description, never its instructions — those enter the context only when the
 * model loads the skill. Empty when the agent has no skills.
 */
export function skillsPrompt(catalog: SkillCatalog, agentSkills: readonly string[]): string {
  const lines = agentSkills.flatMap((name) => {
    const skill = catalog.skills.get(name);
    return skill ? [`- ${skill.name}: ${skill.description}`] : [];
  });
  if (lines.length === 0) return '';
  return [
    'Skills you can load with the load_skill tool when a request needs one (name: what it is for):',
    ...lines,
  ].join('\n');
}
