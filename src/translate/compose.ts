/**
 * @module Two translations in a row through Anthropic Messages: a client's translation to Messages in front of a
 * Messages client's translation to the upstream, for pairs that have no translator of their own.
 */
import type { Translation } from "./identity.ts";

/** `outer` (client <-> Messages) in front of `inner` (Messages <-> upstream): requests go in, answers come back out. */
export function throughMessages(outer: Translation, inner: Translation): Translation {
  return {
    request: (body) => inner.request(outer.request(body)),
    response: (body) => outer.response(inner.response(body)),
    stream() {
      const first = inner.stream!();
      const second = outer.stream!();
      return {
        next: (message) => first.next(message).flatMap((event) => second.next(event)),
        end: () => [...first.end().flatMap((event) => second.next(event)), ...second.end()],
        fail: second.fail,
      };
    },
    // A second try is the upstream's request without what it refused, so only the inner translation can make it.
    recover: inner.recover,
  };
}
