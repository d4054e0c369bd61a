/**
 * An incremental decoder of `text/event-stream` (the WHATWG server-sent events framing): lines
 * end with LF, CRLF or CR; `id:`, `event:` and `data:` fields (several `data:` lines join with
 * "\n"); lines starting with `:` are comments; a blank line ends a frame.
 */

/** One frame as it came over the wire. */
export interface SseFrame {
  /** The `id:` field; undefined when the frame had none (unstored Quarry frames but the idle `done`). */
  id: string | undefined;
  /** The `event:` field, `message` when absent. */
  event: string;
  data: string;
}

export class SseDecoder {
  private buffer = '';
  private id: string | undefined;
  private event = '';
  private data: string[] = [];
  private hasField = false;

  /** `onComment` is told each comment line's text (Quarry's keep-alive is `: ping`). */
  constructor(private readonly onComment: (text: string) => void = () => {}) {}

  /** Feeds decoded text; returns the frames it completed. */
  push(text: string): SseFrame[] {
    const frames: SseFrame[] = [];
    this.buffer += text;
    for (;;) {
      const end = this.lineEnd();
      if (end < 0) break;
      const line = this.buffer.slice(0, end);
      const width = this.buffer[end] === '\r' && this.buffer[end + 1] === '\n' ? 2 : 1;
      this.buffer = this.buffer.slice(end + width);
      const frame = this.line(line);
      if (frame) frames.push(frame);
    }
    return frames;
  }

  /** Where the first complete line ends; a CR at the very end may be half of a CRLF, so it waits. */
  private lineEnd(): number {
    const lf = this.buffer.indexOf('\n');
    const cr = this.buffer.indexOf('\r');
    if (cr >= 0 && (lf < 0 || cr < lf)) return cr === this.buffer.length - 1 ? -1 : cr;
    return lf;
  }

  private line(line: string): SseFrame | undefined {
    if (line === '') {
      const frame = this.hasField ? { id: this.id, event: this.event || 'message', data: this.data.join('\n') } : undefined;
      this.id = undefined;
      this.event = '';
      this.data = [];
      this.hasField = false;
      return frame;
    }
    if (line.startsWith(':')) {
      this.onComment(line.slice(1).trimStart());
      return undefined;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    this.hasField = true;
    if (field === 'id') this.id = value;
    else if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    return undefined;
  }
}
