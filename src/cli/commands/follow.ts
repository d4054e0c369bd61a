/**
 * Follows a stream with the progress view that suits the output (live on a terminal, plain lines
 * otherwise, JSON lines with --json) and turns how it ended into an exit code.
 */
import type { TaskStream } from '../../../packages/client/src/index.js';
import type { CliContext } from '../context.js';
import { ExitCode, type ExitCodeValue } from '../exit-codes.js';
import { JsonLinesView, LiveView, PlainView, type ProgressView } from '../progress-view.js';

export async function followStream(ctx: CliContext, stream: TaskStream): Promise<ExitCodeValue> {
  const write = (text: string) => void ctx.io.stdout.write(text);
  const view: ProgressView = ctx.json
    ? new JsonLinesView(write)
    : ctx.live
      ? new LiveView(write, { color: !ctx.io.env.NO_COLOR, columns: ctx.io.stdout.columns })
      : new PlainView(write);
  let interrupted = false;
  // Ctrl-C stops following, never the task.
  const onInterrupt = () => {
    interrupted = true;
    stream.close();
  };
  process.once('SIGINT', onInterrupt);
  try {
    for await (const event of stream) view.event(event);
  } catch (err) {
    view.close('failed');
    throw err;
  } finally {
    process.off('SIGINT', onInterrupt);
  }
  view.close(interrupted ? 'interrupted' : 'ended');
  const taskId = stream.taskId ?? view.tracker.taskId;
  if (interrupted) {
    if (taskId && !ctx.json) ctx.err(`follow it again with: quarry task follow ${taskId}`);
    return ExitCode.interrupted;
  }
  const outcome = view.tracker.lastDone?.outcome;
  if (outcome === 'completed' || outcome === 'idle') return ExitCode.ok;
  if (outcome === 'failed' || outcome === 'stopped') return ExitCode.turnNotCompleted;
  return ExitCode.unavailable;
}
