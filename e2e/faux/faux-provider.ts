// Test-only Pi extension for the contextd end-to-end suite: registers pi-ai's
// scripted faux provider as model faux/faux-1 and records every request the
// provider is sent. Loaded with a second `-e` beside ../../extension.
//
// CONTEXTD_E2E_SCRIPT names a JSON array of steps, one per agent model call:
//   {"text": "..."}                                   an assistant text reply
//   {"calls": [{"name": "...", "arguments": {...}}]}  an assistant message with tool calls
// A string argument "{{re:REGEX}}" becomes the first capture group of REGEX
// matched against the newest tool result text that matches it, else the
// newest other message text that does. Branch
// summarization requests (Pi's summarization system prompt) are answered
// with "Summary N: ..." without consuming a step. Every request is appended
// to CONTEXTD_E2E_LOG as one JSON line {kind, step, systemPrompt, messages}
// (unset: nothing is recorded; the replies are the same).
// With CONTEXTD_E2E_HOLD_SUMMARY=DIR, a summarization request writes
// DIR/summary-started and waits for DIR/summary-continue (the failure tests
// stop contextd in between). A Local rollover has no model call between
// its settle and its commit; its hold is in the extension:
// CONTEXTD_E2E_HOLD_LOCAL_COMMIT=DIR writes DIR/commit-held after the
// settle and waits for DIR/commit-continue (extension/src/e2e_hold.ts).
// CONTEXTD_E2E_INPUT_ON_TOOL queues user input
// at a tool call (below). The command /e2e-navigate ID navigates the
// session tree as a user's /tree selection does (ctx.navigateTree, no
// summary); /e2e-reload reloads the extensions as /reload does
// (ctx.reload; RPC mode has no reload command).
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { fauxAssistantMessage, fauxProvider, fauxText, fauxToolCall } from "@earendil-works/pi-ai";

interface Step {
	text?: string;
	calls?: { name: string; arguments: Record<string, unknown>; id?: string }[];
}

const SUMMARY_PROMPT = "You are a context summarization assistant";

function textOf(content: unknown): string {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content.map((c: { type?: string; text?: string }) => (c.type === "text" ? (c.text ?? "") : "")).join("");
}

interface Api {
	registerProvider(p: unknown): void;
	on(event: "tool_call", handler: (event: { toolName: string }) => Promise<undefined>): void;
	sendUserMessage(text: string, options: { deliverAs: "steer" | "followUp" }): void;
	registerCommand(
		name: string,
		o: { description: string; handler: (args: string, ctx: { navigateTree(id: string, o?: { summarize?: boolean }): Promise<unknown>; reload(): Promise<void> }) => Promise<void> },
	): void;
}

export default function (pi: Api) {
	pi.registerCommand("e2e-navigate", {
		description: "test only: navigate the session tree like /tree",
		handler: async (args, ctx) => {
			await ctx.navigateTree(args.trim(), { summarize: false });
		},
	});
	pi.registerCommand("e2e-reload", {
		description: "test only: reload extensions like /reload",
		handler: async (_args, ctx) => {
			await ctx.reload();
		},
	});
	// CONTEXTD_E2E_INPUT_ON_TOOL="tool:steer|followUp:text": when the model
	// calls that tool (first time), a user message is queued as a steer or
	// a follow-up, as the TUI's Enter (or Alt+Enter) while the agent runs.
	const inputOn = process.env.CONTEXTD_E2E_INPUT_ON_TOOL ?? "";
	if (inputOn) {
		const [tool, deliverAs, ...rest] = inputOn.split(":");
		let done = false;
		pi.on("tool_call", async (event) => {
			if (done || event.toolName !== tool) return undefined;
			done = true;
			pi.sendUserMessage(rest.join(":"), { deliverAs: deliverAs === "followUp" ? "followUp" : "steer" });
			return undefined;
		});
	}
	const hold = process.env.CONTEXTD_E2E_HOLD_SUMMARY ?? "";
	const scriptText = readFileSync(process.env.CONTEXTD_E2E_SCRIPT ?? "", "utf8");
	const script = JSON.parse(scriptText) as Step[];
	const log = process.env.CONTEXTD_E2E_LOG ?? "";
	// The script's position survives /e2e-reload, which loads this file
	// again in the same process: the model's replies go on where they were.
	// A test that writes a new script before Pi loads the extensions again
	// (a /clone or /fork) starts that script from step 0.
	const g = globalThis as { __contextdE2eScript?: { next: number; summaries: number; text: string } };
	if (g.__contextdE2eScript?.text !== scriptText) g.__contextdE2eScript = { next: 0, summaries: 0, text: scriptText };
	const pos = g.__contextdE2eScript;
	const faux = fauxProvider({ provider: "faux", api: "faux", models: [{ id: "faux-1", contextWindow: 200_000, maxTokens: 16_000 }] });
	const factory = async (context: { systemPrompt?: string; messages: { role: string; content?: unknown }[] }) => {
		const system = [context.systemPrompt ?? "", ...context.messages.filter((m) => m.role === "system").map((m) => textOf(m.content))].join("\n");
		const summary = system.includes(SUMMARY_PROMPT);
		const step = summary ? -1 : pos.next;
		if (log) appendFileSync(log, `${JSON.stringify({ kind: summary ? "summary" : "turn", step, systemPrompt: context.systemPrompt ?? "", messages: context.messages })}\n`);
		if (summary) {
			pos.summaries++;
			if (hold) {
				writeFileSync(`${hold}/summary-started`, "");
				while (!existsSync(`${hold}/summary-continue`)) await new Promise((r) => setTimeout(r, 50));
			}
			return fauxAssistantMessage(`Summary ${pos.summaries}: the archived window's work.`);
		}
		const s = script[pos.next++];
		if (!s) return fauxAssistantMessage("script exhausted");
		if (!s.calls) return fauxAssistantMessage(s.text ?? "");
		const texts = context.messages.map((m) => textOf(m.content)).reverse();
		const results = [...context.messages.filter((m) => m.role === "toolResult").map((m) => textOf(m.content)).reverse(), ...texts];
		const fill = (v: unknown): unknown => {
			if (typeof v !== "string" || !v.startsWith("{{re:")) return v;
			const re = new RegExp(v.slice(5, -2));
			for (const r of results) {
				const m = re.exec(r);
				if (m) return m[1];
			}
			return `no tool result matched ${re}`;
		};
		const blocks = s.calls.map((c) =>
			fauxToolCall(c.name, Object.fromEntries(Object.entries(c.arguments).map(([k, v]) => [k, fill(v)])), c.id ? { id: c.id } : undefined),
		);
		return fauxAssistantMessage(s.text ? [fauxText(s.text), ...blocks] : blocks, { stopReason: "toolUse" });
	};
	faux.setResponses(Array.from({ length: 1000 }, () => factory as never));
	pi.registerProvider(faux.provider);
}
