/** Per-process error state that a vendor keeps from its calls' answers (HIP's last error, ACL's recent message). */

/** What to do around each call: before it runs, and with its answer. */
export interface AnswerHooks {
  readonly before?: () => void;
  readonly after: (name: string, answer: unknown) => void;
}

/**
 * Wrap each named method of `target` (one process, one thread) so the hooks
 * run around every call of it. Fixed arguments, not a rest array: V8 calls
 * through this without allocating; no vendor call takes more than six.
 */
export function watchAnswers(target: object, names: readonly string[], hooks: AnswerHooks): void {
  const methods = target as Record<string, (...args: unknown[]) => unknown>;
  const { before, after } = hooks;
  for (const name of names) {
    const method = methods[name];
    if (typeof method !== 'function') continue;
    methods[name] = (a?: unknown, b?: unknown, c?: unknown, d?: unknown, e?: unknown, f?: unknown) => {
      before?.();
      const answer = method.call(target, a, b, c, d, e, f);
      after(name, answer);
      return answer;
    };
  }
}
