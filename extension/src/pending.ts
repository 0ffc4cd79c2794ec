// A new rollover refused because another one is open (contextd's problem
// code rollover_pending, 409; coordinator/stale.go says which open
// rollovers contextd drops on its own). contextd's sentence names HTTP
// routes for API clients; the model and the person are told in their own
// terms instead, one sentence each, and never shown a route or curl.
import { ContextdError } from "./client.ts";

/** Whether err is contextd's refusal of a new rollover while another one is open. */
export function isRolloverPending(err: unknown): boolean {
	return err instanceof ContextdError && err.code === "rollover_pending";
}

/** The new_context result the model gets when the rollover is refused: it stays in its window. */
export const PENDING_FOR_MODEL =
	"The new context window did not open: an earlier new_context was interrupted and is not finished yet, so you are still in the same context window; go on with the task here.";

/** What the person is told when new_context or /contextd new is refused. */
export const PENDING_FOR_PERSON = "contextd: an interrupted rollover keeps a new context window from starting; run /contextd finish, then the model's next new_context (or /contextd new) starts it";

/** The new_context tool result of a refusal (isRolloverPending), details.rollover_pending set. */
export function pendingResult(): { content: { type: "text"; text: string }[]; details: { refused: true; rollover_pending: true } } {
	return { content: [{ type: "text", text: PENDING_FOR_MODEL }], details: { refused: true, rollover_pending: true } };
}
