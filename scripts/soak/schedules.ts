/**
 * The soak's schedules (docs/missions.md, "Schedules"), one per overlap policy, on
 * six-field crons (seconds first): every second is the shortest interval a cron allows.
 * `skip` and `cancel_previous` start `soak_tick` (missions.ts), which outlasts an interval
 * or two, so that they meet a running predecessor at most fires; `queue` starts the
 * one-shot `soak_once`, which meets one only when the chaos delays it (a queue of
 * executions that each outlast the interval would only grow). `catch_up: all` (within
 * `runtime.max_catch_up_fires`) makes every fire time start or record one fire even when
 * the scheduler was down: the checker then holds each schedule to "no fire time missed".
 */
export function soakSchedules(engine: 'postgres' | 'pglite') {
  return {
    tick_skip: { mission: 'soak_tick', cron: '* * * * * *', overlap: 'skip', catch_up: 'all' },
    // One `parley serve`, killed every few seconds and slow to start again, runs an
    // execution at a time far slower than three workers do: fired every 3 s, the queue
    // would only grow (a backlog of hundreds that no drain works through).
    tick_queue: {
      mission: 'soak_once',
      cron: engine === 'pglite' ? '*/10 * * * * *' : '*/3 * * * * *',
      overlap: 'queue',
      catch_up: 'all',
    },
    tick_cancel: {
      mission: 'soak_tick',
      cron: '*/2 * * * * *',
      overlap: 'cancel_previous',
      catch_up: 'all',
    },
  } as const;
}
