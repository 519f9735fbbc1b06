import { FakePlatform } from './server.js';

export interface TelegramMessage {
  message_id: number;
  chat_id: string;
  text: string;
  reply_markup: any;
  history: string[];
  /** When the fake received the post (epoch ms): the soak measures duplicate windows. */
  posted_at: number;
}

/** The Bot API as Parley uses it: getMe, sendMessage, editMessageText, typing, callbacks. */
export class FakeTelegram {
  readonly messages: TelegramMessage[] = [];
  readonly actions: { chat_id: string; action: string }[] = [];
  private readonly files = new Map<string, string>();
  private next = 700;

  constructor(
    readonly server: FakePlatform,
    readonly token: string,
  ) {
    const ok = (result: unknown) => ({ json: { ok: true, result } });
    const wire = (message: TelegramMessage) => ({
      message_id: message.message_id,
      date: Math.floor(Date.now() / 1000),
      chat: { id: Number(message.chat_id), type: 'private' },
      from: { id: 999, is_bot: true, first_name: 'Parley', username: 'parley_bot' },
      text: message.text,
    });
    const base = `/bot${token}`;
    server
      .on(`POST ${base}/getMe`, () =>
        ok({ id: 999, is_bot: true, first_name: 'Parley', username: 'parley_bot' }),
      )
      .on(`POST ${base}/getFile`, (call) => {
        const path = this.files.get(String(call.body.file_id));
        if (path === undefined) {
          return {
            status: 400,
            json: { ok: false, error_code: 400, description: 'Bad Request: invalid file_id' },
          };
        }
        return ok({
          file_id: call.body.file_id,
          file_unique_id: `u${call.body.file_id}`,
          file_path: path,
        });
      })
      .on(`POST ${base}/sendMessage`, (call) => {
        const message: TelegramMessage = {
          message_id: this.next++,
          chat_id: String(call.body.chat_id),
          text: call.body.text,
          reply_markup: call.body.reply_markup,
          history: [call.body.text],
          posted_at: Date.now(),
        };
        this.messages.push(message);
        return ok(wire(message));
      })
      .on(`POST ${base}/editMessageText`, (call) => {
        // This Bot API has no rich messages (sendRichMessage is not found either): an
        // edit carrying one is refused as Telegram refuses an unsupported field, so the
        // adapter falls back to text. Accepting it would record an edit without text.
        if (call.body.rich_message !== undefined) {
          return {
            status: 400,
            json: {
              ok: false,
              error_code: 400,
              description: 'Bad Request: rich message unsupported',
            },
          };
        }
        const message = this.messages.find(
          (candidate) =>
            candidate.chat_id === String(call.body.chat_id) &&
            candidate.message_id === Number(call.body.message_id),
        );
        if (!message) {
          return {
            status: 400,
            json: {
              ok: false,
              error_code: 400,
              description: 'Bad Request: message to edit not found',
            },
          };
        }
        message.text = call.body.text;
        message.reply_markup = call.body.reply_markup;
        message.history.push(call.body.text);
        return ok(wire(message));
      })
      .on(`POST ${base}/sendChatAction`, (call) => {
        this.actions.push({ chat_id: String(call.body.chat_id), action: call.body.action });
        return ok(true);
      })
      .on(`POST ${base}/answerCallbackQuery`, () => ok(true));
  }

  /**
   * A file users sent (a photo): `getFile` names its path, and the Bot API's file
   * download (`GET /file/bot<token>/<path>`) answers its bytes.
   */
  addFile(fileId: string, bytes: Buffer, contentType = 'image/jpeg'): void {
    const path = `photos/${fileId}.bin`;
    this.server.on(`GET /file/bot${this.token}/${path}`, () => ({
      raw: bytes,
      headers: { 'content-type': contentType, 'content-length': String(bytes.byteLength) },
    }));
    this.files.set(fileId, path);
  }

  static async start(token: string): Promise<FakeTelegram> {
    return new FakeTelegram(await FakePlatform.start(), token);
  }

  inChat(chatId: string): TelegramMessage[] {
    return this.messages.filter((message) => message.chat_id === chatId);
  }

  close(): Promise<void> {
    return this.server.close();
  }
}

/** An update carrying a private message. */
export function telegramMessageUpdate(input: {
  updateId: number;
  chatId: number;
  messageId: number;
  userId: number;
  text: string;
  /** A photo (its file id and size): the text is then its caption. */
  photo?: { fileId: string; size: number };
}): string {
  const { photo } = input;
  return JSON.stringify({
    update_id: input.updateId,
    message: {
      message_id: input.messageId,
      date: Math.floor(Date.now() / 1000),
      chat: { id: input.chatId, type: 'private', first_name: 'User' },
      from: { id: input.userId, is_bot: false, first_name: `User${input.userId}` },
      ...(photo === undefined
        ? { text: input.text }
        : {
            ...(input.text === '' ? {} : { caption: input.text }),
            photo: [
              {
                file_id: photo.fileId,
                file_unique_id: `u${photo.fileId}`,
                width: 64,
                height: 64,
                file_size: photo.size,
              },
            ],
          }),
    },
  });
}

/** An update carrying an inline keyboard press. */
export function telegramCallbackUpdate(input: {
  updateId: number;
  chatId: number;
  messageId: number;
  userId: number;
  data: string;
}): string {
  return JSON.stringify({
    update_id: input.updateId,
    callback_query: {
      id: `cb${input.updateId}`,
      from: { id: input.userId, is_bot: false, first_name: `User${input.userId}` },
      chat_instance: 'ci',
      data: input.data,
      message: {
        message_id: input.messageId,
        date: Math.floor(Date.now() / 1000),
        chat: { id: input.chatId, type: 'private' },
      },
    },
  });
}
