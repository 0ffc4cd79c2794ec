// view.ts over a fake of Pi's UI: the window numbers of a session, the
// status line, and what a Tree rollover's navigation shows (progress while
// the summary is written, then the new window's notice).
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { installView, PROGRESS_KEY, sessionWindowNumbers } from "../src/view.ts";

const boundary = (n: number) => ({
	type: "custom_message",
	customType: "codex-context-window",
	details: { protocol: 1, id: `m${n}`, contextManagement: { protocol: 1, kind: "window", firstWindowId: "w0", currentWindowId: `w${n}`, windowNumber: n } },
});

function fakeUI(branch: unknown[]) {
	const log: string[] = [];
	const ctx = {
		hasUI: true,
		ui: {
			setStatus: (k: string, t: string | undefined) => log.push(`status ${k}: ${t}`),
			setWidget: (k: string, lines: string[] | undefined) => log.push(`widget ${k}: ${lines ? lines.join("|") : "cleared"}`),
			notify: (m: string, level: string) => log.push(`notify ${level}: ${m}`),
		},
		sessionManager: { getBranch: () => branch, getEntries: () => branch },
		getContextUsage: () => ({ tokens: 5000, contextWindow: 200_000, percent: 2.5 }),
	};
	const renderers: string[] = [];
	const pi = { registerMessageRenderer: (t: string) => renderers.push(t) };
	return { log, ctx: ctx as unknown as ExtensionContext, pi: pi as unknown as ExtensionAPI, renderers };
}

test("window numbers come from every boundary of the session, archived ones too", () => {
	const m = sessionWindowNumbers([boundary(0), { type: "message" }, boundary(1), { type: "custom_message", customType: "other" }]);
	assert.deepEqual([...m.entries()], [
		["w0", 0],
		["w1", 1],
	]);
});

test("the status line, then a Tree navigation: progress while it runs, the notice after, the line redrawn", async () => {
	const f = fakeUI([boundary(0)]);
	let pending = true;
	const view = installView(f.pi, { mode: "tree", reachable: () => true, pending: () => pending });
	assert.deepEqual(f.renderers, ["codex-context-window", "codex-context-notice"]);
	view.refresh(f.ctx);
	assert.deepEqual(f.log, ["status contextd: contextd tree · window 0 · 3% used · rollover pending"]);
	f.log.length = 0;
	const nav = view.navigating(f.ctx, async () => {
		f.log.push("navigateTree");
		pending = false;
		return { cancelled: false };
	});
	assert.deepEqual(await nav.navigate("b0", { summarize: true }), { cancelled: false });
	assert.equal(f.log[0], "status contextd: contextd tree · window 0 · 3% used · writing the summary");
	assert.equal(f.log[1], `widget ${PROGRESS_KEY}: contextd: summarizing window 0 for its archive… 0 s`);
	assert.equal(f.log[2], "navigateTree");
	// Navigation alone announces nothing: the rollover may still fail (no branch summary, commit refused).
	assert.deepEqual(f.log.slice(3), [`widget ${PROGRESS_KEY}: cleared`, "status contextd: contextd tree · window 0 · 3% used"]);
	f.log.length = 0;
	nav.started();
	assert.equal(f.log.length, 1);
	assert.match(f.log[0], /^notify info: context window 1 started; the previous one is archived with its summary \(0\.\d s\)$/);
	nav.started();
	assert.equal(f.log.length, 1, "said once");
});

test("the rollover of an adopted window 0 says once that the earlier conversation is no longer sent", async () => {
	const adopted = boundary(0);
	(adopted.details.contextManagement as Record<string, unknown>).startEntryId = "h1";
	const f = fakeUI([{ type: "message" }, adopted]);
	const view = installView(f.pi, { mode: "tree", reachable: () => true, pending: () => false });
	const nav = view.navigating(f.ctx, async () => ({ cancelled: false }));
	await nav.navigate("b0", { summarize: true });
	f.log.length = 0;
	nav.started();
	nav.started();
	assert.equal(f.log.length, 1);
	assert.match(
		f.log[0],
		/^notify info: context window 1 started; the previous one is archived with its summary \(0\.\d s\); the conversation from before context management stays above it in \/tree but is no longer sent to the model; history reaches it in window 0$/,
	);
});

test("a cancelled navigation shows no notice; without a UI nothing is drawn", async () => {
	const f = fakeUI([boundary(2)]);
	const view = installView(f.pi, { mode: "tree", reachable: () => false, pending: () => false });
	await view.navigating(f.ctx, async () => ({ cancelled: true })).navigate("b", { summarize: true });
	assert.ok(!f.log.some((l) => l.startsWith("notify")));
	assert.equal(f.log.at(-1), "status contextd: contextd tree · not reachable: run contextd serve");
	const headless = fakeUI([boundary(0)]);
	(headless.ctx as { hasUI: boolean }).hasUI = false;
	installView(headless.pi, { mode: "local", reachable: () => true, pending: () => false }).refresh(headless.ctx);
	assert.deepEqual(headless.log, []);
});

// Pi replaces the session under a running Tree summary when the person
// types /new, /resume or /fork (docs/design.md §5.3.1): from then on every
// use of the old ctx throws (ExtensionRunner.assertActive, Pi 0.85.1 and
// 1.6.0). The progress line's one-second redraw ran on that ctx from a
// timer, so its throw was uncaught and Pi exited ("pi exiting due to
// uncaughtException"); the navigation's own answer must reach the rollover.
test("a session replaced during the summary: the progress redraw stops quietly and navigate answers Pi's result", async (t) => {
	t.mock.timers.enable({ apis: ["setInterval", "Date"] });
	const f = fakeUI([boundary(0)]);
	const view = installView(f.pi, { mode: "tree", reachable: () => true, pending: () => false });
	let stale = false;
	const ctx = new Proxy(f.ctx as object, {
		get(target, key, receiver) {
			if (stale && key !== "hasUI") throw new Error("This extension ctx is stale after session replacement or reload.");
			return Reflect.get(target, key, receiver);
		},
	}) as ExtensionContext;
	const nav = view.navigating(ctx, async () => {
		t.mock.timers.tick(1000);
		assert.equal(f.log.at(-1), `widget ${PROGRESS_KEY}: contextd: summarizing window 0 for its archive… 1 s`);
		stale = true; // /new: Pi disposes the old session and aborts its summary
		const drawn = f.log.length;
		t.mock.timers.tick(3000); // threw from the timer before the fix
		assert.equal(f.log.length, drawn, "nothing drawn on a replaced session");
		return { cancelled: true };
	});
	assert.deepEqual(await nav.navigate("b0", { summarize: true }), { cancelled: true });
});

test("input held while the new window's line is the last on the screen is told on that line; after a message, on its own", async () => {
	const f = fakeUI([boundary(0)]);
	const view = installView(f.pi, { mode: "tree", reachable: () => true, pending: () => false });
	const held = "contextd: a new context window is opening; your message is held and sent to the model in the new window";
	assert.equal(view.heldNotice(held), held, "no window started: the notice as it is");
	const nav = view.navigating(f.ctx, async () => ({ cancelled: false }));
	await nav.navigate("b0", { summarize: true });
	nav.started();
	assert.match(view.heldNotice(held), /^context window 1 started; the previous one is archived with its summary \(0\.\d s\); your message is held and sent to the model in the new window$/);
	view.drawn();
	assert.equal(view.heldNotice(held), held);
});
