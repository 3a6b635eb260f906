// node:fs, with the globSync that Node 20 lacks (see node20.mjs).
import * as fs from "node:fs";
export * from "node:fs";
export default fs;
export const globSync = fs.globSync ?? (() => {
  throw new Error("fs.globSync needs Node 22");
});
