/**
 * A synthesis that failed on the provider's side (HTTP status, exit code, deadline, size):
 * the API answers 502 `speech_failed` with this message, which never holds a secret nor
 * a provider's body.
 */
export class SpeechFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SpeechFailure';
  }
}
