// Reads of Pi's active branch the installers share: the current window
// identity and the leaf contextd may be asked about. Pure functions over
// the entries Pi's SessionManager returns.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { identityOf, type WindowIdentity } from "./windows.ts";

/** The subset of a Pi session entry these reads look at. */
export interface BranchEntry {
	type: string;
	customType?: string;
	details?: unknown;
	message?: { role?: string };
}

/** The window identity of the latest boundary on a branch (root first); undefined when it has none. */
export function branchIdentity(branch: readonly BranchEntry[]): WindowIdentity | undefined {
	let id: WindowIdentity | undefined;
	for (const e of branch) {
		if (e.type === "custom_message") id = identityOf(e) ?? id;
	}
	return id;
}

/**
 * The current window on a branch (root first) when it holds nothing to
 * close: no entry after its boundary (the last window custom_message) is
 * a message, another custom message, a branch summary or a compaction.
 * Pi's navigateTree writes no branch summary of a branch without messages,
 * so a Tree rollover of such a window fails half-way, and a Local one
 * would open a window after an empty one. Undefined when the window holds
 * some work, or when the branch has no boundary.
 */
export function emptyWindow(branch: readonly BranchEntry[]): WindowIdentity | undefined {
	for (let i = branch.length - 1; i >= 0; i--) {
		const e = branch[i]!;
		if (e.type === "custom_message") return identityOf(e);
		if (e.type === "message" || e.type === "branch_summary" || e.type === "compaction") return undefined;
	}
	return undefined;
}

/**
 * The leaf contextd may read: {leaf_id} when Pi's live leaf is on disk,
 * else {}. Pi 0.85 holds a new session's entries in memory until the first
 * assistant message (docs/pi-facts.md "When entries reach the file"); Pi 1
 * writes every entry at once.
 */
export function leafBody(piVersion: string, leaf: string | null | undefined, entries: readonly BranchEntry[]): { leaf_id?: string } {
	if (!leaf) return {};
	const onDisk = piVersion.split(".")[0] !== "0" || entries.some((e) => e.type === "message" && e.message?.role === "assistant");
	return onDisk ? { leaf_id: leaf } : {};
}

/** leafBody of ctx's session. */
export function ctxLeafBody(piVersion: string, ctx: ExtensionContext): { leaf_id?: string } {
	const sm = ctx.sessionManager;
	return leafBody(piVersion, sm.getLeafId(), sm.getEntries() as BranchEntry[]);
}
