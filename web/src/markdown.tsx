/**
 * A small markdown renderer that builds React elements, never HTML strings: whatever a
 * model or another participant writes (`<img src=x onerror=...>` included) can only ever
 * become text. Covers what chat replies use: paragraphs, line breaks, headings, lists,
 * quotes, fenced code, inline code, bold, italic and links (http, https and mailto only).
 */
import { Fragment, type ReactNode } from 'react';

type Block =
  | { kind: 'code'; lang: string; text: string }
  | { kind: 'heading'; level: number; text: string }
  | { kind: 'list'; ordered: boolean; items: string[] }
  | { kind: 'quote'; text: string }
  | { kind: 'paragraph'; text: string };

export function parseBlocks(source: string): Block[] {
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  const blocks: Block[] = [];
  let index = 0;
  while (index < lines.length) {
    const line = lines[index] as string;
    const fence = /^\s*(```|~~~)\s*([\w+-]*)\s*$/.exec(line);
    if (fence) {
      const body: string[] = [];
      index++;
      while (
        index < lines.length &&
        !(lines[index] as string).trim().startsWith(fence[1] as string)
      ) {
        body.push(lines[index] as string);
        index++;
      }
      index++; // the closing fence (or the end: an unclosed fence still streams as code)
      blocks.push({ kind: 'code', lang: fence[2] ?? '', text: body.join('\n') });
      continue;
    }
    if (line.trim() === '') {
      index++;
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      blocks.push({
        kind: 'heading',
        level: (heading[1] as string).length,
        text: heading[2] ?? '',
      });
      index++;
      continue;
    }
    const listItem = /^\s*([-*+]|\d{1,9}[.)])\s+(.*)$/;
    const first = listItem.exec(line);
    if (first) {
      const ordered = /\d/.test(first[1] as string);
      const items: string[] = [];
      while (index < lines.length) {
        const match = listItem.exec(lines[index] as string);
        if (!match || /\d/.test(match[1] as string) !== ordered) break;
        items.push(match[2] ?? '');
        index++;
      }
      blocks.push({ kind: 'list', ordered, items });
      continue;
    }
    if (/^\s*>/.test(line)) {
      const quoted: string[] = [];
      while (index < lines.length && /^\s*>/.test(lines[index] as string)) {
        quoted.push((lines[index] as string).replace(/^\s*>\s?/, ''));
        index++;
      }
      blocks.push({ kind: 'quote', text: quoted.join('\n') });
      continue;
    }
    const paragraph: string[] = [];
    while (
      index < lines.length &&
      (lines[index] as string).trim() !== '' &&
      !/^\s*(```|~~~)/.test(lines[index] as string) &&
      !/^#{1,6}\s/.test(lines[index] as string) &&
      !(paragraph.length > 0 && listItem.test(lines[index] as string))
    ) {
      paragraph.push(lines[index] as string);
      index++;
    }
    blocks.push({ kind: 'paragraph', text: paragraph.join('\n') });
  }
  return blocks;
}

const safeHref = /^(https?:\/\/|mailto:)/i;

/** Inline spans: code first (its content is literal), then links, bold, italic. */
export function renderInline(text: string, keyPrefix = 'i'): ReactNode[] {
  const out: ReactNode[] = [];
  const pattern =
    /(`+)([\s\S]*?[^`])\1(?!`)|\[([^\]\n]+)\]\(([^)\s]+)\)|\*\*([^*\n]+)\*\*|(?<![^\s(])__([^_\n]+)__(?![\w])|\*([^*\n]+)\*|(?<![^\s(])_([^_\n]+)_(?![\w])|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])|\n/g;
  let last = 0;
  let count = 0;
  for (const match of text.matchAll(pattern)) {
    const at = match.index ?? 0;
    if (at > last) out.push(text.slice(last, at));
    const key = `${keyPrefix}${count++}`;
    if (match[2] !== undefined) {
      out.push(<code key={key}>{match[2]}</code>);
    } else if (match[3] !== undefined) {
      const href = match[4] ?? '';
      out.push(
        safeHref.test(href) ? (
          <a key={key} href={href} target="_blank" rel="noopener noreferrer nofollow">
            {renderInline(match[3], `${key}.`)}
          </a>
        ) : (
          <Fragment key={key}>{match[0]}</Fragment>
        ),
      );
    } else if (match[5] !== undefined || match[6] !== undefined) {
      out.push(<strong key={key}>{renderInline(match[5] ?? match[6] ?? '', `${key}.`)}</strong>);
    } else if (match[7] !== undefined || match[8] !== undefined) {
      out.push(<em key={key}>{renderInline(match[7] ?? match[8] ?? '', `${key}.`)}</em>);
    } else if (match[9] !== undefined) {
      out.push(
        <a key={key} href={match[9]} target="_blank" rel="noopener noreferrer nofollow">
          {match[9]}
        </a>,
      );
    } else {
      out.push(<br key={key} />);
    }
    last = at + match[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

export function Markdown({ source }: { source: string }) {
  return (
    <div className="markdown">
      {parseBlocks(source).map((block, index) => {
        const key = `b${index}`;
        switch (block.kind) {
          case 'code':
            return (
              <pre key={key} data-lang={block.lang || undefined}>
                <code>{block.text}</code>
              </pre>
            );
          case 'heading': {
            const Tag = `h${Math.min(6, block.level + 2)}` as 'h3';
            return <Tag key={key}>{renderInline(block.text, `${key}.`)}</Tag>;
          }
          case 'list': {
            const Tag = block.ordered ? 'ol' : 'ul';
            return (
              <Tag key={key}>
                {block.items.map((item, itemIndex) => (
                  <li key={itemIndex}>{renderInline(item, `${key}.${itemIndex}.`)}</li>
                ))}
              </Tag>
            );
          }
          case 'quote':
            return <blockquote key={key}>{renderInline(block.text, `${key}.`)}</blockquote>;
          default:
            return <p key={key}>{renderInline(block.text, `${key}.`)}</p>;
        }
      })}
    </div>
  );
}
