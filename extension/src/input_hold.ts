// Input that arrives while a rollover runs (docs/design.md §5.3.1 "Input waits
// for the new window"), as a pure reducer: Pi's event handlers in index.ts
// feed it and do what it answers. What the person types (a steer, a
// follow-up, or a prompt while a Tree summary runs) from the end of the
// message that calls new_context until the new window's boundary is
// delivered is held, then queued again as it was typed, after the
// boundary, so it reaches the model in the new window. Pi queues input in
// arrival order and polls steers only after a turn_end (pi-agent-core
// runLoop), so a steer held until then and queued again lands where Pi
// would have delivered it, but after the boundary.

/** How Pi delivers input typed while the agent streams: as a steer (after the running tool batch) or a follow-up (after the run). */
export type Delivery = "steer" | "followUp";

/** One held input, as Pi's input event gave it. */
export interface HeldInput {
	text: string;
	images?: unknown[];
	deliverAs: Delivery;
}

/** The input-hold state during a rollover (immutable; each function returns a new one). */
export interface InputHold {
	/** Input is being held. */
	readonly holding: boolean;
	/** Held input, in arrival order. */
	readonly held: readonly HeldInput[];
	/** Texts this extension queued again: their input events pass (once each). */
	readonly own: readonly string[];
	/** The person was told that input is held (once per hold). */
	readonly told: boolean;
}

/** The state with nothing held and no hold in force. */
export const emptyHold: InputHold = { holding: false, held: [], own: [], told: false };

/** The one sentence the person is shown when their input is held. */
export const HELD_NOTICE = "contextd: a new context window is opening; your message is held and sent to the model in the new window";

/** Whether a message (Pi's message_end) is an assistant message that calls new_context. */
export function callsNewContext(message: { role?: string; content?: unknown }): boolean {
	if (message.role !== "assistant" || !Array.isArray(message.content)) return false;
	return message.content.some((c) => (c as { type?: string; name?: string }).type === "toolCall" && (c as { name?: string }).name === "new_context");
}

/** Starts holding (the message that calls new_context ended). */
export function startHold(h: InputHold): InputHold {
	return h.holding ? h : { ...h, holding: true, told: false };
}

/** The fields of Pi's input event the hold reads: the text, images, source ("extension" for our own sendUserMessage) and streaming behaviour. */
export interface InputEvent {
	text: string;
	images?: unknown[];
	source?: string;
	streamingBehavior?: Delivery;
}

/** What to do with one input event: the new hold state, the answer for Pi's input handler and an optional notice. */
export interface InputDecision {
	hold: InputHold;
	action: "continue" | "handled";
	/** Show this to the person (info). */
	notice?: string;
}

/**
 * Pi's input event: input this extension queued again passes; while
 * holding, any other input (the person's, another extension's) is held
 * and handled. Input that is not streaming (a prompt while a Tree summary
 * runs) is released as a follow-up.
 */
export function onInput(h: InputHold, e: InputEvent): InputDecision {
	if (e.source === "extension") {
		const i = h.own.indexOf(e.text);
		if (i >= 0) return { hold: { ...h, own: [...h.own.slice(0, i), ...h.own.slice(i + 1)] }, action: "continue" };
	}
	if (!h.holding) return { hold: h, action: "continue" };
	const held: HeldInput = { text: e.text, deliverAs: e.streamingBehavior ?? "followUp", ...(e.images?.length ? { images: e.images } : {}) };
	return { hold: { ...h, held: [...h.held, held], told: true }, action: "handled", notice: h.told ? undefined : HELD_NOTICE };
}

/** The end of a hold: the new state (not holding; the re-queued texts listed in own so their input events pass) and the held input to queue again, in arrival order. */
export interface Release {
	hold: InputHold;
	/** Queue each with pi.sendUserMessage(content, {deliverAs}), in order. */
	send: HeldInput[];
}

/**
 * Stops holding and answers the held input to queue again; as is the
 * delivery for all of it (Tree: followUp, after the boundary's run
 * started), else each keeps the one it was typed with.
 */
export function releaseHold(h: InputHold, as?: Delivery): Release {
	const send = h.held.map((i) => (as ? { ...i, deliverAs: as } : i));
	return { hold: { holding: false, held: [], own: [...h.own, ...send.map((s) => s.text)], told: false }, send };
}
