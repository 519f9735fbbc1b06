import { useState } from 'react';
import type { ParleyClient } from 'parley/client';
import { objectUrlOf } from './media';

/**
 * Replies read aloud as they stream. The reply's text is cut into sentences as they
 * complete; each is sent to `POST /api/v1/speech` at once (so the clips are made while the
 * reply goes on) and the clips play one after the other, in order, in one `<audio>`.
 *
 * Glossary: a *clip* is the audio of one sentence (or one notice).
 */

/** Where a sentence ends: `.`, `!`, `?` (and closing quotes or brackets) before a space. */
const sentenceEnd = /[.!?…]+["'”’)\]]*(?=\s)|\n/g;

/** Splits off the complete sentences of `text`; `rest` is what is not complete yet. */
export function completeSentences(text: string): { sentences: string[]; rest: string } {
  const sentences: string[] = [];
  let start = 0;
  for (const match of text.matchAll(sentenceEnd)) {
    const end = match.index + match[0].length;
    const sentence = text.slice(start, end).trim();
    if (sentence !== '') sentences.push(sentence);
    start = end;
  }
  return { sentences, rest: text.slice(start) };
}

/** Text read aloud must not read markdown's marks ("asterisk asterisk"). */
function spoken(text: string): string {
  return text.replace(/[*_`#>|~]+/g, '').trim();
}

export class SpeechQueue {
  private clips: Promise<string | null>[] = [];
  private playing = false;
  private generation = 0;
  /** Turn id → its text streamed and not spoken yet. */
  private pending = new Map<string, string>();

  constructor(
    private readonly client: ParleyClient,
    private readonly audio: () => HTMLAudioElement | null,
    private readonly onError: (message: string) => void,
  ) {}

  /** Some text of a reply streamed: its complete sentences are queued, in `voice`. */
  add(turnId: string, delta: string, voice?: string | null): void {
    const { sentences, rest } = completeSentences((this.pending.get(turnId) ?? '') + delta);
    this.pending.set(turnId, rest);
    for (const sentence of sentences) this.say(sentence, voice);
  }

  /** The reply ended: what is left of it is queued. */
  finish(turnId: string, voice?: string | null): void {
    const rest = this.pending.get(turnId) ?? '';
    this.pending.delete(turnId);
    this.say(rest, voice);
  }

  /** The attempt's text was dropped (a retry): so is what of it was not spoken yet. */
  drop(turnId: string): void {
    this.pending.delete(turnId);
  }

  /** Queues a text in `voice` (the server's default voice without one). */
  say(text: string, voice?: string | null): void {
    const words = spoken(text);
    if (words === '') return;
    const clip = this.client
      .speak(words, voice ? { voice } : {})
      .then(objectUrlOf)
      .catch((error: unknown) => {
        this.onError((error as { code?: string }).code ?? 'speech_failed');
        return null;
      });
    this.clips.push(clip);
    if (!this.playing) void this.play(this.generation);
  }

  /** Stops reading: what is queued is dropped. */
  stop(): void {
    this.generation += 1;
    this.clips = [];
    this.pending.clear();
    this.playing = false;
    this.audio()?.pause();
  }

  private async play(generation: number): Promise<void> {
    this.playing = true;
    while (generation === this.generation && this.clips.length > 0) {
      const url = await this.clips.shift()!;
      const audio = this.audio();
      if (url === null || audio === null || generation !== this.generation) continue;
      await playToEnd(audio, url);
      URL.revokeObjectURL(url);
    }
    if (generation === this.generation) this.playing = false;
  }
}

/** Plays `url` in `audio`; resolves when it ended, failed, or was stopped. */
function playToEnd(audio: HTMLAudioElement, url: string): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      audio.removeEventListener('ended', done);
      audio.removeEventListener('error', done);
      audio.removeEventListener('pause', done);
      resolve();
    };
    audio.addEventListener('ended', done);
    audio.addEventListener('error', done);
    audio.addEventListener('pause', done);
    audio.src = url;
    // A browser that refuses to play without a gesture: the clip is skipped.
    audio.play().catch(done);
  });
}

/**
 * "Read replies aloud": kept in this browser (local storage). The preferences have no key
 * for it, and whether a device may speak is the device's own matter.
 */
const readAloudKey = 'parley.readAloud';

export function useReadAloud(): [boolean, (on: boolean) => void] {
  const [on, setOn] = useState(() => {
    try {
      return localStorage.getItem(readAloudKey) === 'on';
    } catch {
      return false;
    }
  });
  return [
    on,
    (next) => {
      setOn(next);
      try {
        localStorage.setItem(readAloudKey, next ? 'on' : 'off');
      } catch {
        // not kept: this page still follows it
      }
    },
  ];
}
