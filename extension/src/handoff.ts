// What a replaced session's extension instance leaves for the session that
// replaced it. Pi loads the extension anew for every session it starts
// (/new, /resume, /fork: createRuntime, loader moduleCache false, Pi 0.85.1
// and 1.6.0), and the old instance's ctx is stale (every use throws), while
// a Tree rollover's navigateTree of the old session may still be running.
// When it ends, interactive Pi puts the navigation target's text (the old
// window's boundary) into the editor it shares across sessions when that
// editor is empty (interactive-mode.js navigateTree), and only the new
// session's ctx can take it out again or tell the person. The mailbox is
// process-wide (globalThis under a Symbol.for key) because the instances
// share nothing else. A /reload is the same for the extension: the old
// instance's ctx is stale and the reloaded instance's session_start takes
// its lines (RELOADED_DURING_SUMMARY, rollover.ts).

/** One message from a replaced session for the live one. */
export interface Handoff {
	/** Text Pi may have put into the empty editor: cleared when the editor holds exactly this. */
	leakedEditorText?: string;
	/** The one sentence the person is shown (warning). */
	notice: string;
}

/** Delivers h with a live session's ctx; false (or a throw) when that ctx is stale. */
export type Receiver = (h: Handoff) => boolean;

interface Mailbox {
	pending: Handoff[];
	receiver: Receiver | undefined;
}

const KEY = Symbol.for("contextd.replaced-session-handoff");

function mailbox(): Mailbox {
	const g = globalThis as unknown as Record<symbol, Mailbox | undefined>;
	let m = g[KEY];
	if (!m) {
		m = { pending: [], receiver: undefined };
		g[KEY] = m;
	}
	return m;
}

function deliver(m: Mailbox): void {
	const r = m.receiver;
	if (!r) return;
	while (m.pending.length > 0) {
		let ok = false;
		try {
			ok = r(m.pending[0]!);
		} catch {
			ok = false;
		}
		if (!ok) {
			if (m.receiver === r) m.receiver = undefined;
			return;
		}
		m.pending.shift();
	}
}

/** Leaves h for the live session: delivered at once when one is receiving, else at the next receive (the next session_start). */
export function handOff(h: Handoff): void {
	const m = mailbox();
	m.pending.push(h);
	deliver(m);
}

/** Makes r the receiver (a session_start's live ctx) and delivers what is pending. */
export function receive(r: Receiver): void {
	const m = mailbox();
	m.receiver = r;
	deliver(m);
}

/** Forgets every pending message and the receiver (unit tests start clean). */
export function resetHandoff(): void {
	const m = mailbox();
	m.pending = [];
	m.receiver = undefined;
}

/**
 * What the person is told in the new session when the session they left
 * was replaced while its Tree rollover wrote the branch summary: the
 * summary is in that session's file, and the new window opens from the file
 * when it is resumed (tree.ts openWindow) or by /contextd finish there.
 */
export function replacedDuringSummaryNotice(file: string | undefined): string {
	const which = file ? `the session you left (${file})` : "the session you left";
	return `contextd: ${which} got its branch summary but its new context window did not open yet; /resume it and the window opens (or run /contextd finish there)`;
}
