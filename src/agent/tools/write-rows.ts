import { Type } from 'typebox';
import { CitationChecker, rowVerified, urlKey, type CheckedSource } from '../../outputs/citations.js';
import { columnTypes, countCells, emptyCounts, supportRow } from '../../outputs/cell-support.js';
import type { RowTally } from '../../domain/records.js';
import { MAX_ROWS_PER_CALL, serializeRow, validateRows, type RowError, type ValidRow } from '../../domain/row-validation.js';
import { CONFIDENCE_LEVELS, type OutputDecl } from '../../contract/index.js';
import { domainPolicy } from '../../net/domain-policy.js';
import { parseRowFile, RowFileError, rowFileFormat } from '../../sandbox/row-file.js';
import { readOutputFile, WorkspaceFileError } from '../../sandbox/workspace.js';
import type { AgentTool, ToolContext, ToolResult } from './tool.js';

/** Largest file `from_file` reads. */
export const MAX_ROW_FILE_BYTES = 64 * 1024 * 1024;

const SourceSchema = Type.Object({
  url: Type.Optional(Type.String({ description: 'A URL you read with fetch_url (as asked for, or as it ended after redirects).' })),
  upload_id: Type.Optional(Type.String({ description: 'A task input you read with read_input.' })),
  title: Type.Optional(Type.String()),
  quote: Type.Optional(Type.String({ description: 'A short span copied exactly from the text you read (a sentence or less); it is checked against that text.' })),
  fields: Type.Optional(Type.Array(Type.String(), { description: 'The columns this source supports; absent: the whole row.' })),
});

// confidence is checked with the rows (row-validation.ts parseBasis), whose message names the row and column.
const BasisSchema = Type.Record(Type.String(), Type.Object({
  confidence: Type.String({ description: CONFIDENCE_LEVELS.join(', ') }),
  reasoning: Type.Optional(Type.String()),
}));

const parameters = Type.Object({
  output: Type.String({ description: 'Id of the output to append to.' }),
  rows: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }), { minItems: 1, description: 'Rows to append. A row may carry its own "_sources". Send rows or from_file, not both.' })),
  from_file: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 512,
      description: `Instead of rows: a file that run_code wrote in /workspace/outputs/, e.g. "results.csv". CSV (first line = column names) for table outputs, or JSONL (one JSON object per line) for table and records outputs; at most ${MAX_ROWS_PER_CALL} rows.`,
    }),
  ),
  sources: Type.Optional(Type.Array(SourceSchema, { description: 'Sources backing every row of this call (url or upload_id, title, quote, fields).' })),
  basis: Type.Optional(Type.Array(Type.Union([BasisSchema, Type.Null()]), {
    description: 'One entry per row (or null), in row order: for the columns you can say so, {"<column>": {"confidence": "high"|"medium"|"low", "reasoning": "why"}}.',
  })),
});

interface WriteRowsArgs {
  output: string;
  rows?: unknown[];
  from_file?: string;
  sources?: unknown[];
  basis?: unknown[];
}

/** The most unverified sources one answer lists. */
const MAX_LISTED_SOURCES = 20;

function rejected(output: OutputDecl, count: number, problems: string[], where = ''): ToolResult {
  return { isError: true, content: `No rows were written${where}; fix these and call again:\n${problems.join('\n')}`, summary: `rejected ${count} rows for ${output.id}` };
}

function describeErrors(errors: RowError[], rowLabel: (index: number) => string): string[] {
  return errors.map((e) => `- ${e.index === null ? '' : `${rowLabel(e.index)}: `}${e.field ? `${e.field}: ` : ''}${e.message}`);
}

/** Loads rows from a workspace file; a string is the reason it cannot. */
async function rowsFromFile(output: OutputDecl, file: string, ctx: ToolContext): Promise<{ rows: unknown[]; lines: number[]; name: string } | string> {
  const format = rowFileFormat(file);
  if (!format) return `from_file must name a .csv or .jsonl file, got ${JSON.stringify(file)}.`;
  if (output.kind === 'report') return `Output "${output.id}" is a report: send its rows (heading, markdown) inline; from_file loads table and records outputs.`;
  if (output.kind === 'records' && format === 'csv') return `Output "${output.id}" holds records: write them as JSONL (one JSON object per line), not CSV.`;
  try {
    const { relative, text } = await readOutputFile(await ctx.workspaceDir(), file, MAX_ROW_FILE_BYTES);
    const parsed = parseRowFile(text, format);
    if (parsed.rows.length === 0) return `${relative} holds no rows.`;
    if (parsed.rows.length > MAX_ROWS_PER_CALL) {
      return `${relative} has ${parsed.rows.length} rows, more than ${MAX_ROWS_PER_CALL} per call: split it into files of at most ${MAX_ROWS_PER_CALL} rows (e.g. with run_code) and call write_rows for each.`;
    }
    return { rows: parsed.rows, lines: parsed.lines, name: relative };
  } catch (err) {
    if (err instanceof WorkspaceFileError) return `${err.message}.`;
    if (err instanceof RowFileError) return `${file} cannot be read as ${format.toUpperCase()}: ${err.message}.`;
    throw err;
  }
}

export const writeRowsTool: AgentTool<WriteRowsArgs> = {
  name: 'write_rows',
  description:
    'Validate rows against an output declared in the spec and append them, either inline (rows) or from a CSV or JSONL file that run_code wrote to /workspace/outputs/ (from_file). ' +
    'Cite where every fact came from in sources (a row may carry its own "_sources"): only pages you read with fetch_url and inputs you read with read_input count, ' +
    'and each quote must be copied exactly from that text; say which columns a source supports in "fields", and give basis for how sure you are.',
  parameters,
  async run(args, ctx) {
    const output = ctx.spec().outputs.find((o) => o.id === args.output);
    if (!output) {
      const ids = ctx.spec().outputs.map((o) => o.id).join(', ') || 'none yet; declare one with update_spec';
      return { isError: true, content: `No output "${args.output}". Declared outputs: ${ids}.`, summary: `unknown output ${args.output}` };
    }
    if ((args.rows === undefined) === (args.from_file === undefined)) {
      const content = args.rows === undefined
        ? 'Send the rows to write: either rows (an array of row objects) or from_file (a CSV or JSONL file in /workspace/outputs/).'
        : 'Send either rows or from_file, not both.';
      return { isError: true, content, summary: `no rows for ${output.id}` };
    }

    let rows: unknown[];
    // Rows of a refused call are named by their place in it, counted from 1 like lines and sources.
    let rowLabel = (index: number) => `row ${index + 1}`;
    let from = '';
    if (args.from_file !== undefined) {
      const loaded = await rowsFromFile(output, args.from_file, ctx);
      if (typeof loaded === 'string') return { isError: true, content: `No rows were written: ${loaded}`, summary: `could not load ${args.from_file}` };
      rows = loaded.rows;
      rowLabel = (index) => `line ${loaded.lines[index] ?? '?'}`;
      from = ` from ${loaded.name}`;
    } else {
      rows = args.rows!;
    }

    const checked = validateRows(output, rows, args.sources, args.basis);
    if (!checked.ok) return rejected(output, rows.length, describeErrors(checked.errors, rowLabel), from);

    const keys = output.key ? rowKeys(output.key, checked.rows) : undefined;
    if (keys && 'repeated' in keys) return rejected(output, rows.length, keys.repeated.map((r) => `- ${rowLabel(r.index)}: repeats the key ${r.key} of ${rowLabel(r.first)}: write each key once per call`), from);

    const verified = await checkCitations(checked.rows, output, ctx);
    const problemsOf = (label: (index: number) => string) => verified.flatMap((row, i) => unverifiedSources(row.sources, label(i)));
    const unsupportedOf = (label: (index: number) => string) => verified.flatMap((row, i) => unsupportedCells(row, label(i)));
    const tally: RowTally = { verified: verified.filter((row) => rowVerified(row.sources as CheckedSource[])).length, cells: emptyCounts() };
    for (const row of verified) countCells(tally.cells, row.support ?? {});
    const mode = ctx.spec().citations;
    if ((mode === 'require_verified' || mode === 'require_supported') && tally.verified < verified.length) {
      return rejected(output, rows.length, [
        ...listed(problemsOf(rowLabel)),
        'This task requires every row to cite at least one verified source and no unverified one: fetch the page (or read the input) first, copy quotes exactly from its text, and drop sources that do not hold.',
      ], from);
    }
    if (mode === 'require_supported' && tally.cells.unsupported > 0) {
      return rejected(output, rows.length, [
        ...listed(unsupportedOf(rowLabel)),
        'This task requires every value a quote is checked for to appear in that quote: quote the sentence of the page that states the value (copied exactly), correct the value to what the source says, or name in "fields" only the columns the source backs.',
      ], from);
    }
    const writers = verified.map((row) => (n: number) => serializeRow(n, row));
    if (keys) {
      const written = await ctx.appendRows(output.id, writers, tally, { keys: keys.keys, verified: verified.map((row) => rowVerified(row.sources as CheckedSource[])) });
      const problems = listed(problemsOf(rowLabel));
      let content = `Wrote ${written.count} rows${from} to ${output.id}, keyed by ${output.key!.join(', ')}: a key already there replaced its row in place, a new key was appended; ${tally.verified} of them verified.`;
      if (checked.unsourced > 0) content += ` ${checked.unsourced} of them have no sources: every fact must be traceable, so write them again with sources.`;
      if (problems.length > 0) content += ` These sources could not be verified:\n${problems.join('\n')}`;
      if (tally.cells.unsupported > 0) content += `\nThese values are not in the quotes that should back them:\n${listed(unsupportedOf(rowLabel)).join('\n')}`;
      return {
        content,
        summary: `wrote ${written.count} keyed rows${from} to ${output.id} (${tally.verified} verified)`,
        rows: { output: output.id, first_row: written.firstRow, count: written.count, verified: tally.verified },
      };
    }
    const written = await ctx.appendRows(output.id, writers, tally);
    const last = written.firstRow + written.count - 1;
    // Rows written are named by their _row, as the answer's range is; a file's by its line.
    const writtenLabel = args.from_file !== undefined ? rowLabel : (index: number) => `row ${written.firstRow + index}`;
    const problems = problemsOf(writtenLabel);
    let content = `Wrote ${written.count} rows${from} to ${output.id} (rows ${written.firstRow}-${last}); ${tally.verified} of them verified. ${output.id} now has ${last} rows.`;
    if (checked.unsourced > 0) content += ` ${checked.unsourced} of them have no sources: every fact must be traceable, so write them again with sources or cite them in a later call.`;
    if (problems.length > 0) content += ` These sources could not be verified:\n${listed(problems).join('\n')}`;
    if (tally.cells.unsupported > 0) content += `\nThese values are not in the quotes that should back them:\n${listed(unsupportedOf(writtenLabel)).join('\n')}`;
    return {
      content,
      summary: `wrote ${written.count} rows${from} to ${output.id} (${tally.verified} verified)`,
      rows: { output: output.id, first_row: written.firstRow, count: written.count, verified: tally.verified },
    };
  },
};

/** Each row's key (the JSON array of its key columns' values), or the rows that repeat a key of the call. */
function rowKeys(key: string[], rows: ValidRow[]): { keys: string[] } | { repeated: { index: number; first: number; key: string }[] } {
  const seen = new Map<string, number>();
  const repeated: { index: number; first: number; key: string }[] = [];
  const keys = rows.map((row, index) => {
    const text = JSON.stringify(key.map((column) => row.values[column] ?? null));
    const first = seen.get(text);
    if (first === undefined) seen.set(text, index);
    else repeated.push({ index, first, key: text });
    return text;
  });
  return repeated.length > 0 ? { repeated } : { keys };
}

/** The rows with each source checked against the snapshots of what the task read, and each cell against the quotes. */
async function checkCitations(rows: ValidRow[], output: OutputDecl, ctx: ToolContext): Promise<ValidRow[]> {

  const urls = new Set<string>();
  const uploads = new Set<string>();
  for (const row of rows) {
    for (const s of row.sources) {
      if (s.url !== undefined) urls.add(urlKey(s.url));
      if (s.upload_id !== undefined) uploads.add(s.upload_id);
    }
  }
  const checker = new CitationChecker(await ctx.citedSources([...urls], [...uploads]), domainPolicy(ctx.spec().sources));
  const typeOf = columnTypes(output);
  return rows.map((row) => {
    const { sources, support } = supportRow(row.values, row.sources.map((s) => checker.check(s)), typeOf);
    return { ...row, sources, support };
  });
}

/** The row's unsupported cells, one line each: the column, the value, and every source and quote it was looked for in. */
function unsupportedCells(row: ValidRow, label: string): string[] {
  return Object.entries(row.support ?? {}).filter(([, verdict]) => verdict === 'unsupported').map(([column]) => {
    const looked = (row.sources as CheckedSource[]).flatMap((s, j) => (s.supports?.[column] === false ? [`source ${j + 1} (${s.url ?? `upload ${s.upload_id}`}) quote ${JSON.stringify(s.quote)}`] : []));
    return `- ${label}, column ${column}: the value ${JSON.stringify(row.values[column])} is not in ${looked.join(', nor in ')}`;
  });
}

/** What is wrong with a row's citations, one line each (none when the row is verified). */
function unverifiedSources(sources: ValidRow['sources'], label: string): string[] {
  if (sources.length === 0) return [`- ${label}: cites no source`];
  return (sources as CheckedSource[]).flatMap((s, j) => {
    const what = s.url ?? `upload ${s.upload_id}`;
    if (s.check === 'not_read') return [`- ${label}, source ${j + 1} (${what}): not_read: this task never ${s.url !== undefined ? 'fetched that URL with fetch_url (or it is outside the source policy)' : 'read that input with read_input'}`];
    if (s.check === 'quote_not_found') return [`- ${label}, source ${j + 1} (${what}): quote_not_found: the quote is not in the text read (${s.source_id}); copy a short span exactly`];
    return [];
  });
}

function listed(lines: string[]): string[] {
  return lines.length <= MAX_LISTED_SOURCES ? lines : [...lines.slice(0, MAX_LISTED_SOURCES), `- …and ${lines.length - MAX_LISTED_SOURCES} more`];
}
