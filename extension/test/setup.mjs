// Preload of the unit tests (node --import ./test/setup.mjs --test ...):
// resolves Pi's packages (typebox, @earendil-works/*) from the Pi that
// CONTEXTD_TEST_PI names ("0.85", the default, or "1.6"), as the
// tsconfig.pi-*.json paths do for tsc. The extension has them only as peer
// dependencies; the e2e package installs both Pis (e2e/package.json).
import { register } from "node:module";

register("./resolve-hooks.mjs", import.meta.url);
