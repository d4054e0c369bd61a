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
import type { SourceCheck } from '../contract/index.js';
import type { DomainPolicy } from '../net/domain-policy.js';
import type { SourceSnapshotRecord } from '../store/store.js';
import type { SourceRef } from './row-validation.js';

export interface CheckedSource extends SourceRef {
  verified: boolean;
  check: SourceCheck;
  source_id?: string;
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

const SINGLE_QUOTES = /[\u2018\u2019\u201a\u201b\u2032\u0060\u00b4]/g;
const DOUBLE_QUOTES = /[\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb]/g;
const DASHES = /[\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d]/g;
const SPACE = /[\s\u200b\u00ad]+/g;

/** The form quotes and pages are compared in: lower case, typographic quotes and dashes made plain, every run of white space one space. */
export function normalizeQuoteText(text: string): string {
  return text.toLowerCase().replace(SINGLE_QUOTES, "'").replace(DOUBLE_QUOTES, '"').replace(DASHES, '-').replace(/\u2026/g, '...').replace(SPACE, ' ').trim();
}

/**
 * Checks sources against snapshots. Normalized snapshot text is computed once per snapshot and
 * kept in `normalized`, so the rows of one call (which often cite the same page) share it.
 */
export class CitationChecker {
  private readonly byUrl = new Map<string, SourceSnapshotRecord[]>();
  private readonly byUpload = new Map<string, SourceSnapshotRecord[]>();
  private readonly normalized = new Map<string, string>();

  constructor(snapshots: readonly SourceSnapshotRecord[], private readonly policy: DomainPolicy) {
    for (const s of snapshots) {
      if (s.uploadId !== null) push(this.byUpload, s.uploadId, s);
      else for (const key of new Set([urlKey(s.url), urlKey(s.finalUrl)])) push(this.byUrl, key, s);
    }
  }

  check(source: SourceRef): CheckedSource {
    const read = source.upload_id !== undefined
      ? (this.byUpload.get(source.upload_id) ?? [])
      : source.url !== undefined && this.policy.refuses(source.url) === undefined ? (this.byUrl.get(urlKey(source.url)) ?? []) : [];
    if (read.length === 0) return { ...source, verified: false, check: 'not_read' };
    const quote = source.quote === undefined ? '' : normalizeQuoteText(source.quote);
    if (quote === '') return { ...source, verified: true, check: 'page_read', source_id: read[read.length - 1]!.id };
    const found = read.find((s) => this.textOf(s).includes(quote));
    return found ? { ...source, verified: true, check: 'quote_found', source_id: found.id } : { ...source, verified: false, check: 'quote_not_found', source_id: read[read.length - 1]!.id };
  }

  private textOf(snapshot: SourceSnapshotRecord): string {
    let text = this.normalized.get(snapshot.id);
    if (text === undefined) {
      text = normalizeQuoteText(snapshot.text);
      this.normalized.set(snapshot.id, text);
    }
    return text;
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
