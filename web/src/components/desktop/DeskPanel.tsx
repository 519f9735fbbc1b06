import { createContext, useContext, type ReactNode } from 'react';

/** Which of the desktop's sections are collapsed (the `desktop` preference), and a toggle. */
export interface DeskLayout {
  collapsed: ReadonlySet<string>;
  toggle: (section: string) => void;
}

export const DeskLayoutContext = createContext<DeskLayout>({
  collapsed: new Set(),
  toggle: () => {},
});

/**
 * The frame every desktop panel shares: a labelled region (`id` is its anchor, `desk-{id}`
 * its heading) with a button that collapses it (`aria-expanded`; the layout is saved), the
 * alert of a failed read, and "Loading…" until the first answer. A collapsed panel keeps
 * its state and its reads; only its body is hidden.
 */
export function DeskPanel(props: {
  id: string;
  title: string;
  wide?: boolean;
  /** The last read failed: said as an alert above the content. */
  error?: string | null;
  /** Nothing read yet: these words (e.g. "Loading agents…") instead, unless it failed. */
  loading?: string | false;
  children: ReactNode;
}) {
  const layout = useContext(DeskLayoutContext);
  const collapsed = layout.collapsed.has(props.id);
  const heading = `desk-${props.id}`;
  return (
    <section
      className={`desk-panel${props.wide ? ' wide' : ''}${collapsed ? ' collapsed' : ''}`}
      aria-labelledby={heading}
      id={props.id}
    >
      <div className="desk-panel-head">
        <h3 id={heading}>{props.title}</h3>
        <button
          type="button"
          className="desk-collapse"
          aria-expanded={!collapsed}
          aria-controls={`${heading}-body`}
          aria-label={`${props.title} section`}
          title={collapsed ? `Show ${props.title}` : `Hide ${props.title}`}
          onClick={() => layout.toggle(props.id)}
        >
          <span aria-hidden="true">{collapsed ? '▸' : '▾'}</span>
        </button>
      </div>
      <div className="desk-panel-body" id={`${heading}-body`} hidden={collapsed}>
        {props.error ? (
          <p className="error" role="alert">
            {props.error}
          </p>
        ) : null}
        {props.loading && !props.error ? <p aria-busy="true">{props.loading}</p> : null}
        {props.children}
      </div>
    </section>
  );
}
