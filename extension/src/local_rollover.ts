// A Local rollover (docs/design.md §5.3.1 "One rollover per message",
// "After the whole batch"): new_context opens the rollover in its tool
// phase (rollover-create; further new_context calls of the message join
// it), and at the batch's turn_end, when every call of the message has its
// result in the session, this settles and commits it and steers the
// boundary contextd planned, so the boundary is the next message the model
// sees. Pi's objects are passed in, so this runs in unit tests.

import type { RequestBody, Result } from "./client.ts";
import { notOpenedText, type RolloverOp, withoutRoutes } from "./rollover.ts";

/** What a Local rollover needs from index.ts: contextd's rollover calls and Pi's leaf and message API. */
export interface LocalRolloverDeps {
	/** Calls operation op of this rollover (session and rollover ids filled in); rejects with an Error saying what failed. */
	call<K extends RolloverOp>(op: K, body: RequestBody<K>): Promise<Result<K>>;
	/** Pi's live leaf when it is on disk ({} otherwise). */
	leafBody(): { leaf_id?: string };
	/** pi.sendMessage with deliverAs steer. */
	steer(m: { customType: string; content: string; display: boolean; details: unknown }): void;
	notifyError(message: string): void;
	/** Tells the model (a steered custom message). */
	tellModel(text: string): void;
	/** Resolves when the commit may go on; the test-only hold of e2e_hold.ts (absent: no pause). */
	beforeCommit?(): Promise<void>;
}

/**
 * Settles and commits the rollover and steers its boundary. On failure the
 * rollover is aborted, the person is told in one sentence, the model is
 * told it stays in its window, and it answers "failed".
 */
export async function runLocalRollover(d: LocalRolloverDeps): Promise<"steered" | "failed"> {
	try {
		await d.call("rollover-settle", d.leafBody() as RequestBody<"rollover-settle">);
		await d.beforeCommit?.();
		const commit = await d.call("rollover-commit", {} as RequestBody<"rollover-commit">);
		for (const e of commit.append) {
			if (e.type === "custom_message") d.steer({ customType: e.customType, content: e.content ?? "", display: e.display ?? true, details: e.details });
		}
		return "steered";
	} catch (err) {
		try {
			await d.call("rollover-abort", { reason: (err as Error).message.slice(0, 1000) } as RequestBody<"rollover-abort">);
		} catch {
			// contextd keeps the rollover inspectable; the UI error says what happened
		}
		d.notifyError(`contextd: new context failed: ${withoutRoutes((err as Error).message)}; the model stays in its current window`);
		d.tellModel(notOpenedText((err as Error).message));
		return "failed";
	}
}
