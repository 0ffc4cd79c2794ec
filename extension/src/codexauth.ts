// Remote mode's credentials for the Codex backend: Pi's openai-codex login
// (a ChatGPT access token) as the Authorization and ChatGPT-Account-ID
// headers contextd forwards (docs/codex-contract.md "Authentication").
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { ContextdError } from "./client.ts";

/** The sentence Remote mode gives when Pi has no openai-codex login. */
export const NO_CODEX_LOGIN =
	"remote mode needs Pi's ChatGPT/Codex login (provider openai-codex) and there is none; run /login, or switch the contextd mode to local or tree";

/** Authorization and ChatGPT-Account-ID from Pi's openai-codex login. Errors: a ContextdError (NO_CODEX_LOGIN) when there is none. */
export async function codexHeaders(ctx: Pick<ExtensionContext, "modelRegistry">): Promise<Record<string, string>> {
	const token = await ctx.modelRegistry.getApiKeyForProvider("openai-codex");
	if (!token) throw new ContextdError(NO_CODEX_LOGIN);
	const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
	const account = chatgptAccountId(token);
	if (account) headers["ChatGPT-Account-ID"] = account;
	return headers;
}

/** The chatgpt_account_id claim of a ChatGPT access token (a JWT), if any; undefined for anything else. */
export function chatgptAccountId(token: string): string | undefined {
	const part = token.split(".")[1];
	if (!part) return undefined;
	try {
		const claims = JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as Record<string, unknown>;
		const auth = claims["https://api.openai.com/auth"] as { chatgpt_account_id?: string } | undefined;
		return auth?.chatgpt_account_id;
	} catch {
		return undefined;
	}
}
