import { useCallback, useId, useMemo, useRef, useState } from 'react';
import type { ParleyClient } from 'parley/client';
import { explainRequestError } from '../../words';
import {
  clientKey,
  dispatchExecution,
  listMissions,
  type Execution,
  type Mission,
} from './desktopApi';
import { usePoll } from './poll';
import { DeskPanel } from './DeskPanel';

/** One property of an input schema, as far as a form field needs it. */
interface FieldSchema {
  type?: string | string[];
  enum?: unknown[];
  title?: string;
  description?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  format?: string;
}

type FieldKind = 'string' | 'number' | 'integer' | 'boolean' | 'enum' | 'json';

export interface Field {
  name: string;
  kind: FieldKind;
  required: boolean;
  schema: FieldSchema;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The fields a mission's `input_schema` asks for: strings, numbers and integers,
 * booleans, enums; anything else (a nested object, an array, a union of types) is a JSON
 * field. Null when the schema lists no properties: the whole input is then one JSON field.
 */
export function fieldsOf(schema: Record<string, unknown> | null): Field[] | null {
  if (!schema || !isRecord(schema.properties)) return null;
  const required = Array.isArray(schema.required) ? schema.required.map(String) : [];
  const fields = Object.entries(schema.properties).map(([name, raw]) => {
    const field = (isRecord(raw) ? raw : {}) as FieldSchema;
    let kind: FieldKind = 'json';
    if (Array.isArray(field.enum) && field.enum.length > 0) kind = 'enum';
    else if (field.type === 'string') kind = 'string';
    else if (field.type === 'number') kind = 'number';
    else if (field.type === 'integer') kind = 'integer';
    else if (field.type === 'boolean') kind = 'boolean';
    return { name, kind, required: required.includes(name), schema: field };
  });
  // Required fields first, each group in the schema's order.
  return [
    ...fields.filter((field) => field.required),
    ...fields.filter((field) => !field.required),
  ];
}

type Values = Record<string, string | boolean>;

function initialValues(fields: Field[]): Values {
  const values: Values = {};
  for (const field of fields) {
    const fallback = field.schema.default;
    if (field.kind === 'boolean') values[field.name] = fallback === true;
    else if (field.kind === 'json')
      values[field.name] = fallback === undefined ? '' : JSON.stringify(fallback, null, 2);
    else if (field.kind === 'enum')
      values[field.name] =
        fallback === undefined ? '' : String(field.schema.enum?.indexOf(fallback) ?? '');
    else values[field.name] = fallback === undefined ? '' : String(fallback);
  }
  return values;
}

/** The input a filled form stands for, or the first field that cannot be read. */
function inputOf(
  fields: Field[],
  values: Values,
): { input: Record<string, unknown> } | { field: string; problem: string } {
  const input: Record<string, unknown> = {};
  for (const field of fields) {
    const value = values[field.name];
    if (field.kind === 'boolean') {
      input[field.name] = value === true;
      continue;
    }
    const text = typeof value === 'string' ? value : '';
    if (text.trim() === '') {
      if (field.required && field.kind !== 'string')
        return { field: field.name, problem: 'is required' };
      if (field.required) input[field.name] = text;
      continue;
    }
    if (field.kind === 'string') input[field.name] = text;
    else if (field.kind === 'enum') input[field.name] = field.schema.enum?.[Number(text)];
    else if (field.kind === 'number' || field.kind === 'integer') {
      const number = Number(text);
      if (!Number.isFinite(number) || (field.kind === 'integer' && !Number.isInteger(number)))
        return {
          field: field.name,
          problem: `must be ${field.kind === 'integer' ? 'a whole number' : 'a number'}`,
        };
      input[field.name] = number;
    } else {
      try {
        input[field.name] = JSON.parse(text);
      } catch {
        return { field: field.name, problem: 'is not valid JSON' };
      }
    }
  }
  return { input };
}

/**
 * Dispatching an execution of a mission (POST /api/v1/missions/{name}/executions), with a
 * form generated from the mission's `input_schema` (GET /api/v1/missions). The
 * execution id is made once per filled form, so a retry after a lost answer is the same
 * dispatch; changing the form makes a new one.
 */
export function Dispatch(props: {
  client: ParleyClient;
  onDispatched: (execution: Execution) => void;
  onMissions: (names: string[]) => void;
}) {
  const { client, onDispatched, onMissions } = props;
  const [missions, setMissions] = useState<Mission[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [chosen, setChosen] = useState('');

  const load = useCallback(
    async (current: () => boolean) => {
      try {
        const answer = await listMissions(client);
        if (!current()) return;
        setMissions(answer.items);
        onMissions(answer.items.map((mission) => mission.name));
        setError(null);
      } catch (failure) {
        if (current()) setError(explainRequestError(failure));
      }
    },
    [client, onMissions],
  );
  usePoll(load, 30_000);

  const mission = missions?.find((candidate) => candidate.name === chosen) ?? missions?.[0];
  return (
    <DeskPanel
      id="dispatch"
      title="Dispatch"
      error={error}
      loading={missions === null ? 'Loading missions…' : false}
    >
      {missions !== null && missions.length === 0 ? (
        <p className="empty">No missions are defined for this tenant.</p>
      ) : null}
      {missions && missions.length > 0 && mission ? (
        <>
          <label>
            Mission
            <select value={mission.name} onChange={(event) => setChosen(event.target.value)}>
              {missions.map((candidate) => (
                <option key={candidate.name} value={candidate.name}>
                  {candidate.name}
                </option>
              ))}
            </select>
          </label>
          <p className="small muted">
            Agent {mission.agent} ·{' '}
            {mission.loop ? `a loop of at most ${mission.max_iterations} iterations` : 'runs once'}{' '}
            · priority {mission.priority}
            {mission.timeout_seconds !== null
              ? ` · times out after ${mission.timeout_seconds} s`
              : ''}
          </p>
          <DispatchForm
            key={mission.name}
            client={client}
            mission={mission}
            onDispatched={onDispatched}
          />
        </>
      ) : null}
    </DeskPanel>
  );
}

export function DispatchForm(props: {
  client: ParleyClient;
  mission: Mission;
  onDispatched: (execution: Execution) => void;
}) {
  const { client, mission } = props;
  const fields = useMemo(() => fieldsOf(mission.input_schema), [mission.input_schema]);
  const [values, setValues] = useState<Values>(() => initialValues(fields ?? []));
  const [rawInput, setRawInput] = useState('');
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const executionId = useRef<string | null>(null);
  const baseId = useId();

  const change = (name: string, value: string | boolean) => {
    setValues((current) => ({ ...current, [name]: value }));
    executionId.current = null;
    setDone(null);
  };

  async function submit() {
    setProblem(null);
    setDone(null);
    let input: Record<string, unknown> | undefined;
    if (fields) {
      const read = inputOf(fields, values);
      if ('field' in read) {
        setProblem(`${read.field} ${read.problem}.`);
        return;
      }
      input = read.input;
    } else if (rawInput.trim()) {
      try {
        const parsed: unknown = JSON.parse(rawInput);
        if (!isRecord(parsed)) throw new Error('not an object');
        input = parsed;
      } catch {
        setProblem('The input must be a JSON object.');
        return;
      }
    }
    executionId.current ??= clientKey('web');
    setBusy(true);
    try {
      const execution = await dispatchExecution(client, mission.name, {
        execution_id: executionId.current,
        ...(input ? { input } : {}),
      });
      executionId.current = null;
      setDone(`Dispatched ${execution.execution_id}.`);
      props.onDispatched(execution);
    } catch (failure) {
      setProblem(explainRequestError(failure));
    } finally {
      setBusy(false);
    }
  }

  return (
    <form
      className="dispatch-form"
      aria-label={`Dispatch ${mission.name}`}
      onSubmit={(event) => {
        event.preventDefault();
        void submit();
      }}
    >
      {fields === null ? (
        <label>
          Input (JSON object, optional)
          <textarea
            rows={3}
            value={rawInput}
            spellCheck={false}
            onChange={(event) => {
              setRawInput(event.target.value);
              executionId.current = null;
            }}
          />
        </label>
      ) : null}
      {fields?.length === 0 ? <p className="small muted">This mission takes no input.</p> : null}
      {fields?.map((field) => {
        const id = `${baseId}-${field.name}`;
        const hint = field.schema.description ? `${id}-hint` : undefined;
        const label = (
          <span>
            {field.schema.title ?? field.name}
            {field.required ? <span aria-hidden="true"> *</span> : null}
          </span>
        );
        const description = hint ? (
          <span id={hint} className="small muted">
            {field.schema.description}
          </span>
        ) : null;
        const value = values[field.name];
        if (field.kind === 'boolean') {
          return (
            <label key={field.name} className="check" htmlFor={id}>
              <input
                id={id}
                type="checkbox"
                checked={value === true}
                aria-describedby={hint}
                onChange={(event) => change(field.name, event.target.checked)}
              />
              {label}
              {description}
            </label>
          );
        }
        const text = typeof value === 'string' ? value : '';
        return (
          <label key={field.name} htmlFor={id}>
            {label}
            {field.kind === 'enum' ? (
              <select
                id={id}
                value={text}
                required={field.required}
                aria-describedby={hint}
                onChange={(event) => change(field.name, event.target.value)}
              >
                <option value="">{field.required ? 'Choose…' : '(none)'}</option>
                {(field.schema.enum ?? []).map((option, index) => (
                  <option key={index} value={String(index)}>
                    {typeof option === 'string' ? option : JSON.stringify(option)}
                  </option>
                ))}
              </select>
            ) : field.kind === 'json' ? (
              <textarea
                id={id}
                rows={3}
                spellCheck={false}
                value={text}
                required={field.required}
                placeholder="JSON"
                aria-describedby={hint}
                onChange={(event) => change(field.name, event.target.value)}
              />
            ) : (
              <input
                id={id}
                type={field.kind === 'string' ? 'text' : 'number'}
                step={field.kind === 'integer' ? 1 : field.kind === 'number' ? 'any' : undefined}
                min={field.schema.minimum}
                max={field.schema.maximum}
                minLength={field.schema.minLength}
                maxLength={field.schema.maxLength}
                required={field.required}
                value={text}
                aria-describedby={hint}
                onChange={(event) => change(field.name, event.target.value)}
              />
            )}
            {description}
          </label>
        );
      })}
      {problem ? (
        <p className="error small" role="alert">
          {problem}
        </p>
      ) : null}
      <div className="desk-actions">
        <button type="submit" className="primary" disabled={busy} aria-busy={busy}>
          {busy ? 'Dispatching…' : 'Dispatch'}
        </button>
        {done ? (
          <span role="status" className="small muted">
            {done}
          </span>
        ) : null}
      </div>
    </form>
  );
}
