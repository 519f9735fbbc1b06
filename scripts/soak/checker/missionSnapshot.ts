import type { Db } from '../../../src/store/db.js';

/**
 * The missions' tables as the checker reads them, in one REPEATABLE READ transaction of
 * their own (read after the journal's, once every process has stopped, or on a test's
 * quiet database). Times are epoch milliseconds of the database's clock.
 */
export interface ExecutionRow {
  execution_id: string;
  mission: string;
  session_id: string;
  parent_execution_id: string | null;
  schedule: string | null;
  fire_time: number | null;
  after_execution_id: string | null;
  status: string;
  iteration: number;
  max_iterations: number;
  cancel_command_id: string | null;
  result: Record<string, any> | null;
  created_at: number;
  ended_at: number | null;
}

export interface ExecutionCommandRow {
  command_id: string;
  execution_id: string;
  kind: string;
  result: string;
  status: string;
}

export interface FireRow {
  schedule: string;
  fire_time: number;
  execution_id: string | null;
  outcome: string;
  created_at: number;
}

export interface ScheduleRow {
  name: string;
  definition: Record<string, any>;
}

/** An iteration's turn (`exec.<id>.<n>`): when it was admitted, and when it ended. */
export interface IterationTurnRow {
  turn_id: string;
  session_id: string;
  state: string;
  created_at: number;
  completed_at: number | null;
}

/** A user message of an execution's session (an iteration's prompt). */
export interface PromptRow {
  session_id: string;
  turn_id: string | null;
  content: string;
}

export interface MissionSnapshot {
  executions: ExecutionRow[];
  commands: ExecutionCommandRow[];
  fires: FireRow[];
  schedules: ScheduleRow[];
  iterationTurns: IterationTurnRow[];
  prompts: PromptRow[];
}

const epoch = (column: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${column}`;

export async function readMissionSnapshot(db: Db): Promise<MissionSnapshot> {
  return db.transaction(async (tx) => {
    await tx.query('set transaction isolation level repeatable read');
    const executions = await tx.query<ExecutionRow>(
      `select execution_id, mission, session_id, parent_execution_id, schedule,
              ${epoch('fire_time')}, after_execution_id, status, iteration, max_iterations,
              cancel_command_id, result, ${epoch('created_at')}, ${epoch('ended_at')}
         from executions order by execution_id`,
    );
    const commands = await tx.query<ExecutionCommandRow>(
      `select command_id, execution_id, kind, result, status from execution_commands
        order by command_id`,
    );
    const fires = await tx.query<FireRow>(
      `select schedule, ${epoch('fire_time')}, execution_id, outcome, ${epoch('created_at')}
         from schedule_fires order by schedule, fire_time`,
    );
    const schedules = await tx.query<ScheduleRow>(
      'select name, definition from schedules order by name',
    );
    const iterationTurns = await tx.query<IterationTurnRow>(
      `select turn_id, session_id, state, ${epoch('created_at')}, ${epoch('completed_at')} from turns
        where turn_id like 'exec.%' order by turn_id`,
    );
    const prompts = await tx.query<PromptRow>(
      `select m.session_id, m.turn_id, m.content from messages m
        where m.role = 'user'
          and m.session_id in (select session_id from executions)`,
    );
    return {
      executions: executions.rows,
      commands: commands.rows,
      fires: fires.rows,
      schedules: schedules.rows,
      iterationTurns: iterationTurns.rows,
      prompts: prompts.rows,
    };
  });
}
