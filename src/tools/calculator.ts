import { validateArguments } from './validate.js';
import { ToolError, type Tool } from './types.js';

export const MAX_EXPRESSION_LENGTH = 200;

/*
 * A recursive-descent evaluator; it never uses eval or Function. Grammar:
 *   expression := term (('+' | '-') term)*
 *   term       := unary (('*' | '/' | '%') unary)*
 *   unary      := ('+' | '-') unary | power
 *   power      := primary ('^' unary)?          right-associative; -2^2 = -4, 2^-1 = 0.5
 *   primary    := number | '(' expression ')'
 *   number     := digits ['.' digits] | '.' digits, then optional [eE][+-]digits
 * Positions in messages are 1-based character columns.
 */
const NUMBER = /(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/y;

function invalid(message: string): ToolError {
  return new ToolError('invalid_expression', message);
}

function finite(value: number): number {
  if (!Number.isFinite(value)) throw invalid('the result is not a finite number');
  return value;
}

class Parser {
  private pos = 0;

  constructor(private readonly text: string) {}

  parse(): number {
    const value = this.expression();
    this.skipSpace();
    if (this.pos < this.text.length) throw this.unexpected();
    return value;
  }

  private expression(): number {
    let value = this.term();
    for (let op = this.accept('+-'); op; op = this.accept('+-')) {
      const right = this.term();
      value = finite(op === '+' ? value + right : value - right);
    }
    return value;
  }

  private term(): number {
    let value = this.unary();
    for (let op = this.accept('*/%'); op; op = this.accept('*/%')) {
      const right = this.unary();
      if (op === '*') value = finite(value * right);
      else if (right === 0) throw invalid('division by zero');
      else value = finite(op === '/' ? value / right : value % right);
    }
    return value;
  }

  private unary(): number {
    const op = this.accept('+-');
    if (op === '-') return -this.unary();
    if (op === '+') return this.unary();
    return this.power();
  }

  private power(): number {
    const base = this.primary();
    if (!this.accept('^')) return base;
    return finite(base ** this.unary());
  }

  private primary(): number {
    if (this.accept('(')) {
      const value = this.expression();
      if (!this.accept(')')) throw this.unexpected("')'");
      return value;
    }
    this.skipSpace();
    NUMBER.lastIndex = this.pos;
    const match = NUMBER.exec(this.text);
    if (!match) throw this.unexpected('a number');
    this.pos += match[0].length;
    return finite(Number(match[0]));
  }

  /** Consumes the next non-space character if it is one of `chars`. */
  private accept(chars: string): string | undefined {
    this.skipSpace();
    const char = this.text[this.pos];
    if (char === undefined || !chars.includes(char)) return undefined;
    this.pos += 1;
    return char;
  }

  private skipSpace(): void {
    while (/\s/.test(this.text[this.pos] ?? '')) this.pos += 1;
  }

  private unexpected(expected?: string): ToolError {
    const char = this.text[this.pos];
    const found = char === undefined ? 'end of expression' : `${JSON.stringify(char)}`;
    const wanted = expected ? `, expected ${expected}` : '';
    return invalid(`unexpected ${found} at position ${this.pos + 1}${wanted}`);
  }
}

/** Evaluates an arithmetic expression; throws ToolError('invalid_expression'). */
export function evaluate(expression: string): number {
  if (expression.length > MAX_EXPRESSION_LENGTH) {
    throw invalid(`expression must be at most ${MAX_EXPRESSION_LENGTH} characters`);
  }
  return new Parser(expression).parse() + 0; // + 0 turns -0 into 0
}

export const calculator: Tool = {
  name: 'calculator',
  description:
    'Evaluates an arithmetic expression: numbers, + - * / % ^ (power), unary minus and ' +
    'parentheses. Example: (2 + 3) * 4 ^ 2.',
  inputSchema: {
    type: 'object',
    properties: {
      expression: { type: 'string', maxLength: MAX_EXPRESSION_LENGTH },
    },
    required: ['expression'],
    additionalProperties: false,
  },
  async execute(args: unknown): Promise<{ expression: string; result: number }> {
    const bad = validateArguments(calculator, args);
    if (bad) throw bad;
    const { expression } = args as { expression: string };
    return { expression, result: evaluate(expression) };
  },
};
