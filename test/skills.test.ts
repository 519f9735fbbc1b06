import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileConfig } from '../src/config/load.js';
import { builtInTools, resolveAgentTools, runTool } from '../src/tools/registry.js';
import {
  checkAgentSkills,
  loadSkillCatalog,
  skillsPrompt,
  type SkillCatalog,
} from '../src/tools/skills/catalog.js';

let dir: string;
let catalog: SkillCatalog;

function skill(name: string, text: string, files: Record<string, string> = {}): void {
  mkdirSync(join(dir, name), { recursive: true });
  writeFileSync(join(dir, name, 'SKILL.md'), text);
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, file, '..'), { recursive: true });
    writeFileSync(join(dir, name, file), content);
  }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'parley-skills-'));
  skill(
    'refunds',
    '---\nname: refunds\ndescription: How to process a refund request\n---\n# Refunds\n\n1. Check the order date.\n2. Refund within 30 days.\n',
    { 'templates/email.txt': 'Dear customer, your refund is on its way.' },
  );
  skill(
    'shipping',
    '---\nname: shipping\ndescription: Shipping zones and delays\n---\nZone A ships in 2 days.',
  );
  skill('nameless', '---\ndescription: no name\n---\nbody');
  skill('mismatch', '---\nname: other\ndescription: d\n---\nbody');
  skill('empty', '---\nname: empty\ndescription: d\n---\n');
  skill('plain', 'no front matter at all');
  writeFileSync(join(dir, 'secret.txt'), 'outside any skill');
  symlinkSync(join(dir, 'secret.txt'), join(dir, 'refunds', 'escape.txt'));
  catalog = loadSkillCatalog(dir);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the skill catalog', () => {
  it('reads valid skills and records why the others are broken', () => {
    expect([...catalog.skills.keys()].sort()).toEqual(['refunds', 'shipping']);
    expect(catalog.skills.get('refunds')).toMatchObject({
      description: 'How to process a refund request',
      instructions: '# Refunds\n\n1. Check the order date.\n2. Refund within 30 days.',
      files: ['templates/email.txt'], // the symlink is not offered
    });
    expect(Object.fromEntries(catalog.broken)).toEqual({
      nameless: 'front matter name must be "nameless", the folder\'s name',
      mismatch: 'front matter name must be "mismatch", the folder\'s name',
      empty: 'SKILL.md has no instructions below its front matter',
      plain: 'SKILL.md must start with front matter between --- lines',
    });
    expect(loadSkillCatalog(join(dir, 'missing')).skills.size).toBe(0);
  });

  it('names every agent skill that is missing or broken, for the start-up error', () => {
    expect(
      checkAgentSkills(
        catalog,
        { a: { skills: ['refunds', 'plain', 'nope'] }, b: { skills: [] } },
        dir,
      ),
    ).toEqual([
      'agents.a.skills.1: skill "plain": SKILL.md must start with front matter between --- lines',
      `agents.a.skills.2: skill "nope": no folder nope with a SKILL.md in ${dir}`,
    ]);
  });

  it("tells the model names and descriptions only, for the agent's skills", () => {
    const prompt = skillsPrompt(catalog, ['refunds']);
    expect(prompt).toContain('- refunds: How to process a refund request');
    expect(prompt).not.toContain('shipping');
    expect(prompt).not.toContain('Refund within 30 days');
    expect(skillsPrompt(catalog, [])).toBe('');
  });
});

describe('load_skill', () => {
  const config = compileConfig({ agents: { a: { skills: ['refunds'] } } });
  // Built when a test runs: the catalog is read in beforeAll.
  const loadSkill = () => {
    const resolved = resolveAgentTools(config.agents.a!, builtInTools({ skills: catalog }));
    return resolved.find((tool) => tool.name === 'load_skill')!;
  };
  const call = (args: unknown) => {
    const entry = loadSkill();
    return runTool(entry.tool!, args, {
      signal: new AbortController().signal,
      timeoutMs: entry.timeoutMs,
      options: entry.options,
    });
  };

  it('is given to an agent with skills, as source skill, policy allow', () => {
    expect(loadSkill()).toMatchObject({
      source: 'skill',
      policy: 'allow',
      options: { skills: ['refunds'] },
    });
    const none = compileConfig({ agents: { b: { tools: { clock: 'allow' } } } });
    const tools = builtInTools({ skills: catalog });
    expect(resolveAgentTools(none.agents.b!, tools).map((tool) => tool.name)).toEqual(['clock']);
  });

  it("loads a listed skill's instructions on demand, and its files", async () => {
    expect(await call({ name: 'refunds' })).toMatchObject({
      ok: true,
      result: { name: 'refunds', instructions: expect.stringContaining('Refund within 30 days') },
    });
    expect(await call({ name: 'refunds', file: 'templates/email.txt' })).toMatchObject({
      ok: true,
      result: { text: 'Dear customer, your refund is on its way.' },
    });
  });

  it('refuses an unlisted or unknown skill, and files outside the skill', async () => {
    for (const name of ['shipping', 'nope', 'plain']) {
      expect(await call({ name })).toMatchObject({ ok: false, error: { code: 'not_allowed' } });
    }
    for (const file of ['../shipping/SKILL.md', 'escape.txt', '/etc/passwd', 'templates']) {
      expect(await call({ name: 'refunds', file })).toMatchObject({
        ok: false,
        error: { code: 'not_found' },
      });
    }
  });
});
