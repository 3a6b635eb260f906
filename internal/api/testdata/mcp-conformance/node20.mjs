// Node 20 has no fs.globSync, which the conformance suite imports (for its
// results summary alone, which the Go test does not use). This gives it
// one that says so, so that the suite runs on Node 20 as on Node 22.
import { register } from "node:module";

register("data:text/javascript," + encodeURIComponent(`
export async function resolve(specifier, context, next) {
  if ((specifier === "fs" || specifier === "node:fs") && context.parentURL && context.parentURL.includes("/@modelcontextprotocol/conformance/")) {
    return { url: ${JSON.stringify(new URL("./fs-globsync.mjs", import.meta.url).href)}, shortCircuit: true };
  }
  return next(specifier, context);
}
`));
