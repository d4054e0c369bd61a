/**
 * read_source {source_id, offset?, length?}: reads again a snapshot this task already stored (a
 * page fetch_url read, an input read_input read), a window of characters at a time, without
 * fetching anything (decisions §16.3): what a compaction of the conversation dropped can be read
 * back. The text is the snapshot's, so quotes copied from it check out.
 */
import { Type } from 'typebox';
import type { AgentTool } from './tool.js';
import { count, DEFAULT_READ_LENGTH, MAX_READ_LENGTH, textWindow } from './read-input.js';

interface ReadSourceArgs {
  source_id: string;
  offset?: number;
  length?: number;
}

const parameters = Type.Object({
  source_id: Type.String({ minLength: 1, maxLength: 64, description: 'The source_id a fetch_url or read_input result gave (src_…).' }),
  offset: Type.Optional(Type.Integer({ minimum: 0, description: 'Character to start at (default 0).' })),
  length: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_READ_LENGTH, description: `Characters to read (default ${DEFAULT_READ_LENGTH}, at most ${MAX_READ_LENGTH}).` })),
});

export const readSourceTool: AgentTool<ReadSourceArgs> = {
  name: 'read_source',
  concurrent: true,
  description:
    'Read again a page or input this task already read, by its source_id, a window of characters at a time, without fetching it again. ' +
    'The text is the stored snapshot that citations are checked against; cite it by its URL (or upload_id) as before.',
  parameters,
  async run(args, ctx) {
    const source = await ctx.source(args.source_id);
    if (!source) return { isError: true, content: `This task has no source ${args.source_id}: use a source_id that a fetch_url or read_input result gave.`, summary: `unknown source ${args.source_id}` };
    const total = source.text.length;
    const offset = args.offset ?? 0;
    const read = textWindow(source.text, offset, args.length);
    if (!read) return { isError: true, content: `offset ${offset} is past the end of ${source.id}, which has ${count(total)} characters.`, summary: `offset past end of ${source.id}` };
    const { start, end, window } = read;
    const head = [`Source: ${source.id}`, `URL: ${source.uploadId ? `upload ${source.uploadId}` : source.finalUrl}`];
    if (source.title) head.push(`Title: ${source.title}`);
    head.push(`Read at: ${source.fetchedAt}`);
    head.push(start === 0 && end === total ? `Characters 0-${count(end)} of ${count(total)}: the whole text.` : `Characters ${count(start)}-${count(end)} of ${count(total)}.`);
    if (end < total) head.push(`More follows: call read_source with source_id "${source.id}" and offset ${end} to read on.`);
    return { content: `${head.join('\n')}\n\n${window || '(The source has no text.)'}`, summary: `read ${source.id} ${count(start)}-${count(end)} of ${count(total)} chars` };
  },
};
