import { Role, TaskState, type Message, type StreamResponse } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { openPglite } from '../src/store/pglite.js';
import { checkJournalInvariants } from './support/invariants.js';
import { startParley, stopAllProcesses, type ParleyProcess } from './support/processes.js';
import { copyPgliteTemplate } from './support/template.js';

// The protocol adapters across a crash: `parley serve` on embedded storage is SIGKILLed
// while an OpenAI Responses stream and an A2A stream follow a reply, then restarted on the
// same data directory. Each client resumes with its protocol's own way back in (the
// official clients: `responses.retrieve(id, {stream, starting_after})`, A2A's
// `resubscribeTask`) and gets the rest exactly: no event twice, none missing, the whole
// reply once (docs/protocols.md).

const env = {
  // The restart need not wait for the dead process's lease (its data-dir lock proves it
  // gone); 60 words at 50 ms stream for about three seconds.
  PARLEY_LEASE_TTL_MS: '600000',
  PARLEY_DEMO_DELAY_MS: '50',
};
const config = { runtime: { poll_ms: 200, shutdown_grace_ms: 2000 } };
const words = Array.from({ length: 60 }, (_, index) => `word${index + 1}`);
const message = words.join(' ');
const expectedReply = `You said: ${message}`;

const cleanup: (() => void)[] = [];
afterEach(async () => {
  await stopAllProcesses();
  for (const clean of cleanup.splice(0)) clean();
});

function dataDirectory(): string {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-adapters-crash-'));
  copyPgliteTemplate(dataDir);
  cleanup.push(() => rmSync(dataDir, { recursive: true, force: true }));
  return dataDir;
}

async function kill(proc: ParleyProcess): Promise<void> {
  proc.kill('SIGKILL');
  expect(await proc.waitForExit()).toEqual({ code: null, signal: 'SIGKILL' });
}

/** The journal's invariants over the data directory, once no process holds it. */
async function checkDataDir(dataDir: string): Promise<void> {
  await stopAllProcesses();
  const db = await openPglite(dataDir);
  try {
    await checkJournalInvariants(db);
  } finally {
    await db.close();
  }
}

describe('protocol adapters when parley serve (PGlite) is killed mid-reply', () => {
  it('an OpenAI Responses stream resumes after its last sequence_number: every event once, the whole reply', async () => {
    const dataDir = dataDirectory();
    const first = await startParley('serve', { dataDir, env, config });
    const client = (url: string) =>
      new OpenAI({ baseURL: `${url}/openai/v1`, apiKey: 'unused', maxRetries: 0 });

    const before: { type: string; sequence_number: number }[] = [];
    let responseId = '';
    const stream = await client(first.url as string).responses.create({
      model: 'default',
      input: message,
      stream: true,
    });
    try {
      for await (const event of stream) {
        before.push(event);
        if (event.type === 'response.created') responseId = event.response.id;
        if (before.filter((seen) => seen.type === 'response.output_text.delta').length === 3) {
          await kill(first);
        }
      }
    } catch {
      // The server vanished mid-stream: the client sees a broken connection.
    }
    expect(first.exit, 'the kill must land mid-reply').not.toBeNull();
    expect(before.some((event) => event.type === 'response.completed')).toBe(false);
    const lastSeen = Math.max(...before.map((event) => event.sequence_number));

    const second = await startParley('serve', { dataDir, env, config });
    const after: { type: string; sequence_number: number; response?: unknown }[] = [];
    for await (const event of await client(second.url as string).responses.retrieve(responseId, {
      stream: true,
      starting_after: lastSeen,
    })) {
      after.push(event);
    }
    // Across both connections: every sequence number from 0 exactly once, in order.
    const sequences = [...before, ...after].map((event) => event.sequence_number);
    expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, index) => index));
    const completed = after.at(-1) as { type: string; response: { output_text?: string } };
    expect(completed.type).toBe('response.completed');
    const retrieved = await client(second.url as string).responses.retrieve(responseId);
    expect(retrieved.status).toBe('completed');
    expect(retrieved.output_text).toBe(expectedReply);
    // The killed attempt's text was withdrawn: its item ended empty, the retried text is
    // one new item whose deltas are the whole reply.
    const deltas = [...before, ...after].filter(
      (event) => event.type === 'response.output_text.delta',
    ) as unknown as { item_id: string; delta: string }[];
    const lastItem = deltas.at(-1)?.item_id;
    expect(
      deltas
        .filter((event) => event.item_id === lastItem)
        .map((event) => event.delta)
        .join(''),
    ).toBe(expectedReply);
    await checkDataDir(dataDir);
  });

  it('an A2A streaming send is resubscribed: the task as it stands, then the rest, the whole reply once', async () => {
    const dataDir = dataDirectory();
    const first = await startParley('serve', { dataDir, env, config });
    const clientAt = async (url: string): Promise<Client> =>
      new ClientFactory(
        ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
          transports: [new JsonRpcTransportFactory({})],
          cardResolver: new DefaultAgentCardResolver({}),
        }),
      ).createFromUrl(`${url}/a2a/default/.well-known/agent-card.json`, '');

    const userMessage: Message = {
      messageId: `crash-${Date.now()}`,
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [
        {
          content: { $case: 'text', value: message },
          metadata: undefined,
          filename: '',
          mediaType: '',
        },
      ],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    };
    const before: StreamResponse[] = [];
    let taskId = '';
    try {
      for await (const event of (await clientAt(first.url as string)).sendMessageStream({
        tenant: '',
        message: userMessage,
        configuration: undefined,
        metadata: undefined,
      })) {
        before.push(event);
        if (event.payload?.$case === 'task') taskId = event.payload.value.id;
        if (before.filter((seen) => seen.payload?.$case === 'artifactUpdate').length === 3) {
          await kill(first);
        }
      }
    } catch {
      // The server vanished mid-stream.
    }
    expect(first.exit, 'the kill must land mid-reply').not.toBeNull();
    expect(taskId).not.toBe('');

    const second = await startParley('serve', { dataDir, env, config });
    const client = await clientAt(second.url as string);
    const after: StreamResponse[] = [];
    for await (const event of client.resubscribeTask({ tenant: '', id: taskId })) {
      after.push(event);
    }
    expect(after[0]?.payload?.$case).toBe('task');
    const last = after.at(-1)?.payload;
    expect(last?.$case === 'statusUpdate' ? last.value.status?.state : null).toBe(
      TaskState.TASK_STATE_COMPLETED,
    );
    // What the resubscribe starts with and the chunks after it make the reply, once.
    const opening = after[0]?.payload?.$case === 'task' ? after[0].payload.value : null;
    const textOf = (parts: { content?: { $case: string; value?: unknown } }[]) =>
      parts
        .map((part) => (part.content?.$case === 'text' ? String(part.content.value) : ''))
        .join('');
    const replyId = after
      .flatMap((event) =>
        event.payload?.$case === 'artifactUpdate' ? [event.payload.value.artifact?.artifactId] : [],
      )
      .at(-1);
    const startedWith = textOf(
      opening?.artifacts.find((artifact) => artifact.artifactId === replyId)?.parts ?? [],
    );
    const chunks = after.flatMap((event) =>
      event.payload?.$case === 'artifactUpdate' &&
      event.payload.value.artifact?.artifactId === replyId
        ? [textOf(event.payload.value.artifact?.parts ?? [])]
        : [],
    );
    expect(startedWith + chunks.join('')).toBe(expectedReply);
    const task = await client.getTask({ tenant: '', id: taskId, historyLength: 0 });
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(
      task.artifacts
        .flatMap((artifact) => artifact.parts)
        .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
        .join(''),
    ).toBe(expectedReply);
    await checkDataDir(dataDir);
  });
});
