// The Tree rollover across Pi events as a pure reducer: events in, actions
// out, no Pi and no timers here (tree.ts performs the actions).
//
// new_context (tool phase) plans a rollover; the next agent_settled runs its
// settled phase (rollover.ts). Input the user sends while a rollover runs
// (typed during the summarization) would start a run on the old branch, or
// run before the boundary's turn; it is held and delivered as a follow-up of
// the boundary's run, so it lands after the new boundary. The two Pis order
// the events differently (docs/pi-facts.md "Settled phase and input"):
//   - Pi 0.85 fires `input` at once and may start the boundary's run
//     (agent_start) while the settled handler still runs: the held input is
//     delivered when the rollover returns;
//   - Pi 1.6 defers both the user's prompt and the boundary's sendMessage
//     until the settled handlers have returned, in arrival order: input
//     stays held until the boundary's run starts (agent_start).
// Input is held from the end of the message that calls new_context (so a
// steer typed while the batch runs does not keep the closing window's run
// going, docs/design.md §5.3.1), through the settled phase.
// A failed or deferred rollover starts no run: held input is delivered at
// once. A completed one whose run never starts releases after HOLD_LIMIT_MS.

import { HELD_NOTICE } from "./input_hold.ts";

/** The longest input is held after a completed rollover whose boundary run has not started, in milliseconds. */
export const HOLD_LIMIT_MS = 10_000;

/** The settled phase's outcome (rollover.ts settleRollover). */
export type RolloverOutcome = "completed" | "failed" | "deferred";

/** One input the user sent while a rollover ran: Pi's InputEvent text and images. */
export interface HeldInput {
	text: string;
	images?: unknown[];
}

/** The Tree state of one session. Immutable: treeStep returns a new one. */
export interface TreeState {
	/** The rollover new_context planned, settled at the next agent_settled. */
	readonly pending: string | undefined;
	/** A settled phase runs or its boundary run has not started: input is held. */
	readonly rolling: boolean;
	/** The settled phase returned "completed"; the boundary's run has not started yet. */
	readonly settledDone: boolean;
	/** agent_start was seen while rolling, before the settled phase returned (Pi 0.85). */
	readonly runStarted: boolean;
	/** Input held while rolling, in arrival order. */
	readonly held: readonly HeldInput[];
	/** The message that calls new_context ended: input is held from then on (docs/design.md §5.3.1), until a turn_end without a rollover or the release. */
	readonly holding: boolean;
	/** The person was told that their input is held (once per hold). */
	readonly told: boolean;
	/** Counts settled phases, so a timer of an earlier one releases nothing. */
	readonly generation: number;
}

/** A Pi event (or the extension's own step) the reducer takes. */
export type TreeEvent =
	/** new_context's tool phase: contextd planned rollover `rolloverId`. */
	| { type: "planned"; rolloverId: string }
	/** Pi's message_end of an assistant message that calls new_context (input_hold.ts callsNewContext). */
	| { type: "called" }
	/** Pi's turn_end: the batch's results are all in the session. */
	| { type: "turn_end" }
	/** Pi's agent_settled. */
	| { type: "settled" }
	/** The settled phase of rollover `rolloverId` returned `outcome`. */
	| { type: "rolled"; rolloverId: string; outcome: RolloverOutcome }
	/** Pi's input event. */
	| { type: "input"; source: string; text: string; images?: unknown[] }
	/** Pi's agent_start. */
	| { type: "agent_start" }
	/** The HOLD_LIMIT_MS timer of settled phase `generation` fired. */
	| { type: "timeout"; generation: number };

/** What the reducer asks tree.ts to do, in order. */
export type TreeAction =
	/** Run the settled phase of rollover `rolloverId` (rollover.ts), then feed back a "rolled" event. */
	| { type: "settle"; rolloverId: string }
	/** Send each input as a follow-up user message (pi.sendUserMessage, deliverAs followUp). */
	| { type: "deliver"; inputs: HeldInput[] }
	/** Start the HOLD_LIMIT_MS timer; when it fires feed back {type: "timeout", generation}. */
	| { type: "timer"; ms: number; generation: number }
	/** The input handler's answer to Pi: let the input through, or it was handled (held). */
	| { type: "input"; action: "continue" | "handled" }
	/** Tell the person (info): their input is held (input_hold.ts HELD_NOTICE). */
	| { type: "notify"; message: string };

/** The state of a session before any rollover. */
export function initialTreeState(): TreeState {
	return { pending: undefined, rolling: false, settledDone: false, runStarted: false, held: [], holding: false, told: false, generation: 0 };
}

function release(s: TreeState): { state: TreeState; actions: TreeAction[] } {
	const next = { ...s, rolling: false, settledDone: false, runStarted: false, held: [], holding: false, told: false };
	return { state: next, actions: s.held.length > 0 ? [{ type: "deliver", inputs: [...s.held] }] : [] };
}

/** Applies one event: the next state and the actions to perform, in order. */
export function treeStep(s: TreeState, e: TreeEvent): { state: TreeState; actions: TreeAction[] } {
	switch (e.type) {
		case "planned":
			return { state: { ...s, pending: e.rolloverId }, actions: [] };
		case "called":
			return { state: { ...s, holding: true }, actions: [] };
		case "turn_end":
			// No rollover follows this batch (refused by the notes guard, or
			// failed): what was held goes out as it would have.
			if (s.holding && !s.rolling && s.pending === undefined) return release(s);
			return { state: s, actions: [] };
		case "settled":
			if (s.pending === undefined) return { state: s, actions: [] };
			return {
				state: { ...s, pending: undefined, rolling: true, settledDone: false, runStarted: false, generation: s.generation + 1 },
				actions: [{ type: "settle", rolloverId: s.pending }],
			};
		case "rolled": {
			// Deferred: calls of the leaf's batch have no result yet; settle
			// again at the next agent_settled (unless a new rollover was planned).
			const pending = e.outcome === "deferred" && s.pending === undefined ? e.rolloverId : s.pending;
			if (e.outcome !== "completed" || s.runStarted) {
				const r = release({ ...s, pending });
				return r;
			}
			return { state: { ...s, pending, settledDone: true }, actions: [{ type: "timer", ms: HOLD_LIMIT_MS, generation: s.generation }] };
		}
		case "input":
			// An extension's command (the capture) is never held; other
			// input is, whoever queued it (another extension's steer too).
			if (!(s.rolling || s.holding) || (e.source === "extension" && e.text.startsWith("/"))) return { state: s, actions: [{ type: "input", action: "continue" }] };
			return {
				state: { ...s, held: [...s.held, { text: e.text, images: e.images }], told: true },
				actions: s.told ? [{ type: "input", action: "handled" }] : [{ type: "notify", message: HELD_NOTICE }, { type: "input", action: "handled" }],
			};
		case "agent_start":
			if (!s.rolling) return { state: s, actions: [] };
			if (s.settledDone) return release(s);
			return { state: { ...s, runStarted: true }, actions: [] };
		case "timeout":
			if (s.rolling && s.settledDone && e.generation === s.generation) return release(s);
			return { state: s, actions: [] };
	}
}
