/**
 * Sessions with state (docs/PROTOCOL.md, "Sessions with state") under chaos: a third
 * agent, `stateful`, keeps a small domain state. The AG-UI client runs a few threads on it
 * (aguiClient.ts): a first run carries a state of its own (`RunAgentInput.state`: taken
 * in the admission's transaction, `state_changed` by `user`), and a second run carries
 * another and has the model change it again (`update_state`, `by: tool`, written by the
 * turn's commit). The checker (checker/state.ts) holds each session's `data` to the fold
 * of its journal's `state_changed` events, and every state a run acknowledged with 200
 * carried to a `state_changed` of that run's turn.
 */
export const stateAgent = 'stateful';

export const stateConfig = {
  schema: {
    type: 'object',
    properties: { count: { type: 'integer' }, by: { type: 'string' } },
    required: ['count'],
    additionalProperties: false,
  },
  initial: { count: 0 },
};
