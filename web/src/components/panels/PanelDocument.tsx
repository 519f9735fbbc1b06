import { lazy, Suspense, useState } from 'react';
import type { PanelComponent, PanelForm } from 'parley/client';
import { Markdown } from '../../markdown';

const PanelChart = lazy(() => import('./PanelChart'));

type Cell = string | number | boolean | null;
type Table = Extract<PanelComponent, { type: 'table' }>;

/** What a form does when submitted (the panel's conversation receives the values). */
export type SubmitForm = (form: PanelForm, values: Record<string, Cell>) => Promise<void>;

/**
 * One panel document, component by component (the palette: src/protocol/panels.ts). Text
 * is rendered as React text (markdown through the safe renderer), links open only http(s)
 * or this server's paths, as the palette's schema already demands.
 */
export function PanelDocument(props: { component: PanelComponent; onSubmit?: SubmitForm }) {
  const { component } = props;
  switch (component.type) {
    case 'stack':
      return (
        <div className={`panel-stack ${component.direction ?? 'vertical'}`}>
          {component.children.map((child, index) => (
            <PanelDocument key={index} component={child} onSubmit={props.onSubmit} />
          ))}
        </div>
      );
    case 'markdown':
      return (
        <div className="panel-markdown">
          <Markdown source={component.text} />
        </div>
      );
    case 'key_value':
      return (
        <div className="panel-kv">
          {component.title ? <h4>{component.title}</h4> : null}
          <dl>
            {component.items.map((item, index) => (
              <div key={index}>
                <dt>{item.key}</dt>
                <dd>{cellText(item.value)}</dd>
              </div>
            ))}
          </dl>
        </div>
      );
    case 'table':
      return <SortableTable table={component} />;
    case 'chart':
      return (
        <Suspense fallback={<p className="small muted">Loading chart…</p>}>
          <PanelChart chart={component} />
        </Suspense>
      );
    case 'form':
      return <PanelFormView form={component} onSubmit={props.onSubmit} />;
    case 'image':
      return <img className="panel-image" src={component.src} alt={component.alt} />;
    case 'progress': {
      const max = component.max ?? 100;
      return (
        <div className="panel-progress">
          <label>
            <span className="small">
              {component.label ?? 'Progress'} · {Math.round((component.value / max) * 100)}%
            </span>
            <progress value={component.value} max={max} />
          </label>
        </div>
      );
    }
    case 'link_list':
      return (
        <nav className="panel-links" aria-label={component.title ?? 'Links'}>
          {component.title ? <h4>{component.title}</h4> : null}
          <ul>
            {component.links.map((link, index) => (
              <li key={index}>
                <a href={link.href} target="_blank" rel="noopener noreferrer">
                  {link.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
      );
    default:
      return null;
  }
}

function cellText(value: Cell): string {
  return value === null ? '—' : String(value);
}

function SortableTable({ table }: { table: Table }) {
  const [sort, setSort] = useState(
    table.sort ? { column: table.sort.column, direction: table.sort.direction ?? 'asc' } : null,
  );
  const index = sort ? table.columns.indexOf(sort.column) : -1;
  const rows =
    index < 0
      ? table.rows
      : [...table.rows].sort((a, b) => {
          const order = compare(a[index] ?? null, b[index] ?? null);
          return sort?.direction === 'desc' ? -order : order;
        });
  return (
    <div className="panel-table">
      <table>
        {table.title ? <caption>{table.title}</caption> : null}
        <thead>
          <tr>
            {table.columns.map((column) => {
              const current = sort?.column === column ? sort.direction : null;
              return (
                <th
                  key={column}
                  aria-sort={
                    current === 'asc' ? 'ascending' : current === 'desc' ? 'descending' : 'none'
                  }
                >
                  <button
                    type="button"
                    onClick={() =>
                      setSort({ column, direction: current === 'asc' ? 'desc' : 'asc' })
                    }
                  >
                    {column}
                    {current === 'asc' ? ' ▲' : current === 'desc' ? ' ▼' : ''}
                  </button>
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>
          {rows.map((row, rowIndex) => (
            <tr key={rowIndex}>
              {row.map((cell, cellIndex) => (
                <td key={cellIndex}>{cellText(cell)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function compare(a: Cell, b: Cell): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

function PanelFormView({ form, onSubmit }: { form: PanelForm; onSubmit?: SubmitForm | undefined }) {
  const initial = Object.fromEntries(
    form.fields.map((field) => [field.name, field.default ?? null]),
  );
  const [values, setValues] = useState<Record<string, Cell>>(initial);
  const [status, setStatus] = useState<'idle' | 'sending' | 'sent' | 'failed'>('idle');
  const [error, setError] = useState<string | null>(null);
  const set = (name: string, value: Cell) => setValues((old) => ({ ...old, [name]: value }));
  return (
    <form
      className="panel-form"
      aria-label={form.title ?? form.name}
      onSubmit={(event) => {
        event.preventDefault();
        if (!onSubmit) return;
        setStatus('sending');
        setError(null);
        onSubmit(form, values).then(
          () => setStatus('sent'),
          (failure: unknown) => {
            setStatus('failed');
            setError((failure as Error).message);
          },
        );
      }}
    >
      {form.title ? <h4>{form.title}</h4> : null}
      {form.fields.map((field) => {
        const label = field.label ?? field.name;
        const value = values[field.name] ?? null;
        if (field.kind === 'boolean') {
          return (
            <label key={field.name} className="checkbox">
              <input
                type="checkbox"
                checked={value === true}
                onChange={(event) => set(field.name, event.target.checked)}
              />
              {label}
            </label>
          );
        }
        return (
          <label key={field.name}>
            <span className="small">
              {label}
              {field.required ? ' *' : ''}
            </span>
            {field.kind === 'select' ? (
              <select
                required={field.required}
                value={value === null ? '' : String(value)}
                onChange={(event) => set(field.name, event.target.value || null)}
              >
                <option value="">—</option>
                {field.options?.map((option) => (
                  <option key={option} value={option}>
                    {option}
                  </option>
                ))}
              </select>
            ) : field.kind === 'textarea' ? (
              <textarea
                required={field.required}
                value={value === null ? '' : String(value)}
                onChange={(event) => set(field.name, event.target.value)}
              />
            ) : (
              <input
                type={field.kind === 'number' ? 'number' : 'text'}
                required={field.required}
                value={value === null ? '' : String(value)}
                onChange={(event) =>
                  set(
                    field.name,
                    field.kind === 'number'
                      ? event.target.value === ''
                        ? null
                        : Number(event.target.value)
                      : event.target.value,
                  )
                }
              />
            )}
          </label>
        );
      })}
      <div className="panel-form-actions">
        <button type="submit" className="primary" disabled={!onSubmit || status === 'sending'}>
          {form.submit_label ?? 'Submit'}
        </button>
        <span className="small muted" role="status">
          {status === 'sending' ? 'Sending…' : status === 'sent' ? 'Sent to the conversation' : ''}
        </span>
      </div>
      {error ? (
        <p className="error small" role="alert">
          {error}
        </p>
      ) : null}
    </form>
  );
}
