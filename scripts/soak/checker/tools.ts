import type { Ledger } from '../ledger.js';
import { where, type Findings, type Journal } from './findings.js';
import type { EventRow } from './snapshot.js';

/**
 * Tools and the people who approve them:
 * - each call is proposed once and has at most one result (a result is journaled when the
 *   tool ran, or was recorded as not run; twice would mean it ran twice);
 * - a result comes after its call, in the same session;
 * - each request is asked once and resolved at most once (answers are single-use);
 * - a rejected call never ran (its result is not a success).
 */
export function checkTools(journal: Journal, findings: Findings): void {
  const calls = new Map<string, EventRow[]>();
  const results = new Map<string, EventRow[]>();
  const asked = new Map<string, EventRow[]>();
  const resolved = new Map<string, EventRow[]>();
  const push = (map: Map<string, EventRow[]>, key: unknown, event: EventRow) => {
    if (typeof key !== 'string') return;
    let list = map.get(key);
    if (!list) map.set(key, (list = []));
    list.push(event);
  };
  for (const event of journal.snapshot.events) {
    if (event.type === 'tool_call') push(calls, event.payload?.call_id, event);
    if (event.type === 'tool_result') push(results, event.payload?.call_id, event);
    if (event.type === 'input_required') push(asked, event.payload?.request_id, event);
    if (event.type === 'input_resolved') push(resolved, event.payload?.request_id, event);
  }
  const once = (map: Map<string, EventRow[]>, what: string, check: string) => {
    for (const [key, events] of map) {
      if (events.length > 1) {
        findings.add(
          'doubled',
          check,
          `${what} ${key} ${events.length} times: ${events.map(where).join(', ')}`,
        );
      }
    }
  };
  once(calls, 'call proposed', 'call proposed once');
  once(results, 'tool result for call', 'no tool run twice');
  once(asked, 'input requested', 'request asked once');
  once(resolved, 'request resolved', 'answer used once');

  for (const [callId, events] of results) {
    const result = events[0] as EventRow;
    const call = calls.get(callId)?.[0];
    if (!call || call.session_id !== result.session_id || call.sequence > result.sequence) {
      findings.add(
        'order',
        'result after its call',
        `${where(result)} for ${callId} has no earlier tool_call in its session`,
      );
    }
  }

  // A request ended by its deadline: resolved once, by the timer, with the safe default.
  for (const request of journal.snapshot.requests) {
    if (request.state !== 'timeout') continue;
    const resolution = resolved.get(request.request_id)?.[0];
    const payload = resolution?.payload;
    if (
      !resolution ||
      payload?.state !== 'timeout' ||
      payload?.actor?.user !== 'system:timeout' ||
      payload?.approved !== false ||
      request.approved !== false
    ) {
      findings.add(
        'mismatch',
        'deadline ends a request once, rejected',
        `request ${request.request_id} is timeout/${request.approved} but journaled ${resolution ? JSON.stringify(payload) : 'nowhere'}`,
      );
    }
  }

  // A client tool's call nobody answered in time fails with client_tool_timeout.
  for (const request of journal.snapshot.requests) {
    if (request.kind !== 'client_tool' || request.state !== 'timeout') continue;
    const result = results.get(request.call_id)?.[0];
    if (result && result.payload?.error?.code !== 'client_tool_timeout') {
      findings.add(
        'mismatch',
        "a client tool's deadline fails its call",
        `${where(result)}: call ${request.call_id} timed out but its result is ${JSON.stringify(result.payload)}`,
      );
    }
  }

  for (const request of journal.snapshot.requests) {
    if (request.kind !== 'approval' || request.approved !== false) continue;
    const result = results.get(request.call_id)?.[0];
    if (result?.payload?.ok === true) {
      findings.add(
        'mismatch',
        'rejected never runs',
        `${where(result)}: call ${request.call_id} ran although its request ${request.request_id} was rejected`,
      );
    }
  }
}

/**
 * What people were told: an answer acknowledged with 200 is the journaled one, and an
 * approval acknowledged with 200 is never dropped (its call is not recorded as
 * superseded, and a turn that ends `done` ran or recorded it); a cancel answered
 * `cancelled` ends its turn as cancelled, one answered `too_late` found it ended as it
 * ends in the journal.
 */
export function checkPromises(journal: Journal, ledger: Ledger, findings: Findings): void {
  const requests = new Map(
    journal.snapshot.requests.map((request) => [request.request_id, request]),
  );
  const resultOf = new Map<string, EventRow>();
  const resolution = new Map<string, EventRow>();
  for (const event of journal.snapshot.events) {
    if (event.type === 'tool_result') resultOf.set(String(event.payload?.call_id), event);
    if (event.type === 'input_resolved') resolution.set(String(event.payload?.request_id), event);
  }
  for (const answer of ledger.answers) {
    const request = requests.get(answer.requestId);
    const resolved = resolution.get(answer.requestId);
    if (
      !request ||
      request.state !== 'answered' ||
      request.approved !== answer.approved ||
      resolved?.payload?.approved !== answer.approved
    ) {
      findings.add(
        'lost',
        'acknowledged answer kept',
        `request ${answer.requestId} answered ${answer.approved} (200) is ${request ? `${request.state}/${request.approved}` : 'missing'}, journaled ${resolved ? JSON.stringify(resolved.payload?.approved) : 'nowhere'}`,
      );
      continue;
    }
    if (request.kind === 'client_tool' && answer.output !== undefined) {
      // The client's output is its call's result, once the turn went on.
      const result = resultOf.get(request.call_id);
      if (
        result
          ? result.payload?.result !== answer.output
          : journal.terminalOf(request.turn_id)?.type === 'done'
      ) {
        findings.add(
          'lost',
          "a client tool's acknowledged output is its result",
          `request ${answer.requestId}: output "${answer.output}" (200), ${result ? `${where(result)} says ${JSON.stringify(result.payload?.result)}` : `its turn ${request.turn_id} is done without a result`}`,
        );
      }
      continue;
    }
    if (!answer.approved || request.kind !== 'approval') continue;
    const result = resultOf.get(request.call_id);
    const code = result?.payload?.error?.code;
    if (code === 'superseded' || code === 'rejected') {
      findings.add(
        'lost',
        'acknowledged approval runs',
        `request ${answer.requestId} was approved (200) but ${where(result as EventRow)} says ${code}`,
      );
    } else if (!result && journal.terminalOf(request.turn_id)?.type === 'done') {
      findings.add(
        'lost',
        'acknowledged approval runs',
        `request ${answer.requestId} was approved (200), its turn ${request.turn_id} is done, and call ${request.call_id} has no result`,
      );
    }
  }

  for (const cancel of ledger.cancels) {
    const cancelled =
      cancel.result === 'cancelled' ||
      (cancel.result === 'duplicate' &&
        (cancel.state === 'cancelled' || cancel.state === 'cancelling'));
    const terminal = journal.terminalOf(cancel.turnId);
    if (!terminal) continue; // unfinished or doubled: counted by the journal checks
    if (cancelled && terminal.type !== 'cancelled') {
      findings.add(
        'mismatch',
        'cancel honoured',
        `cancel ${cancel.commandId} answered ${cancel.result}/${cancel.state} but ${where(terminal)} ended ${cancel.turnId}`,
      );
    }
    if (!cancelled && terminal.type !== cancel.state) {
      findings.add(
        'mismatch',
        'too late means already ended',
        `cancel ${cancel.commandId} answered ${cancel.result}/${cancel.state} but ${where(terminal)} ended ${cancel.turnId}`,
      );
    }
  }
  for (const command of journal.snapshot.commands) {
    const terminal = journal.terminalOf(command.turn_id);
    if (command.result === 'cancelled' && terminal && terminal.type !== 'cancelled') {
      findings.add(
        'mismatch',
        'cancel honoured',
        `command ${command.command_id} recorded cancelled but ${where(terminal)} ended ${command.turn_id}`,
      );
    }
  }
}
