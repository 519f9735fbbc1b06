const htmlOptions = {
  wordwrap: false as const,
  selectors: [
    { selector: 'img', format: 'skip' },
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true, ignoreHref: false } },
  ],
};

function decode(body: Uint8Array, contentType: string): string {
  const charset = /charset\s*=\s*"?([\w.:-]+)"?/i.exec(contentType)?.[1] ?? 'utf-8';
  try {
    return new TextDecoder(charset).decode(body);
  } catch {
    return new TextDecoder('utf-8').decode(body);
  }
}

/** Media types returned as text (besides `text/*`). */
function isTextual(mediaType: string): boolean {
  return (
    mediaType.startsWith('text/') ||
    /^application\/([\w.+-]+\+)?(json|xml)$/.test(mediaType) ||
    ['application/javascript', 'application/x-www-form-urlencoded', ''].includes(mediaType)
  );
}

/**
 * What the model reads of a response: HTML as readable text (html-to-text: headings,
 * lists, links with their targets; scripts, styles and images dropped), other text as
 * is, binary content not at all (`text: null`, with its type and size).
 */
export async function readableText(
  body: Uint8Array,
  contentType: string,
): Promise<{ text: string | null; format: 'html' | 'text' | 'binary' }> {
  const mediaType = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  if (mediaType === 'text/html' || mediaType === 'application/xhtml+xml') {
    // Loaded when first needed: it is not worth start-up time in every process.
    const { convert } = await import('html-to-text');
    return { text: convert(decode(body, contentType), htmlOptions), format: 'html' };
  }
  if (isTextual(mediaType)) return { text: decode(body, contentType), format: 'text' };
  return { text: null, format: 'binary' };
}
