// A fake of Pi's ExtensionAPI and ExtensionContext for the installer tests:
// it records the handlers, tools and commands a mode registers and every
// write the extension makes (sendMessage, sendUserMessage, appendEntry,
// notify), and a fake contextd answers from a table. No Pi runs.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { Host } from "../src/host.ts";
import type { OperationId, RequestArgs, Result } from "../src/client.ts";
import type { ContextdPort, Say } from "../src/session.ts";
import type { Mode, Settings } from "../src/settings.ts";

/** A handler as the fake stores it. */
type Handler = (event: unknown, ctx: unknown) => unknown;

/** A recorded tool registration. */
export interface FakeTool {
	name: string;
	parameters: unknown;
	execute(id: string, params: unknown, signal: undefined, onUpdate: undefined, ctx: unknown): Promise<{ content: { text: string }[]; details: unknown; terminate?: boolean }>;
}

/** The fake API: what was registered and what was written, in order. */
export class FakePi {
	readonly handlers = new Map<string, Handler[]>();
	readonly tools: FakeTool[] = [];
	readonly commands = new Map<string, (args: string, ctx: unknown) => Promise<void>>();
	/** customTypes given a message renderer (registerMessageRenderer). */
	readonly renderers: string[] = [];
	/** Every write, one line each: "sendMessage <customType> <options>", "sendUserMessage <text> <options>", "appendEntry <customType>". */
	readonly log: string[] = [];
	readonly sent: { message: { customType: string; content: string; details: unknown }; options: unknown }[] = [];
	/** Called after each sendMessage is recorded: a test appends the message to its FakeCtx branch as Pi appends it to the session. */
	onSend?: (message: { customType: string; content: string; details: unknown }) => void;

	/** The ExtensionAPI view of this fake. */
	get api(): ExtensionAPI {
		const api = {
			on: (event: string, h: Handler) => {
				this.handlers.set(event, [...(this.handlers.get(event) ?? []), h]);
			},
			registerTool: (t: FakeTool) => {
				this.tools.push(t);
			},
			registerCommand: (name: string, o: { handler: (args: string, ctx: unknown) => Promise<void> }) => {
				this.commands.set(name, o.handler);
			},
			registerMessageRenderer: (customType: string) => {
				this.renderers.push(customType);
			},
			sendMessage: (m: { customType: string; content: string; details: unknown }, options?: unknown) => {
				this.sent.push({ message: m, options });
				this.log.push(`sendMessage ${m.customType} ${JSON.stringify(options ?? {})}`);
				this.onSend?.(m);
			},
			sendUserMessage: (content: unknown, options?: unknown) => {
				this.log.push(`sendUserMessage ${typeof content === "string" ? content : JSON.stringify(content)} ${JSON.stringify(options ?? {})}`);
			},
			appendEntry: (customType: string) => {
				this.log.push(`appendEntry ${customType}`);
			},
		};
		return api as unknown as ExtensionAPI;
	}

	/** Runs the handlers of event in registration order; returns their results. */
	async emit(event: string, payload: unknown, ctx: FakeCtx): Promise<unknown[]> {
		const out: unknown[] = [];
		for (const h of this.handlers.get(event) ?? []) out.push(await h({ type: event, ...(payload as object) }, ctx.ctx));
		return out;
	}

	/** Runs the handlers of event without awaiting them (a synchronous emit); returns their results. */
	emitSync(event: string, payload: unknown, ctx: FakeCtx): unknown[] {
		return (this.handlers.get(event) ?? []).map((h) => h({ type: event, ...(payload as object) }, ctx.ctx));
	}

	/** The registered tool called name. */
	tool(name: string): FakeTool {
		const t = this.tools.find((x) => x.name === name);
		if (!t) throw new Error(`no tool ${name}`);
		return t;
	}

	/** The registered events, with a count when an event has more than one handler. */
	events(): string[] {
		return [...this.handlers.entries()].map(([e, hs]) => (hs.length > 1 ? `${e}×${hs.length}` : e)).sort();
	}
}

/** A fake ExtensionContext over a mutable branch. */
export class FakeCtx {
	sessionId: string;
	file: string | undefined;
	branch: { type: string; id?: string; customType?: string; details?: unknown; message?: { role: string } }[] = [];
	leafId: string | null = "leaf1";
	leafEntry: { id: string; type: string } | undefined;
	editor = "";
	usage: { tokens: number | null; contextWindow: number; percent: number | null } | undefined;
	model: { api: string; provider: string; id: string } | undefined;
	apiKey: string | undefined;
	readonly notices: string[] = [];
	/** The footer status lines set (ctx.ui.setStatus), by key. */
	readonly statuses = new Map<string, string | undefined>();
	aborted = false;
	/** How many times ctx.reload() was called (/contextd mode). */
	reloads = 0;
	/** The options of each ctx.compact() call. */
	readonly compactions: { onComplete?: (r: unknown) => void; onError?: (e: Error) => void }[] = [];
	/** The ctx.ui.onTerminalInput handlers subscribed now. */
	readonly terminalInput = new Set<(data: string) => { consume?: boolean; data?: string } | undefined>();

	/** Types data in the terminal: each subscribed handler's answer, as Pi's TUI runs them. */
	press(data: string): ({ consume?: boolean; data?: string } | undefined)[] {
		return [...this.terminalInput].map((h) => h(data));
	}
	/** What ctx.isIdle() answers (command contexts): Pi is not streaming. */
	idle = true;

	/** file null: a session that is not persisted (--no-session). */
	constructor(sessionId = "s1", file: string | null = "/sessions/s1.jsonl") {
		this.sessionId = sessionId;
		this.file = file ?? undefined;
	}

	/** The ExtensionContext view (and command context: navigateTree records). */
	get ctx(): ExtensionContext {
		const c = {
			hasUI: true,
			ui: {
				notify: (m: string, level: string) => this.notices.push(`${level}: ${m}`),
				getEditorText: () => this.editor,
				setEditorText: (t: string) => {
					this.editor = t;
				},
				setStatus: (key: string, t: string | undefined) => {
					this.statuses.set(key, t);
				},
				setWidget: () => {},
				onTerminalInput: (h: (data: string) => { consume?: boolean; data?: string } | undefined) => {
					this.terminalInput.add(h);
					return () => this.terminalInput.delete(h);
				},
			},
			sessionManager: {
				getSessionId: () => this.sessionId,
				getSessionFile: () => this.file,
				getLeafId: () => this.leafId,
				getBranch: () => this.branch,
				getEntries: () => this.branch,
				getLeafEntry: () => this.leafEntry,
				getEntry: (id: string) => this.branch.find((e) => e.id === id),
			},
			getContextUsage: () => this.usage,
			modelRegistry: { getApiKeyForProvider: async () => this.apiKey },
			model: this.model,
			abort: () => {
				this.aborted = true;
			},
			compact: (o: { onComplete?: (r: unknown) => void; onError?: (e: Error) => void } = {}) => {
				this.compactions.push(o);
			},
			reload: async () => {
				this.reloads++;
			},
			isIdle: () => this.idle,
		};
		return c as unknown as ExtensionContext;
	}
}

/** A contextd answering each operation id from a table; an Error answer rejects. calls records "op" or "op rollover_id". */
export class FakeContextd implements ContextdPort {
	readonly url = "http://contextd.test";
	readonly calls: string[] = [];
	readonly bodies: unknown[] = [];
	readonly headers: (Record<string, string> | undefined)[] = [];
	answers: Partial<Record<OperationId, unknown>>;

	constructor(answers: Partial<Record<OperationId, unknown>> = {}) {
		this.answers = answers;
	}

	async request<K extends OperationId>(op: K, args: RequestArgs<K>): Promise<Result<K>> {
		const a = args as { path?: { rollover_id?: string }; body?: unknown; headers?: Record<string, string> };
		this.calls.push(a.path?.rollover_id ? `${op} ${a.path.rollover_id}` : op);
		this.bodies.push(a.body);
		this.headers.push(a.headers);
		const v = this.answers[op];
		if (v instanceof Error) throw v;
		return v as Result<K>;
	}
}

/** Settings of mode with the defaults resolveSettings gives. */
export function settingsOf(mode: Mode, over: Partial<Settings> = {}): Settings {
	return {
		mode,
		stateDir: "/state",
		tokenFile: "/state/token",
		binary: "contextd",
		autoStart: false,
		agentName: "/root",
		notesGuard: "warn",
		reminderThresholds: [70, 85],
		...over,
	};
}

/** A Host over fakes; timers are collected, not run. */
export function fakeHost(mode: Mode, over: Partial<Settings> = {}, piVersion = "1.6.0") {
	const pi = new FakePi();
	const contextd = new FakeContextd();
	const timers: { fn: () => void; ms: number }[] = [];
	const said: string[] = [];
	let connectError: Error | undefined;
	const host: Host = {
		pi: pi.api,
		settings: settingsOf(mode, over),
		piVersion,
		connect: async () => {
			if (connectError) throw connectError;
			return contextd;
		},
		healthy: async () => true,
		notify: (ctx, m, level) => ctx.ui.notify(m, level),
		setTimer: (fn, ms) => {
			timers.push({ fn, ms });
		},
	};
	const say: Say = (_ctx, m) => {
		said.push(m);
	};
	return {
		host,
		pi,
		contextd,
		timers,
		said,
		say,
		failConnect: (e: Error) => {
			connectError = e;
		},
	};
}
