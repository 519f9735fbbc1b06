/**
 * The title of a session a turn creates: its message's first line, at most 80 characters
 * (cut at a word where one is near, with an ellipsis); null for a message with no text.
 */
export function titleFrom(message: string): string | null {
  const line = message
    .split('\n')
    .map((each) => each.trim())
    .find((each) => each !== '');
  if (line === undefined) return null;
  const chars = [...line];
  if (chars.length <= 80) return line;
  const cut = chars.slice(0, 79).join('');
  const space = cut.lastIndexOf(' ');
  return `${(space >= 40 ? cut.slice(0, space) : cut).trimEnd()}…`;
}
