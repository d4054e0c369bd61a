/**
 * Serializes writes per task (interface §4.2 rule 7): each write to a task waits until the
 * previous write to that task has been answered (retries included), so two concurrent
 * `continue()` calls go out one after the other and reach the task in the order they were made.
 * Writes to different tasks, and reads, never wait for each other.
 */
export class TaskWriteQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `write` after every earlier write to `taskId` has settled. */
  run<T>(taskId: string, write: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(taskId) ?? Promise.resolve();
    const result = previous.then(write, write);
    const tail = result.then(() => undefined, () => undefined);
    this.tails.set(taskId, tail);
    // Forget the task once its chain is idle, so the map does not grow with every task ever written.
    void tail.then(() => {
      if (this.tails.get(taskId) === tail) this.tails.delete(taskId);
    });
    return result;
  }
}
