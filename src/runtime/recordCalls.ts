import type { AgentConfig } from '../config/types.js';
import { newRequestId } from '../ids.js';
import { newEvent, type NewEvent } from '../protocol/events.js';
import { readMissionDeadline } from '../store/readMissionDeadline.js';
import { saveBurst, type NewInputRequest } from '../store/saveBurst.js';
import type { BurstCall, BurstState, Lease } from '../store/types.js';
import type { Usage } from '../store/usageRows.js';
import { askUserTool } from '../tools/registry.js';
import type { RuntimeDeps } from './deps.js';
import type { StepResult } from './modelStep.js';
import { wellFormed, wellFormedJson } from './text.js';
import { approvalDeadline, policyOf, type ApprovalDeadline } from './toolPolicy.js';
import { planNudges } from './approvalNudges.js';
import { argumentsDigest } from './argumentsDigest.js';
import { isHumanOnly } from '../tools/humanOnly.js';

/**
 * Records a model step that proposed tool calls: `tool_call` events, and per the agent's
 * policy a request for each call that needs a person (`input_required`), or `denied`.
 * `usage` ends with the step's own call, which is billed the calls that run or wait
 * (`tool_calls`). `room`: how many calls a tool-call budget lets the step run (null: no
 * such budget); the calls past it are denied with `budget_exhausted`, in the order the
 * model asked for them. A call of one of `clientTools` (the burst's clients run them) waits
 * for the client's output as a `client_tool` request, which `user` (whose client declared
 * it) answers.
 */
export async function recordCalls(
  deps: RuntimeDeps,
  lease: Lease,
  agent: AgentConfig,
  burst: BurstState,
  result: StepResult,
  usage: Usage[],
  tail: NewEvent[],
  {
    room = null,
    clientTools = new Set(),
    user,
  }: { room?: number | null; clientTools?: ReadonlySet<string>; user?: string } = {},
): Promise<void> {
  const requests: NewInputRequest[] = [];
  // A turn of a mission's execution: the mission's deadline keys apply to its approvals.
  const needsApproval = result.calls.some(
    (proposed) =>
      proposed.tool !== askUserTool &&
      !clientTools.has(proposed.tool) &&
      policyOf(agent, deps.tools, proposed.tool) === 'approve',
  );
  const mission = needsApproval
    ? await readMissionDeadline(deps.db, lease.sessionId, burst.lead)
    : null;
  let counted = 0;
  const calls: BurstCall[] = result.calls.map((proposed) => {
    const client = clientTools.has(proposed.tool);
    const policy = client ? 'allow' : policyOf(agent, deps.tools, proposed.tool);
    const call: BurstCall = {
      ...proposed,
      arguments: wellFormedJson(proposed.arguments),
      policy,
      status: 'pending',
    };
    if (policy !== 'deny' && room !== null && counted >= room) {
      call.status = 'denied';
      call.error = {
        code: 'budget_exhausted',
        message: `no tool call is left in a tool-call budget for ${proposed.tool}; nothing ran`,
      };
      return call;
    }
    if (policy !== 'deny') counted += 1;
    if (policy === 'deny') {
      call.status = 'denied';
      // A name no tool has (the model made it up) is not found; a tool this agent is not
      // given is not allowed.
      call.error =
        deps.tools.has(proposed.tool) || proposed.tool === askUserTool
          ? {
              code: 'denied',
              message: `the tool ${proposed.tool} is not allowed here; nothing ran`,
            }
          : { code: 'not_found', message: `there is no tool named ${proposed.tool}; nothing ran` };
    } else if (client) {
      // The client runs it: the call waits for its output as long as a question would.
      call.status = 'awaiting';
      call.kind = 'client_tool';
      call.request_id = newRequestId();
      const now = Date.now();
      requests.push({
        request_id: call.request_id,
        call_id: call.call_id,
        kind: call.kind,
        tool: proposed.tool,
        arguments: call.arguments,
        prompt: null,
        deadline_at:
          agent.questionTimeoutMs === null
            ? null
            : new Date(now + agent.questionTimeoutMs).toISOString(),
        on_timeout: 'reject',
        arguments_digest: null,
        human_only: false,
        nudges: [],
        ...(user === undefined ? {} : { user_name: user }),
      });
    } else if (proposed.tool === askUserTool || policy === 'approve') {
      const question = proposed.tool === askUserTool;
      call.status = 'awaiting';
      call.kind = question ? 'question' : 'approval';
      call.request_id = newRequestId();
      const asked = (call.arguments as { question?: unknown } | null)?.question;
      // A question ends at the agent's `question_timeout_ms` (unanswered: the model is
      // told so); it neither escalates nor reminds.
      const deadline: ApprovalDeadline = question
        ? {
            timeoutMs: agent.questionTimeoutMs,
            onTimeout: 'reject',
            escalate: [],
            remindBeforeMs: null,
          }
        : approvalDeadline(agent, proposed.tool, mission);
      const now = Date.now();
      requests.push({
        request_id: call.request_id,
        call_id: call.call_id,
        kind: call.kind,
        tool: question ? null : proposed.tool,
        arguments: call.arguments,
        prompt: question && typeof asked === 'string' ? asked : null,
        deadline_at:
          deadline.timeoutMs === null ? null : new Date(now + deadline.timeoutMs).toISOString(),
        on_timeout: deadline.onTimeout,
        arguments_digest: question ? null : argumentsDigest(call.arguments),
        human_only: !question && isHumanOnly(agent, proposed.tool, deps.config.tools.humanOnly),
        nudges: planNudges(now, deadline),
      });
    }
    return call;
  });
  const own = usage.at(-1);
  if (own && counted > 0) usage[usage.length - 1] = { ...own, tool_calls: counted };
  burst.steps.push({ kind: 'model', text: wellFormed(result.text), calls });
  await saveBurst(deps.db, lease, burst, {
    events: [
      ...tail,
      ...usage.map((call) => newEvent('usage', burst.lead, { ...call })),
      ...calls.map((call) =>
        newEvent('tool_call', burst.lead, {
          call_id: call.call_id,
          tool: call.tool,
          arguments: call.arguments,
        }),
      ),
    ],
    requests,
    usage,
    partialOutput: tail.length > 0,
  });
}
