import { randomBytes } from 'node:crypto';
import { requestJson, SseStream } from './http.js';
import { now, type RemoteServer } from './remote.js';
import { median, round } from './stats.js';

/**
 * The tool loop's cost (issue 8): the same session answers plain turns and turns whose
 * model calls one no-op tool (`clock`, allowed: no person involved) — a tool step is a
 * model call that proposes the call, the call saved `running`, its result saved with its
 * `tool_result`, and a second model call. The difference per turn is the loop's overhead
 * per step. Then the journal bytes of a turn with three tool calls.
 */
async function turns(
  server: RemoteServer,
  sse: SseStream,
  sessionId: string,
  message: string,
  count: number,
) {
  const times: number[] = [];
  const before = await server.counters();
  for (let index = 0; index < count; index++) {
    const turnId = `tl_${randomBytes(4).toString('hex')}`;
    const mark = sse.frames.length;
    const sent = now();
    await requestJson(server.url, 'POST', '/api/v1/chat/turns', {
      session_id: sessionId,
      turn_id: turnId,
      message: `${message}\nbench:${turnId}`,
    });
    const done = await sse.waitFor(
      (frame) => frame.event === 'done' && frame.data.turn_ids?.includes(turnId),
      mark,
      60_000,
    );
    times.push(done.receivedAt - sent);
  }
  await new Promise((resolve) => setTimeout(resolve, 100));
  const after = await server.counters();
  return {
    median_turn_ms: round(median(times)),
    round_trips_per_turn: round((after.roundTrips - before.roundTrips) / count, 2),
    commits_per_turn: round((after.commits - before.commits) / count, 2),
  };
}

export async function measureToolLoop(server: RemoteServer) {
  const created = await requestJson(server.url, 'POST', '/api/v1/chat/sessions', {
    agent: 'tooled',
  });
  const sessionId = created.body.session_id as string;
  const sse = await SseStream.open(server.url, sessionId);
  try {
    await turns(server, sse, sessionId, 'warm up', 5);
    const plain = await turns(server, sse, sessionId, 'a plain question', 20);
    const oneTool = await turns(server, sse, sessionId, '/tool clock {}', 20);
    const threeTools = await (async () => {
      const fresh = (
        await requestJson(server.url, 'POST', '/api/v1/chat/sessions', { agent: 'tooled' })
      ).body.session_id as string;
      const stream = await SseStream.open(server.url, fresh);
      try {
        const measured = await turns(
          server,
          stream,
          fresh,
          '/tool clock {}\n/tool clock {}\n/tool clock {}',
          10,
        );
        const bytes = await server.query<{ bytes: number }>(
          `select (coalesce((select sum(pg_column_size(e.*)) from events e where e.session_id = $1), 0)
                 + coalesce((select sum(pg_column_size(m.*)) from messages m where m.session_id = $1), 0)
                 + coalesce((select sum(pg_column_size(t.*)) from turns t where t.session_id = $1), 0))::bigint as bytes`,
          [fresh],
        );
        return { ...measured, bytes_per_turn: Math.round(Number(bytes[0]?.bytes ?? 0) / 10) };
      } finally {
        stream.close();
      }
    })();
    return {
      plain,
      one_tool_step: oneTool,
      three_tool_calls: threeTools,
      overhead_per_tool_step_ms: round(oneTool.median_turn_ms - plain.median_turn_ms),
      round_trips_per_tool_step: round(
        oneTool.round_trips_per_turn - plain.round_trips_per_turn,
        2,
      ),
    };
  } finally {
    sse.close();
  }
}
