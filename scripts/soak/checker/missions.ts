import { fireTimesBetween, parseCron } from '../../../src/missions/cron.js';
import { endedStatuses } from '../missions.js';
import type { MissionLedger } from '../missionLedger.js';
import type { Findings, Journal } from './findings.js';
import type { EventRow } from './snapshot.js';
import type { ExecutionRow, MissionSnapshot } from './missionSnapshot.js';

/**
 * Executions (docs/missions.md) against their journal and what the mission clients were
 * told:
 * - `execution acknowledged` (lost): every execution answered 202, and each fan-out
 *   thread of it, is in the database;
 * - `execution ended` (unfinished): every execution has ended (the soak stops its
 *   schedules before the drain, which waits for every execution);
 * - `execution end exactly once` (lost / doubled / mismatch): an ended execution has one
 *   `execution_status` event with an end status, in its own session, saying the row's
 *   status; nothing is announced for it after that (order);
 * - `iterations once, in order` (order / lost / doubled): the iteration numbers its events
 *   announce never go back, each iteration 1..N of the row starts once (a delay's wake,
 *   journaled as the event that moves the iteration on), and no `exec.<id>.<n>` turn
 *   exists beyond the row's iteration (a wake applied twice would admit one);
 * - `fan-out` (mismatch): a parent ends `success` exactly when every thread did;
 * - `command acknowledged` (lost / mismatch): a cancel or unblock answered 200 is recorded
 *   with the result the client was first told; a cancel answered `cancelled` ends the
 *   execution `cancelled`; an unblock answered `unblocked` reaches the next iteration's
 *   prompt exactly once (its note).
 */
export function checkExecutions(
  journal: Journal,
  snapshot: MissionSnapshot,
  ledger: MissionLedger,
  findings: Findings,
): void {
  const byId = new Map(snapshot.executions.map((row) => [row.execution_id, row]));
  const statusEvents = executionEvents(journal);

  for (const dispatched of ledger.executions.values()) {
    const ids = [dispatched.executionId];
    for (let thread = 1; thread <= dispatched.threads; thread++) {
      ids.push(`${dispatched.executionId}.${thread}`);
    }
    for (const id of ids) {
      if (!byId.has(id)) {
        findings.add(
          'lost',
          'execution acknowledged',
          `execution ${id} (${dispatched.kind}) is not in the database`,
        );
      }
    }
  }

  for (const row of snapshot.executions) {
    const ended = endedStatuses.has(row.status);
    if (ended !== (row.ended_at !== null)) {
      findings.add(
        'mismatch',
        'execution ended',
        `execution ${row.execution_id}: status ${row.status}, ended_at ${row.ended_at}`,
      );
    }
    if (!ended) {
      findings.add(
        'unfinished',
        'execution ended',
        `execution ${row.execution_id} is still ${row.status}`,
      );
    }
    const events = statusEvents.get(row.execution_id) ?? [];
    checkEnd(row, events, ended, findings);
    checkIterations(row, events, snapshot, findings);
  }

  for (const parent of snapshot.executions) {
    const threads = snapshot.executions.filter(
      (row) => row.parent_execution_id === parent.execution_id,
    );
    if (threads.length === 0 || !endedStatuses.has(parent.status)) continue;
    if (parent.status === 'cancelled') continue;
    const allSucceeded = threads.every((thread) => thread.status === 'success');
    if ((parent.status === 'success') !== allSucceeded) {
      findings.add(
        'mismatch',
        'fan-out',
        `execution ${parent.execution_id} ended ${parent.status}; threads ${threads.map((thread) => thread.status).join(', ')}`,
      );
    }
    for (const thread of threads) {
      if (!endedStatuses.has(thread.status)) {
        findings.add(
          'mismatch',
          'fan-out',
          `execution ${parent.execution_id} ended ${parent.status} before its thread ${thread.execution_id} (${thread.status})`,
        );
      }
    }
  }

  checkCommands(snapshot, ledger, byId, findings);
}

/** Every `execution_status` event, by the execution it announces, in journal order. */
function executionEvents(journal: Journal): Map<string, EventRow[]> {
  const found = new Map<string, EventRow[]>();
  for (const event of journal.snapshot.events) {
    if (event.type !== 'execution_status') continue;
    const id = String(event.payload?.execution_id);
    let list = found.get(id);
    if (!list) found.set(id, (list = []));
    list.push(event);
  }
  return found;
}

function checkEnd(row: ExecutionRow, events: EventRow[], ended: boolean, findings: Findings): void {
  const where = `execution ${row.execution_id}`;
  const ends = events.filter((event) => endedStatuses.has(String(event.payload.status)));
  if (ends.length > 1) {
    findings.add(
      'doubled',
      'execution end exactly once',
      `${where}: ${ends.length} end events (${ends.map((event) => `#${event.sequence} ${event.payload.status}`).join(', ')})`,
    );
  }
  if (!ended) {
    if (ends.length > 0) {
      findings.add(
        'mismatch',
        'execution end exactly once',
        `${where}: announced ${ends[0]?.payload.status} but the row is ${row.status}`,
      );
    }
    return;
  }
  const end = ends[0];
  if (!end) {
    findings.add(
      'lost',
      'execution end exactly once',
      `${where} ended ${row.status} with no end event`,
    );
    return;
  }
  if (end.session_id !== row.session_id) {
    findings.add(
      'mismatch',
      'execution end exactly once',
      `${where}: its end is in session ${end.session_id}, not its own ${row.session_id}`,
    );
  }
  if (end.payload.status !== row.status) {
    findings.add(
      'mismatch',
      'execution end exactly once',
      `${where}: the row says ${row.status}, its end event ${end.payload.status}`,
    );
  }
  const last = events[events.length - 1] as EventRow;
  if (ends.length === 1 && last !== end) {
    findings.add(
      'order',
      'execution end exactly once',
      `${where}: #${last.sequence} ${last.payload.status} announced after its end #${end.sequence}`,
    );
  }
}

function checkIterations(
  row: ExecutionRow,
  events: EventRow[],
  snapshot: MissionSnapshot,
  findings: Findings,
): void {
  const where = `execution ${row.execution_id}`;
  const starts = new Map<number, number>();
  let previous = 0;
  for (const event of events) {
    const iteration = Number(event.payload.iteration);
    if (iteration < previous) {
      findings.add(
        'order',
        'iterations once, in order',
        `${where}: #${event.sequence} announces iteration ${iteration} after ${previous}`,
      );
    } else if (iteration > previous) {
      starts.set(iteration, (starts.get(iteration) ?? 0) + 1);
    }
    previous = Math.max(previous, iteration);
  }
  for (let iteration = 1; iteration <= row.iteration; iteration++) {
    if (!starts.has(iteration)) {
      findings.add(
        'lost',
        'iterations once, in order',
        `${where}: iteration ${iteration} of ${row.iteration} never announced`,
      );
    }
  }
  const prefix = `exec.${row.execution_id}.`;
  for (const turn of snapshot.iterationTurns) {
    if (!turn.turn_id.startsWith(prefix)) continue;
    const number = Number(turn.turn_id.slice(prefix.length));
    if (!Number.isInteger(number)) continue; // an agent's answer turn (exec.<id>.<request_id>)
    if (number > row.iteration) {
      findings.add(
        'doubled',
        'iterations once, in order',
        `${where}: turn ${turn.turn_id} admitted past the row's iteration ${row.iteration}`,
      );
    }
    if (turn.session_id !== row.session_id) {
      findings.add(
        'mismatch',
        'iterations once, in order',
        `${where}: turn ${turn.turn_id} in session ${turn.session_id}, not ${row.session_id}`,
      );
    }
  }
}

function checkCommands(
  snapshot: MissionSnapshot,
  ledger: MissionLedger,
  byId: Map<string, ExecutionRow>,
  findings: Findings,
): void {
  const recorded = new Map(snapshot.commands.map((row) => [row.command_id, row]));
  for (const command of ledger.commands) {
    const where = `${command.kind} ${command.commandId} of ${command.executionId}`;
    const row = recorded.get(command.commandId);
    if (!row) {
      findings.add(
        'lost',
        'command acknowledged',
        `${where} answered ${command.result} is not recorded`,
      );
      continue;
    }
    if (row.execution_id !== command.executionId || row.kind !== command.kind) {
      findings.add(
        'mismatch',
        'command acknowledged',
        `${where} is recorded as ${row.kind} of ${row.execution_id}`,
      );
    }
    if (
      command.result !== 'duplicate' &&
      (row.result !== command.result || row.status !== command.status)
    ) {
      findings.add(
        'mismatch',
        'command acknowledged',
        `${where}: told ${command.result}/${command.status}, recorded ${row.result}/${row.status}`,
      );
    }
    const execution = byId.get(command.executionId);
    if (!execution) continue;
    if (
      row.result === 'cancelled' &&
      endedStatuses.has(execution.status) &&
      execution.status !== 'cancelled'
    ) {
      findings.add(
        'mismatch',
        'command acknowledged',
        `${where} answered cancelled, but the execution ended ${execution.status}`,
      );
    }
    if (row.result === 'unblocked' && command.note !== null) {
      const carrying = snapshot.prompts.filter(
        (prompt) =>
          prompt.session_id === execution.session_id &&
          prompt.content.includes(command.note as string),
      ).length;
      if (carrying !== 1 && !(carrying === 0 && execution.status === 'cancelled')) {
        findings.add(
          carrying === 0 ? 'lost' : 'doubled',
          'command acknowledged',
          `${where}: its note is in ${carrying} prompts, not one`,
        );
      }
    }
  }
}

/**
 * Schedules (docs/missions.md, "Schedules"), each fire time against the fires table and the
 * executions; the rule per overlap policy:
 * - every schedule: each fire time of its cron from its first recorded fire to its last has
 *   a fire row (`catch_up: all`, which the soak's schedules use, leaves none out) — else
 *   `lost`; a `started` or `queued` fire names an execution of that schedule and fire time
 *   (`lost` / `mismatch`); no execution of a schedule lacks its fire (`doubled`);
 * - `skip`: a fire records `skipped` (and starts nothing) only while an earlier execution
 *   of the schedule had not ended: one that ended more than a second (`slackMs`, for the
 *   commit of the ending transaction) before the fire was recorded justifies no skip;
 * - `queue`: a queued execution names an earlier execution of the schedule, and its first
 *   iteration was admitted only after that one ended;
 * - `cancel_previous`: a fire that found an execution running asked for its cancel: every
 *   execution of the schedule that had not ended when the next fire was recorded (plus
 *   `slackMs`) ends `cancelled`.
 */
export function checkSchedules(
  snapshot: MissionSnapshot,
  findings: Findings,
  slackMs = 1_000,
): void {
  const executions = new Map(snapshot.executions.map((row) => [row.execution_id, row]));
  const firesBySchedule = new Map<string, typeof snapshot.fires>();
  for (const fire of snapshot.fires) {
    let list = firesBySchedule.get(fire.schedule);
    if (!list) firesBySchedule.set(fire.schedule, (list = []));
    list.push(fire);
  }
  for (const schedule of snapshot.schedules) {
    const fires = firesBySchedule.get(schedule.name) ?? [];
    const definition = schedule.definition;
    const first = fires[0];
    const last = fires[fires.length - 1];
    if (first && last) {
      const cron = parseCron(String(definition.cron), String(definition.timezone ?? 'UTC'));
      const expected = [
        new Date(first.fire_time),
        ...fireTimesBetween(cron, new Date(first.fire_time), new Date(last.fire_time), 100_000),
      ];
      const recorded = new Set(fires.map((fire) => fire.fire_time));
      for (const time of expected) {
        if (!recorded.has(time.getTime())) {
          findings.add(
            'lost',
            'schedule fire times',
            `schedule ${schedule.name}: no fire at ${time.toISOString()}`,
          );
        }
      }
    }
    const mine = snapshot.executions
      .filter((row) => row.schedule === schedule.name)
      .sort((a, b) => (a.fire_time ?? 0) - (b.fire_time ?? 0));
    for (const fire of fires) {
      const at = `schedule ${schedule.name} fire ${new Date(fire.fire_time).toISOString()}`;
      if (fire.outcome === 'skipped') {
        if (fire.execution_id !== null)
          findings.add(
            'mismatch',
            'schedule fire times',
            `${at}: skipped, yet names ${fire.execution_id}`,
          );
        if (definition.overlap !== 'skip') {
          findings.add(
            'mismatch',
            'schedule overlap',
            `${at}: skipped under overlap ${definition.overlap}`,
          );
          continue;
        }
        const running = mine.some(
          (row) =>
            (row.fire_time ?? 0) < fire.fire_time &&
            (row.ended_at === null || row.ended_at + slackMs >= fire.created_at),
        );
        if (!running)
          findings.add(
            'mismatch',
            'schedule overlap',
            `${at}: skipped with no earlier execution running`,
          );
        continue;
      }
      const execution = fire.execution_id === null ? undefined : executions.get(fire.execution_id);
      if (!execution) {
        findings.add(
          'lost',
          'schedule fire times',
          `${at}: ${fire.outcome} ${fire.execution_id}, which is not in the database`,
        );
        continue;
      }
      if (execution.schedule !== schedule.name || execution.fire_time !== fire.fire_time) {
        findings.add(
          'mismatch',
          'schedule fire times',
          `${at}: ${execution.execution_id} is of ${execution.schedule} at ${execution.fire_time}`,
        );
      }
      if (fire.outcome === 'queued') {
        const before =
          execution.after_execution_id === null
            ? undefined
            : executions.get(execution.after_execution_id);
        if (definition.overlap !== 'queue' || !before || before.schedule !== schedule.name) {
          findings.add(
            'mismatch',
            'schedule overlap',
            `${at}: queued behind ${execution.after_execution_id} under overlap ${definition.overlap}`,
          );
          continue;
        }
        const firstTurn = snapshot.iterationTurns.find(
          (turn) => turn.turn_id === `exec.${execution.execution_id}.1`,
        );
        if (firstTurn && (before.ended_at === null || firstTurn.created_at < before.ended_at)) {
          findings.add(
            'order',
            'schedule overlap',
            `${at}: ${execution.execution_id} started before ${before.execution_id} ended`,
          );
        }
      }
    }
    const fired = new Set(fires.map((fire) => fire.execution_id));
    for (const row of mine) {
      if (!fired.has(row.execution_id)) {
        findings.add(
          'doubled',
          'schedule fire times',
          `schedule ${schedule.name}: ${row.execution_id} has no fire of its own`,
        );
      }
    }
    if (definition.overlap === 'cancel_previous') {
      for (const [index, row] of mine.entries()) {
        const next = fires.find(
          (fire) => fire.fire_time > (row.fire_time ?? 0) && fire.execution_id !== null,
        );
        if (!next || index === mine.length - 1) continue;
        // When its work ended: its last turn's end (the row's own end may be written later
        // by a worker paused after the turn was done — a cancel then comes too late).
        const turnsEnded = snapshot.iterationTurns
          .filter((turn) => turn.session_id === row.session_id)
          .map((turn) => turn.completed_at ?? Number.POSITIVE_INFINITY);
        const workEnded =
          row.status === 'success' && turnsEnded.length > 0 ? Math.max(...turnsEnded) : null;
        const ended = workEnded ?? row.ended_at;
        // A fire row's time is when its transaction began, not when its cancel became
        // visible (a scheduler paused mid-transaction commits seconds later); the next
        // execution's first turn, admitted after that commit, bounds it from above.
        const nextTurn = snapshot.iterationTurns.find(
          (turn) => turn.turn_id === `exec.${next.execution_id}.1`,
        );
        const visible = Math.max(next.created_at, nextTurn?.created_at ?? next.created_at);
        const outlived = ended === null || ended > visible + slackMs;
        if (outlived && endedStatuses.has(row.status) && row.status !== 'cancelled') {
          findings.add(
            'mismatch',
            'schedule overlap',
            `schedule ${schedule.name}: ${row.execution_id} outlived the next fire and ended ${row.status}, not cancelled`,
          );
        }
      }
    }
  }
}
