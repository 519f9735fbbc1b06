/**
 * The folded prompt (RUNTIME.md, "fold the burst"): several inputs that arrived while the
 * agent was busy become one user message that labels each input with its number and
 * author and asks the model to address every one. A single input is passed as it is.
 * The demo model parses this format back to answer each input separately.
 */
export interface FoldedInput {
  author: string;
  content: string;
}

const header = (count: number) =>
  `You received ${count} messages since your last reply. Address each of them, in order, labelling each part of your answer with the message's number.`;

export function foldInputs(inputs: FoldedInput[]): string {
  if (inputs.length === 1) return (inputs[0] as FoldedInput).content;
  const parts = inputs.map(
    (input, index) =>
      `<message n="${index + 1}" author="${escape(input.author)}">\n${escape(input.content)}\n</message>`,
  );
  return `${header(inputs.length)}\n\n${parts.join('\n')}`;
}

export function unfoldInputs(text: string): FoldedInput[] {
  const pattern = /<message n="\d+" author="([^"]*)">\n([\s\S]*?)\n<\/message>/g;
  const inputs = [...text.matchAll(pattern)].map((match) => ({
    author: unescape(match[1] ?? ''),
    content: unescape(match[2] ?? ''),
  }));
  return inputs.length > 0 && text.startsWith(header(inputs.length))
    ? inputs
    : [{ author: '', content: text }];
}

function escape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('"', '&quot;');
}

function unescape(text: string): string {
  return text.replaceAll('&quot;', '"').replaceAll('&lt;', '<').replaceAll('&amp;', '&');
}
