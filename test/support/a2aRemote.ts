import {
  A2A_PROTOCOL_VERSION,
  AgentCard,
  Role,
  TaskState,
  type Message,
  type Part,
  type Task,
} from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  ServerCallContext,
  UnauthenticatedUser,
  type AgentExecutor,
} from '@a2a-js/sdk/server';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A remote A2A agent built with `@a2a-js/sdk`'s own server (not Parley's), on loopback:
 * it does not dedupe message ids (every SendMessage is a new task), keeps each task
 * `working` until the test releases it, then completes it with `done: MESSAGE`. Serves
 * JSON-RPC only (no streaming), which is what the `a2a` tool kind speaks.
 */
export class A2aRemote {
  /** Every message received by SendMessage, in order (text of its first part). */
  readonly received: string[] = [];
  /** Every JSON-RPC method called, in order. */
  readonly methods: string[] = [];
  private releases: (() => void)[] = [];
  private released = false;
  private waiters: (() => void)[] = [];

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  get cardUrl(): string {
    return `${this.url}/.well-known/agent-card.json`;
  }

  static async start(): Promise<A2aRemote> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const remote = new A2aRemote(server, url);
    const card = cardOf(url);
    const handler = new JsonRpcTransportHandler(
      new DefaultRequestHandler(card, new InMemoryTaskStore(), remote.executor()),
    );
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        void (async () => {
          if (req.method === 'GET' && req.url === '/.well-known/agent-card.json') {
            res.setHeader('content-type', 'application/json');
            res.end(JSON.stringify(AgentCard.toJSON(card)));
            return;
          }
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { method: string };
          remote.methods.push(body.method);
          const context = new ServerCallContext({
            user: new UnauthenticatedUser(),
            requestedVersion: String(req.headers['a2a-version'] ?? A2A_PROTOCOL_VERSION),
          });
          const answer = await handler.handle(body, context);
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify(answer));
        })();
      });
    });
    return remote;
  }

  /** Completes every task, waiting or still to come. */
  release(): void {
    this.released = true;
    for (const release of this.releases.splice(0)) release();
  }

  /** Resolves once `count` messages have been received. */
  async waitForMessages(count: number): Promise<void> {
    while (this.received.length < count) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  async close(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private executor(): AgentExecutor {
    return {
      execute: async (request, bus) => {
        const text = textOf(request.userMessage.parts);
        const task: Task = {
          id: request.taskId,
          contextId: request.contextId,
          status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined },
          artifacts: [],
          history: [request.userMessage],
          metadata: undefined,
        };
        bus.publish(AgentEvent.task(task));
        this.received.push(text);
        for (const waiter of this.waiters.splice(0)) waiter();
        if (!this.released) await new Promise<void>((resolve) => this.releases.push(resolve));
        bus.publish(
          AgentEvent.statusUpdate({
            taskId: request.taskId,
            contextId: request.contextId,
            status: {
              state: TaskState.TASK_STATE_COMPLETED,
              message: agentMessage(`done: ${text}`, request.taskId, request.contextId),
              timestamp: new Date().toISOString(),
            },
            metadata: undefined,
          }),
        );
        bus.finished();
      },
      cancelTask: () => Promise.resolve(),
    };
  }
}

function cardOf(url: string): AgentCard {
  return {
    name: 'remote',
    description: 'A remote agent that does not dedupe message ids.',
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
    ],
    provider: undefined,
    version: '1',
    documentationUrl: undefined,
    capabilities: {
      streaming: false,
      pushNotifications: false,
      extensions: [],
      extendedAgentCard: false,
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
    iconUrl: undefined,
  };
}

function agentMessage(text: string, taskId: string, contextId: string): Message {
  return {
    messageId: `m-${taskId}`,
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [
      { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function textOf(parts: Part[]): string {
  return parts.map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');
}
