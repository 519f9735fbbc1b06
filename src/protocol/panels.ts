import { z } from 'zod';

/**
 * The panel palette: every component a panel's `document` may use, each a JSON object
 * `{"type": ..., ...props}` checked by its schema here, on the server (API and agents'
 * tools) and described to clients by `GET /api/v1/panels/palette`. Containers (`stack`)
 * hold `children`. The web app renders each type (web/src/components/panels/).
 */

/** How deep containers may nest, and how large a document may be, in bytes of JSON. */
export const maxPanelDepth = 8;
export const maxPanelBytes = 64 * 1024;

const label = z.string().min(1).max(200);
const cell = z.union([z.string().max(2000), z.number(), z.boolean(), z.null()]);
/** Links and images point to the web (http, https) or to a path of this server. */
const href = z
  .string()
  .max(2048)
  .refine(
    (value) => /^https?:\/\//i.test(value) || /^\/(?!\/)/.test(value),
    'must be an http(s) URL or a path on this server',
  );

const markdown = z
  .object({ type: z.literal('markdown'), text: z.string().max(20_000) })
  .strict()
  .meta({ description: 'Markdown text (rendered without raw HTML)' });

const keyValue = z
  .object({
    type: z.literal('key_value'),
    title: label.optional(),
    items: z.array(z.object({ key: label, value: cell }).strict()).max(200),
  })
  .strict()
  .meta({ description: 'A list of labelled values' });

const table = z
  .object({
    type: z.literal('table'),
    title: label.optional(),
    columns: z.array(label).min(1).max(50),
    rows: z.array(z.array(cell)).max(1000),
    sort: z
      .object({ column: label, direction: z.enum(['asc', 'desc']).default('asc') })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((component, context) => {
    component.rows.forEach((row, index) => {
      if (row.length !== component.columns.length) {
        context.addIssue({
          code: 'custom',
          path: ['rows', index],
          message: `must have ${component.columns.length} cells, one per column`,
        });
      }
    });
    if (component.sort && !component.columns.includes(component.sort.column)) {
      context.addIssue({ code: 'custom', path: ['sort', 'column'], message: 'not a column' });
    }
  })
  .meta({ description: 'Rows under columns; people sort it by any column' });

const chart = z
  .object({
    type: z.literal('chart'),
    kind: z.enum(['line', 'bar', 'area', 'pie']),
    title: label.optional(),
    labels: z.array(z.string().max(200)).max(500),
    series: z
      .array(z.object({ name: label, values: z.array(z.number()).max(500) }).strict())
      .min(1)
      .max(10),
  })
  .strict()
  .superRefine((component, context) => {
    component.series.forEach((series, index) => {
      if (series.values.length !== component.labels.length) {
        context.addIssue({
          code: 'custom',
          path: ['series', index, 'values'],
          message: `must have ${component.labels.length} values, one per label`,
        });
      }
    });
  })
  .meta({ description: 'A chart: one value per label in each series' });

const formField = z
  .object({
    name: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'must be an identifier (A-Z a-z 0-9 _)'),
    label: label.optional(),
    kind: z.enum(['text', 'textarea', 'number', 'boolean', 'select']).default('text'),
    options: z.array(z.string().min(1).max(200)).min(1).max(100).optional(),
    required: z.boolean().default(false),
    default: cell.optional(),
  })
  .strict()
  .refine((field) => (field.kind === 'select') === (field.options !== undefined), {
    message: 'options are given exactly for a select',
    path: ['options'],
  });

const form = z
  .object({
    type: z.literal('form'),
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 _ -'),
    title: label.optional(),
    fields: z.array(formField).min(1).max(50),
    submit_label: label.optional(),
  })
  .strict()
  .superRefine((component, context) => {
    const seen = new Set<string>();
    component.fields.forEach((field, index) => {
      if (seen.has(field.name)) {
        context.addIssue({ code: 'custom', path: ['fields', index, 'name'], message: 'repeated' });
      }
      seen.add(field.name);
    });
  })
  .meta({ description: "A form; submitting it sends its values to the panel's conversation" });

const image = z
  .object({ type: z.literal('image'), src: href, alt: z.string().max(500) })
  .strict()
  .meta({ description: 'An image, with its text alternative' });

const progress = z
  .object({
    type: z.literal('progress'),
    label: label.optional(),
    value: z.number().min(0),
    max: z.number().positive().default(100),
  })
  .strict()
  .refine((component) => component.value <= component.max, {
    message: 'must not exceed max',
    path: ['value'],
  })
  .meta({ description: 'How far something has come: value of max' });

const linkList = z
  .object({
    type: z.literal('link_list'),
    title: label.optional(),
    links: z.array(z.object({ label, href }).strict()).min(1).max(100),
  })
  .strict()
  .meta({ description: 'Links, each with its label' });

const leaves = {
  markdown,
  key_value: keyValue,
  table,
  chart,
  form,
  image,
  progress,
  link_list: linkList,
};

export type PanelComponent =
  | z.infer<(typeof leaves)[keyof typeof leaves]>
  | { type: 'stack'; direction?: 'vertical' | 'horizontal'; children: PanelComponent[] };

const leafTypes = new Map<string, z.ZodType>(Object.entries(leaves));

const stackShape = {
  type: z.literal('stack'),
  direction: z.enum(['vertical', 'horizontal']).default('vertical'),
};

/**
 * One issue with a panel document: where (`document.children[1].rows[0]`) and what.
 * Checked by hand over the tree, not by a recursive zod union, so that an issue is
 * reported at the component that has it rather than as "no union member matched".
 */
export interface PanelIssue {
  path: string;
  message: string;
}

/** A document as stored: checked and with its defaults filled in, or its first issue. */
export function checkPanelDocument(
  value: unknown,
  root = 'document',
): { document: PanelComponent } | { issue: PanelIssue } {
  if (Buffer.byteLength(JSON.stringify(value ?? null)) > maxPanelBytes) {
    return { issue: { path: root, message: `must be at most ${maxPanelBytes} bytes of JSON` } };
  }
  const checked = checkComponent(value, root, 1);
  return 'issue' in checked ? checked : { document: checked.component };
}

function checkComponent(
  value: unknown,
  path: string,
  depth: number,
): { component: PanelComponent } | { issue: PanelIssue } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { issue: { path, message: 'must be a component object {"type": ...}' } };
  }
  const type = (value as { type?: unknown }).type;
  if (type === 'stack') return checkStack(value as Record<string, unknown>, path, depth);
  const schema = typeof type === 'string' ? leafTypes.get(type) : undefined;
  if (!schema) {
    return {
      issue: {
        path: `${path}.type`,
        message: `must be one of ${['stack', ...leafTypes.keys()].join(', ')}`,
      },
    };
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return { component: parsed.data as PanelComponent };
  const issue = parsed.error.issues[0];
  return {
    issue: {
      path: `${path}${formatPath(issue?.path ?? [])}`,
      message: issue?.message ?? 'invalid',
    },
  };
}

function checkStack(
  value: Record<string, unknown>,
  path: string,
  depth: number,
): { component: PanelComponent } | { issue: PanelIssue } {
  if (depth > maxPanelDepth) {
    return { issue: { path, message: `containers nest at most ${maxPanelDepth} deep` } };
  }
  const { children, ...rest } = value;
  const head = z.object(stackShape).strict().safeParse(rest);
  if (!head.success) {
    const issue = head.error.issues[0];
    return {
      issue: {
        path: `${path}${formatPath(issue?.path ?? [])}`,
        message: issue?.message ?? 'invalid',
      },
    };
  }
  if (!Array.isArray(children) || children.length > 100) {
    return {
      issue: { path: `${path}.children`, message: 'must be a list of at most 100 components' },
    };
  }
  const checked: PanelComponent[] = [];
  for (const [index, child] of children.entries()) {
    const result = checkComponent(child, `${path}.children[${index}]`, depth + 1);
    if ('issue' in result) return result;
    checked.push(result.component);
  }
  return { component: { ...head.data, children: checked } };
}

function formatPath(path: readonly PropertyKey[]): string {
  return path.map((key) => (typeof key === 'number' ? `[${key}]` : `.${String(key)}`)).join('');
}

/** Every component of the palette with its JSON Schema (`children` of a stack: components). */
export function palette(): { type: string; description: string; schema: unknown }[] {
  const stack = {
    type: 'stack',
    description: 'Holds other components, one after the other (vertical) or side by side',
    schema: {
      ...z.toJSONSchema(z.object(stackShape).strict(), { io: 'input' }),
      properties: {
        ...(z.toJSONSchema(z.object(stackShape), { io: 'input' }) as { properties: object })
          .properties,
        children: {
          type: 'array',
          maxItems: 100,
          items: { description: 'a component of the palette', type: 'object' },
        },
      },
      required: ['type', 'children'],
    },
  };
  return [
    stack,
    ...[...leafTypes].map(([type, schema]) => ({
      type,
      description: schema.meta()?.description ?? type,
      schema: z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }),
    })),
  ];
}

/** Every component type the palette has. */
export function paletteTypes(): string[] {
  return ['stack', ...leafTypes.keys()];
}

/** The forms of a document, by name. */
export function formsOf(document: PanelComponent): Map<string, z.infer<typeof form>> {
  const forms = new Map<string, z.infer<typeof form>>();
  const visit = (component: PanelComponent) => {
    if (component.type === 'form') forms.set(component.name, component);
    if (component.type === 'stack') component.children.forEach(visit);
  };
  visit(document);
  return forms;
}

export type PanelForm = z.infer<typeof form>;

export const panelScope = z.enum(['session', 'workspace']);

/** A panel as the API shows it (`GET /api/v1/panels/{id}`). */
export const panelView = z
  .object({
    id: z.string(),
    owner: z.string(),
    workspace_id: z.string().nullable(),
    scope: panelScope,
    session_id: z.string().nullable().meta({
      description: "a session panel's conversation; else the one its forms submit to",
    }),
    title: z.string(),
    channel: z.string(),
    document: z.record(z.string(), z.unknown()).meta({ description: 'a palette component' }),
    created_at: z.string().meta({ format: 'date-time' }),
    updated_at: z.string().meta({ format: 'date-time' }),
  })
  .meta({ id: 'Panel' });

export type PanelView = Omit<z.infer<typeof panelView>, 'document'> & { document: PanelComponent };
