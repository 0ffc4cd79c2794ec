// A session too large for contextd's memory limit. contextd refuses every
// route that needs such a session's content with the problem code
// session_too_large (store/toolarge.go; docs/security.md "Many tiny
// entries"), its detail saying what to do. The extension branches on that
// code, never on the sentence: it tells the person once and sets the
// session aside, so Pi goes on with its own context, as when contextd is
// off, instead of failing every turn.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { ContextdError } from "./client.ts";
import type { Host } from "./host.ts";
import type { SessionState } from "./session.ts";

/** Whether err is contextd's refusal of a session too large for its memory limit (problem code session_too_large). */
export function isSessionTooLarge(err: unknown): err is ContextdError {
	return err instanceof ContextdError && err.code === "session_too_large";
}

/**
 * The one sentence the person gets: contextd's detail (which names the
 * --memory-limit to restart with, /reload and /new), then what Pi does
 * meanwhile.
 */
export function tooLargeSentence(err: ContextdError): string {
	const detail = err.message.replace(/^contextd: /, "");
	return `contextd: ${detail}; until then Pi uses its own context`;
}

/**
 * Sets s aside after a session_too_large refusal: no client (the context
 * hook then leaves Pi's context alone and the tools answer with the
 * sentence), and the sentence said once, as a warning.
 */
export function setTooLargeAside(host: Host, s: SessionState, ctx: ExtensionContext, err: ContextdError): void {
	const first = !s.tooLarge;
	s.client = undefined;
	s.tooLarge = true;
	s.unavailable = tooLargeSentence(err);
	if (first) host.notify(ctx, s.unavailable, "warning");
}
