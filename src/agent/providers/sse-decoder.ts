/**
 * Splits a server-sent-events byte stream into the `data` of each event. Bytes may be cut
 * anywhere, even inside a UTF-8 character; lines end in LF or CRLF.
 */
export class SseDecoder {
  private readonly text = new TextDecoder();
  private buffer = '';
  private dataLines: string[] = [];

  constructor(private readonly onData: (data: string) => void) {}

  push(bytes: Uint8Array): void {
    this.buffer += this.text.decode(bytes, { stream: true });
    let start = 0;
    let end: number;
    while ((end = this.buffer.indexOf('\n', start)) !== -1) {
      this.line(this.buffer.slice(start, end));
      start = end + 1;
    }
    this.buffer = this.buffer.slice(start);
  }

  /** Flushes what is left: a last event without its closing blank line is still delivered. */
  end(): void {
    this.buffer += this.text.decode();
    if (this.buffer !== '') this.line(this.buffer);
    this.buffer = '';
    this.dispatch();
  }

  private line(raw: string): void {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '') return this.dispatch();
    const colon = line.indexOf(':');
    // Only `data` matters: id and retry carry nothing for a model's answer, the `event:` line is
    // not needed (every Messages event names its type in its data too), and a comment (a
    // keep-alive, say) is a line starting with ':', i.e. with an empty field name.
    if ((colon === -1 ? line : line.slice(0, colon)) !== 'data') return;
    const value = colon === -1 ? '' : line.slice(colon + 1);
    this.dataLines.push(value.startsWith(' ') ? value.slice(1) : value);
  }

  private dispatch(): void {
    if (this.dataLines.length === 0) return;
    const data = this.dataLines.join('\n');
    this.dataLines = [];
    this.onData(data);
  }
}
