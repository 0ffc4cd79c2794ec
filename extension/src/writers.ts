// Two Pi processes on one session (docs/design.md §4 "Two Pis on one
// session"): contextd reports a concurrent_writers problem in the answer
// of the registration and of /context; the person is told once per session.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { Host } from "./host.ts";
import type { SessionState } from "./session.ts";

/** A problem as contextd reports it (coordinator.SessionProblem). */
export interface Problem {
	reason: string;
	detail?: string;
}

/** Shows contextd's concurrent_writers problem among problems as a warning, once per session. */
export function warnConcurrentWriters(host: Host, s: SessionState, ctx: ExtensionContext, problems: Problem[] | undefined): void {
	const p = problems?.find((x) => x.reason === "concurrent_writers");
	if (!p || s.writersWarned) return;
	s.writersWarned = true;
	host.notify(ctx, `contextd: ${p.detail ?? "another Pi process has this session open"}`, "warning");
}
