// Module resolution hook of setup.mjs: typebox and @earendil-works/* are
// resolved as if imported from inside the chosen Pi's installation.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const e2e = join(import.meta.dirname, "..", "..", "e2e", "node_modules");
const pi16 = process.env.CONTEXTD_TEST_PI === "1.6";
const from = pathToFileURL(join(pi16 ? join(e2e, "pi-coding-agent-1.6", "node_modules") : e2e, "resolve-from.mjs")).href;

export async function resolve(specifier, context, next) {
	if (pi16 && specifier === "@earendil-works/pi-coding-agent") {
		return next(pathToFileURL(join(e2e, "pi-coding-agent-1.6", "dist", "index.js")).href, context);
	}
	if (specifier === "typebox" || specifier.startsWith("typebox/") || specifier.startsWith("@earendil-works/")) {
		return next(specifier, { ...context, parentURL: from });
	}
	return next(specifier, context);
}
