/**
 * The client reads a local file for `createFromFile` with `import('node:fs')`, which a browser
 * never runs and the console's build leaves out (scripts/build-console.ts). It is declared here,
 * as far as the client uses it, so the console is type-checked without Node's types: with them,
 * browser code could use Node's globals and still compile.
 */
declare module 'node:fs' {
  export function openAsBlob(path: string, options?: { type?: string }): Promise<Blob>;
}
