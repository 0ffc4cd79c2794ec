// Applies contextd's /context answer to the messages of Pi's context event.
// Pi's in-memory messages carry no entry ids, so contextd names each message
// by fields the message itself holds (coordinator.MessageKey): a boundary by
// its window id, an assistant message by one of its tool call ids, a branch
// summary by its fromId and the SHA-256 of its text, a tool result by its
// toolCallId and its rank among the event's results with that id. Nothing
// is guessed: a key that matches no message is an error. contextd's answer
// already obeys the tool-call pairing rule (coordinator.PlanPairing); this
// file only applies it.
import { createHash } from "node:crypto";
import type { Schemas } from "./client.ts";

/** How contextd names one message of the context event by fields the message holds (coordinator.MessageKey). */
export type MessageKey = Schemas["CoordinatorMessageKey"];

/** Moves message to just after after (applied in order, after the drops). */
export type MoveStep = Schemas["CoordinatorMoveStep"];

/** contextd's /context answer for the provider context: where it starts, what is hidden, what moves. */
export type Projection = Schemas["CoordinatorProjection"];

/** The minimal view of a Pi AgentMessage that keys are matched against. */
export interface KeyedMessage {
	role: string;
	customType?: string;
	details?: unknown;
	content?: unknown;
	fromId?: string;
	summary?: string;
	toolCallId?: string;
}

/** The lowercase hex SHA-256 of text's UTF-8 bytes (branch-summary keys). */
export function sha256Hex(text: string): string {
	return createHash("sha256").update(text, "utf8").digest("hex");
}

/**
 * Whether m matches k. rank is m's 1-based rank among the event's messages
 * with the same toolCallId (only toolResult keys use it).
 */
export function matches(m: KeyedMessage, k: MessageKey, rank = 1): boolean {
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
		case "toolResult":
			return m.toolCallId === k.tool_call_id && rank === (k.occurrence ?? 1);
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
		case "toolResult":
			return `result ${k.occurrence ?? 1} of tool call ${k.tool_call_id}`;
	}
	return JSON.stringify(k);
}

/**
 * Returns the messages to send: everything before StartAt cut, then the
 * Drop keys removed (each must match exactly one message), then each Move
 * applied in order. A tool result's rank counts the messages StartAt kept.
 * Errors name the key that did not match.
 */
export function applyProjection<M extends KeyedMessage>(messages: M[], p: Projection): M[] {
	let kept = messages;
	if (p.start_at) {
		const start = p.start_at;
		const i = kept.findIndex((m) => matches(m, start));
		if (i < 0) {
			throw new Error(`contextd says the context starts at ${describe(start)}, but the provider context holds no such message`);
		}
		kept = kept.slice(i);
	}
	const seen = new Map<string, number>();
	let out = kept.map((m) => {
		let rank = 1;
		if (m.role === "toolResult" && typeof m.toolCallId === "string") {
			rank = (seen.get(m.toolCallId) ?? 0) + 1;
			seen.set(m.toolCallId, rank);
		}
		return { m, rank };
	});
	if (p.drop.length > 0) {
		const hits = p.drop.map(() => 0);
		out = out.filter(({ m, rank }) => {
			const i = p.drop.findIndex((k) => matches(m, k, rank));
			if (i < 0) return true;
			hits[i]++;
			return false;
		});
		const bad = hits.findIndex((n) => n !== 1);
		if (bad >= 0) {
			throw new Error(`contextd names ${describe(p.drop[bad])} to hide, but the provider context holds ${hits[bad]} such messages`);
		}
	}
	for (const step of p.move ?? []) {
		const i = out.findIndex(({ m, rank }) => matches(m, step.message, rank));
		if (i < 0) throw new Error(`contextd moves ${describe(step.message)}, but the provider context holds no such message`);
		const [moved] = out.splice(i, 1);
		const j = out.findIndex(({ m, rank }) => matches(m, step.after, rank));
		if (j < 0) throw new Error(`contextd moves a message after ${describe(step.after)}, but the provider context holds no such message`);
		out.splice(j + 1, 0, moved);
	}
	return out.map(({ m }) => m);
}
