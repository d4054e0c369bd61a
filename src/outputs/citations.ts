/**
 * Checks a row's sources against what the task read (decisions §15.1). A source naming a URL is
 * matched to the snapshots of that URL (asked for or arrived at), one naming an upload to the
 * snapshot of that input's text; a quote must appear in one of them, compared after
 * normalizing case, white space, quotation marks and dashes. The verdicts:
 *
 * - quote_found: the quote is in a snapshot of that source;
 * - page_read: no quote given, and the source was read in this task;
 * - quote_not_found: read, but the quote is in none of its snapshots;
 * - not_read: never read in this task, or outside the task's source policy.
 *
 * A quote found says the page says it, not that it is true.
 */
import type { RowSource, SourceCheck } from '../contract/index.js';
import type { DomainPolicy } from '../net/domain-policy.js';
import type { SourceSnapshotRecord } from '../domain/records.js';
import { normalizeQuoteText } from '../domain/value-match.js';

export interface CheckedSource extends RowSource {
  verified: boolean;
  check: SourceCheck;
  source_id?: string;
  /** Per column it backs: whether its quote holds the value (cell-support.ts). */
  supports?: Record<string, boolean | null>;
}

/** The key two spellings of one URL share: parsed, without its fragment. Unparsable text is its own key. */
export function urlKey(url: string): string {
  try {
    const parsed = new URL(url.trim());
    parsed.hash = '';
    return parsed.href;
  } catch {
    return url;
  }
}

/** An upload's snapshot URL. */
export function uploadUrl(uploadId: string): string {
  return `upload:${uploadId}`;
}

/**
 * Normalized snapshot texts across calls, by snapshot id and text hash: a snapshot never changes
 * once stored, and a large input is cited call after call. Bounded in characters; least recently
 * used go first.
 */
const normalizedCache = new Map<string, string>();
const NORMALIZED_CACHE_CHARS = 64_000_000;
let normalizedChars = 0;

function normalizedSnapshot(snapshot: SourceSnapshotRecord): string {
  const key = `${snapshot.id}:${snapshot.sha256}`;
  let text = normalizedCache.get(key);
  if (text !== undefined) {
    normalizedCache.delete(key);
    normalizedCache.set(key, text);
    return text;
  }
  text = normalizeQuoteText(snapshot.text);
  normalizedCache.set(key, text);
  normalizedChars += text.length;
  for (const [id, old] of normalizedCache) {
    if (normalizedChars <= NORMALIZED_CACHE_CHARS || normalizedCache.size <= 1) break;
    normalizedCache.delete(id);
    normalizedChars -= old.length;
  }
  return text;
}

/**
 * Checks sources against snapshots. A snapshot's normalized text is computed once and kept
 * (normalizedSnapshot), so the rows of one call, and later calls, share it.
 */
export class CitationChecker {
  private readonly byUrl = new Map<string, SourceSnapshotRecord[]>();
  private readonly byUpload = new Map<string, SourceSnapshotRecord[]>();

  constructor(snapshots: readonly SourceSnapshotRecord[], private readonly policy: DomainPolicy) {
    for (const s of snapshots) {
      if (s.uploadId !== null) push(this.byUpload, s.uploadId, s);
      else for (const key of new Set([urlKey(s.url), urlKey(s.finalUrl)])) push(this.byUrl, key, s);
    }
  }

  check(source: RowSource): CheckedSource {
    const read = source.upload_id !== undefined
      ? (this.byUpload.get(source.upload_id) ?? [])
      : source.url !== undefined && this.policy.refuses(source.url) === undefined ? (this.byUrl.get(urlKey(source.url)) ?? []) : [];
    if (read.length === 0) return { ...source, verified: false, check: 'not_read' };
    const quote = source.quote === undefined ? '' : normalizeQuoteText(source.quote);
    if (quote === '') return { ...source, verified: true, check: 'page_read', source_id: read[read.length - 1]!.id };
    const found = read.find((s) => normalizedSnapshot(s).includes(quote));
    return found ? { ...source, verified: true, check: 'quote_found', source_id: found.id } : { ...source, verified: false, check: 'quote_not_found', source_id: read[read.length - 1]!.id };
  }
}

/** A row counts as verified when it has sources and every one of them is verified. */
export function rowVerified(sources: readonly CheckedSource[]): boolean {
  return sources.length > 0 && sources.every((s) => s.verified);
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
