/**
 * One pending input request in the approvals inbox (`GET /api/v1/inputs`, an extension):
 * the store builds it, `parley/client` returns it, so the two cannot drift.
 */
export interface InboxItem {
  request_id: string;
  session_id: string;
  session_title: string | null;
  agent: string;
  turn_id: string;
  kind: 'approval' | 'question' | 'budget_extension';
  call_id: string;
  tool: string | null;
  arguments: unknown;
  prompt: string | null;
  /** The sequence of its `input_required` event: what an answer must carry. */
  expected_sequence: number;
  created_at: string;
  /** `low`, `normal`, `high` or `urgent`: an execution's, else `normal`. */
  priority: 'low' | 'normal' | 'high' | 'urgent';
  /** The execution this request stops, if any, and where its interruptions go. */
  execution_id: string | null;
  interrupt_to: string | null;
}
