#!/usr/bin/env node
/**
 * The `quarry` command. `quarry serve [--role all|api|worker]` runs the service with the
 * configuration in the environment (decisions §12); every other command is a client of a running
 * service at QUARRY_URL (see `quarry --help` and docs/client.md). Each side is loaded only when
 * used, so client commands start without the server's dependencies.
 */
// The build is a bundle (scripts/build-server.ts): stack traces name our source files, not its lines.
process.setSourceMapsEnabled(true);

const [command, ...rest] = process.argv.slice(2);

if (command === 'serve') {
  const { runServe } = await import('./serve.js');
  runServe(rest);
} else {
  // `quarry … | head` closes the pipe early: that is not an error.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  const { runCli } = await import('./main.js');
  const code = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env });
  process.exit(code);
}
