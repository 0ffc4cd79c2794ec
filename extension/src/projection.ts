// Applies contextd's /context answer to the messages of Pi's context event.
// Pi's in-memory messages carry no entry ids, so contextd names each message
// by fields the message itself holds (coordinator.MessageKey): a boundary by
// its window id, an assistant message by one of its tool call ids, a branch
// summary by its fromId and the SHA-256 of its text. Nothing is guessed: a
// key that matches no message is an error.
import { createHash } from "node:crypto";

export interface MessageKey {
	role: "custom" | "assistant" | "branchSummary";
	custom_type?: string;
	window_id?: string;
	tool_call_id?: string;
	from_id?: string;
	summary_sha256?: string;
}

export interface Projection {
	start_at: MessageKey | null;
	drop: MessageKey[];
}

/** The minimal view of a Pi AgentMessage that keys are matched against. */
export interface KeyedMessage {
	role: string;
	customType?: string;
	details?: unknown;
	content?: unknown;
	fromId?: string;
	summary?: string;
}

export function sha256Hex(text: string): string {
	return createHash("sha256").update(text, "utf8").digest("hex");
}

export function matches(m: KeyedMessage, k: MessageKey): boolean {
	if (m.role !== k.role) return false;
	switch (k.role) {
		case "custom": {
			const cm = (m.details as { contextManagement?: { currentWindowId?: string } } | undefined)?.contextManagement;
			return m.customType === k.custom_type && cm?.currentWindowId === k.window_id;
		}
		case "assistant":
			return (
				Array.isArray(m.content) &&
				(m.content as { type?: string; id?: string }[]).some((c) => c.type === "toolCall" && c.id === k.tool_call_id)
			);
		case "branchSummary":
			return m.fromId === k.from_id && typeof m.summary === "string" && sha256Hex(m.summary) === k.summary_sha256;
	}
	return false;
}

function describe(k: MessageKey): string {
	switch (k.role) {
		case "custom":
			return `the ${k.custom_type} boundary of window ${k.window_id}`;
		case "assistant":
			return `the assistant message calling ${k.tool_call_id}`;
		case "branchSummary":
			return `the branch summary from ${k.from_id}`;
	}
	return JSON.stringify(k);
}

/**
 * Returns the messages to send: the Drop keys removed (each must match
 * exactly one message), then everything before StartAt cut. Errors name the
 * key that did not match.
 */
export function applyProjection<M extends KeyedMessage>(messages: M[], p: Projection): M[] {
	let out = messages;
	if (p.drop.length > 0) {
		const hits = p.drop.map(() => 0);
		out = out.filter((m) => {
			const i = p.drop.findIndex((k) => matches(m, k));
			if (i < 0) return true;
			hits[i]++;
			return false;
		});
		const bad = hits.findIndex((n) => n !== 1);
		if (bad >= 0) {
			throw new Error(`contextd names ${describe(p.drop[bad])} to hide, but the provider context holds ${hits[bad]} such messages`);
		}
	}
	if (p.start_at) {
		const start = p.start_at;
		const i = out.findIndex((m) => matches(m, start));
		if (i < 0) {
			throw new Error(`contextd says the context starts at ${describe(start)}, but the provider context holds no such message`);
		}
		out = out.slice(i);
	}
	return out;
}
