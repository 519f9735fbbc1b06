/** Polls until `ok(value)`; fails with `what` after a generous time (the machine is shared). */
export async function until<T>(
  probe: () => T | Promise<T>,
  ok: (value: T) => boolean,
  what: string,
  timeoutMs = 45_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
