/**
 * `run_code`: runs a python, javascript or shell program in the sandbox (src/sandbox), in the
 * task's workspace: /workspace, with the task's inputs read-only in inputs/ and result files in
 * outputs/, which write_rows can load with `from_file`. The model reads the exit status, whether
 * a limit or the timeout ended the run, and stdout and stderr (capped).
 */
import { Type } from 'typebox';
import { SandboxError, type RunResult, type Sandbox } from '../../sandbox/sandbox.js';
import type { AgentTool } from './tool.js';

export const DEFAULT_TIMEOUT_S = 30;
export const MAX_TIMEOUT_S = 300;
/** Most of each of stdout and stderr the model reads (the middle of longer output is dropped). */
const MODEL_OUTPUT_CAP = 20_000;

const parameters = Type.Object({
  language: Type.Union([Type.Literal('python'), Type.Literal('javascript'), Type.Literal('shell')], { description: 'python (python3), javascript (node) or shell (bash).' }),
  code: Type.String({ minLength: 1, maxLength: 200_000, description: 'The whole program.' }),
  timeout_s: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TIMEOUT_S, description: `Seconds before the program is killed; default ${DEFAULT_TIMEOUT_S}, at most ${MAX_TIMEOUT_S}.` })),
});

interface RunCodeArgs {
  language: 'python' | 'javascript' | 'shell';
  code: string;
  timeout_s?: number;
}

/** Keeps the head and tail of a long text, saying how much of the middle was dropped. */
function cap(text: string, max: number): string {
  if (text.length <= max) return text;
  const tail = Math.floor(max / 4);
  const head = max - tail;
  return `${text.slice(0, head)}\n… [${text.length - head - tail} characters omitted] …\n${text.slice(text.length - tail)}`;
}

const LIMIT_TEXT: Record<NonNullable<RunResult['limitHit']>, string> = {
  memory: 'the memory limit (the program was killed for using too much memory: process the data in smaller pieces)',
  processes: 'the limit on processes and threads (some could not be started)',
  cpu_time: 'the CPU time limit',
  file_size: 'the file size limit',
  disk: 'the workspace size limit (/workspace is full: delete files you no longer need)',
  open_files: 'the limit on open files',
};

function describe(args: RunCodeArgs, timeoutS: number, result: RunResult): { content: string; summary: string; failed: boolean } {
  const seconds = (result.durationMs / 1000).toFixed(1);
  let status: string;
  let summary: string;
  if (result.timedOut) {
    status = `timed out after ${timeoutS} s and was killed with everything it started (pass a larger timeout_s, at most ${MAX_TIMEOUT_S}, or do less per call)`;
    summary = `${args.language} timed out after ${timeoutS} s`;
  } else if (result.signal) {
    status = `killed by ${result.signal}`;
    summary = `${args.language} killed by ${result.signal}`;
  } else {
    status = `exit code ${result.exitCode}`;
    summary = `${args.language} exited ${result.exitCode} in ${seconds} s`;
  }
  const lines = [`Status: ${status}.`];
  if (result.limitHit) {
    lines.push(`Limit hit: ${LIMIT_TEXT[result.limitHit]}.`);
    summary += ` (${result.limitHit} limit)`;
  }
  lines.push(result.workspaceSaved ? 'Workspace: saved (files in /workspace, outputs/ included, are kept for later calls).' : 'Workspace: NOT saved; it is as it was before this call.');
  for (const note of result.notes) lines.push(`Note: ${note}.`);
  const stream = (name: string, text: string, truncated: boolean) => {
    if (!text) return `${name}: (empty)`;
    const shown = cap(text, MODEL_OUTPUT_CAP);
    const cut = truncated || shown.length < text.length ? ' (long output shortened in the middle: write large results to a file in outputs/ instead of printing them)' : '';
    return `${name}${cut}:\n${shown}`;
  };
  lines.push(stream('stdout', result.stdout, result.stdoutTruncated));
  lines.push(stream('stderr', result.stderr, result.stderrTruncated));
  const failed = result.timedOut || result.signal !== null || result.exitCode !== 0;
  return { content: lines.join('\n'), summary, failed };
}

/** The run_code tool over a sandbox (createSandbox at start-up); an unavailable one answers with its reason. */
export function createRunCodeTool(sandbox: Sandbox): AgentTool<RunCodeArgs> {
  return {
    name: 'run_code',
    description: [
      'Run a program in an isolated sandbox: python (python3), javascript (node) or shell (bash).',
      "The working directory is /workspace: the task's inputs are read-only in /workspace/inputs/ (by name),",
      'and files you write under /workspace persist between calls of this task; write result files to',
      '/workspace/outputs/ (CSV with a header row, or JSONL) and load them into an output with',
      'write_rows {output, from_file: "name.csv"}. There is no network access; memory, disk and processes',
      `are limited, and the program is killed after timeout_s seconds (default ${DEFAULT_TIMEOUT_S}).`,
      'You get the exit code and stdout and stderr (long output is shortened).',
    ].join(' '),
    parameters,
    async run(args, ctx) {
      if (!sandbox.available) {
        return { isError: true, content: `run_code is not available on this server: ${sandbox.reason ?? 'the sandbox cannot run here'}. Do the work with the other tools.`, summary: 'run_code unavailable' };
      }
      if (!sandbox.languages.includes(args.language)) {
        return { isError: true, content: `${args.language} is not installed on this server; run_code can use: ${sandbox.languages.join(', ')}.`, summary: `${args.language} unavailable` };
      }
      const timeoutS = Math.min(args.timeout_s ?? DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S, sandbox.limits.maxTimeoutS);
      const dir = await ctx.workspaceDir();
      const inputs = (await ctx.inputs()).map((input) => ({ name: input.name, path: input.path }));
      let result: RunResult;
      try {
        result = await sandbox.run({ language: args.language, code: args.code, timeoutS, workspaceDir: dir, inputs, signal: ctx.signal });
      } catch (err) {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        if (err instanceof SandboxError) return { isError: true, content: `run_code could not run the program: ${err.message}.`, summary: 'run_code failed' };
        throw err;
      }
      const { content, summary, failed } = describe(args, timeoutS, result);
      return { content, summary, ...(failed ? { isError: true } : {}) };
    },
  };
}
