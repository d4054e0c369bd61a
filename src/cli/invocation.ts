/** How to run this same `quarry` again, for hints printed to the person who started it. */
import path from 'node:path';

/** The command line that runs `quarry <args>` the way this process was started, e.g. `node dist/src/cli/quarry.js keys create`. */
export function quarryCommandLine(args: string): string {
  const script = process.argv[1] ?? '';
  // Installed (npm link, a package's bin): the command is on the PATH by its name.
  if (path.basename(script) === 'quarry') return `quarry ${args}`;
  const relative = path.relative(process.cwd(), script);
  const shown = relative && !relative.startsWith('..') ? relative : script;
  return `node ${shown.endsWith('.ts') ? '--import tsx ' : ''}${shown} ${args}`;
}
