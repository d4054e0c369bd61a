/**
 * Unit tests of how a row's sources are checked against what the task read
 * (src/outputs/citations.ts) and of the task's source policy (src/net/domain-policy.ts),
 * decisions §15.1. No server: snapshots are built here as the store would return them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CitationChecker, rowVerified, uploadUrl, urlKey, type CheckedSource } from '../../src/outputs/citations.js';
import { normalizeQuoteText } from '../../src/domain/value-match.js';
import { domainPolicy, normalizeDomain, OPEN_POLICY } from '../../src/net/domain-policy.js';
import type { SourceSnapshotRecord } from '../../src/domain/records.js';

let nextId = 0;
function snapshot(fields: Partial<SourceSnapshotRecord> & { text: string }): SourceSnapshotRecord {
  const url = fields.url ?? 'https://example.com/page';
  return {
    id: `src_${String(++nextId).padStart(4, '0')}`,
    taskId: 'tsk_1',
    url,
    finalUrl: fields.finalUrl ?? url,
    uploadId: null,
    title: null,
    fetchedAt: '2024-05-31T12:00:00.000Z',
    sha256: '0'.repeat(64),
    bytes: Buffer.byteLength(fields.text),
    ...fields,
  };
}

function upload(uploadId: string, text: string): SourceSnapshotRecord {
  return snapshot({ url: uploadUrl(uploadId), finalUrl: uploadUrl(uploadId), uploadId, title: `${uploadId}.txt`, text });
}

const PAGE = 'https://example.com/granite';
const PAGE_TEXT = 'Granite in Barre\n\nThe Rock of Ages quarry in Barre, Vermont, opened in 1885.\nIts owners call it the \u201clargest deep-hole granite quarry\u201d in the world \u2014 a claim first made in 1925\u2026';

describe('normalizeQuoteText', () => {
  it('lower-cases and makes every run of white space one space, trimmed', () => {
    assert.equal(normalizeQuoteText('  The   Rock\tof\nAges \r\n QUARRY  '), 'the rock of ages quarry');
    assert.equal(normalizeQuoteText('no\u00a0break\u202fspace\u2003em'), 'no break space em');
  });

  it('makes typographic single and double quotes plain', () => {
    assert.equal(normalizeQuoteText('\u2018it\u2019s\u2019 \u201cgranite\u201d \u201eLow\u201f \u00abgui\u00bb'), '\'it\'s\' "granite" "low" "gui"');
    assert.equal(normalizeQuoteText('it`s 5\u2032 10\u2033'), 'it\'s 5\' 10"');
  });

  it('makes dashes and the minus sign a hyphen, and the ellipsis three dots', () => {
    assert.equal(normalizeQuoteText('1885\u20131890 \u2014 a claim \u2012 \u2010x\u2011y \u2212 5 \uff0d'), '1885-1890 - a claim - -x-y - 5 -');
    assert.equal(normalizeQuoteText('and so on\u2026'), 'and so on...');
  });

  it('gives a page and a quote that differ only in those ways one form', () => {
    const page = 'Its owners call it the \u201cLargest deep-hole granite quarry\u201d in the world \u2014 a claim.';
    const quote = 'its owners  call it\nthe "largest DEEP-HOLE granite quarry" in the world - a claim.';
    assert.equal(normalizeQuoteText(page), normalizeQuoteText(quote));
  });

  it('keeps what differs in substance: letters, digits, punctuation other than quotes and dashes', () => {
    assert.notEqual(normalizeQuoteText('opened in 1885'), normalizeQuoteText('opened in 1886'));
    assert.notEqual(normalizeQuoteText('a, b'), normalizeQuoteText('a b'));
    assert.equal(normalizeQuoteText('   \n\t '), '');
  });

  it('drops invisible characters inside a word (soft hyphen, zero-width space) rather than splitting the word', () => {
    // A page with "gran&shy;ite" shows "granite"; a quote copied from what is shown must match it.
    assert.equal(normalizeQuoteText('gran\u00adite quarry'), normalizeQuoteText('granite quarry'), 'soft hyphen U+00AD');
    assert.equal(normalizeQuoteText('Stein\u200bbruch'), normalizeQuoteText('Steinbruch'), 'zero-width space U+200B');
  });
});

describe('urlKey', () => {
  it('drops the fragment and gives every spelling of one URL one key', () => {
    assert.equal(urlKey('https://example.com/a#part'), 'https://example.com/a');
    assert.equal(urlKey('  HTTPS://Example.COM:443/a  '), 'https://example.com/a');
    assert.equal(urlKey('http://example.com'), 'http://example.com/');
    assert.equal(urlKey('http://example.com:80/caf\u00e9?q=1'), 'http://example.com/caf%C3%A9?q=1');
  });

  it('keeps what makes another URL: path, query, scheme, port', () => {
    assert.notEqual(urlKey('https://example.com/a'), urlKey('https://example.com/a/'));
    assert.notEqual(urlKey('https://example.com/a?x=1'), urlKey('https://example.com/a?x=2'));
    assert.notEqual(urlKey('http://example.com/a'), urlKey('https://example.com/a'));
    assert.notEqual(urlKey('https://example.com:8443/a'), urlKey('https://example.com/a'));
  });

  it('gives unparsable text as its own key', () => {
    assert.equal(urlKey('not a url'), 'not a url');
  });

  it('names an upload by upload:<id>', () => {
    assert.equal(uploadUrl('upl_123'), 'upload:upl_123');
  });
});

describe('CitationChecker', () => {
  const page = snapshot({ url: PAGE, text: PAGE_TEXT });

  it('quote_found for a quote in the snapshot, exact or normalized, with that snapshot\'s id', () => {
    const checker = new CitationChecker([page], OPEN_POLICY);
    for (const quote of ['The Rock of Ages quarry in Barre, Vermont, opened in 1885.', 'the "LARGEST deep-hole granite quarry" in the world - a claim first made in 1925...', 'Granite in Barre The Rock']) {
      assert.deepEqual(checker.check({ url: PAGE, quote }), { url: PAGE, quote, verified: true, check: 'quote_found', source_id: page.id }, quote);
    }
  });

  it('keeps the source\'s own fields and does not change the source it was given', () => {
    const source = { url: PAGE, title: 'Granite', quote: 'opened in 1885', fields: ['opened'] };
    const copy = structuredClone(source);
    const checked = new CitationChecker([page], OPEN_POLICY).check(source);
    assert.deepEqual(checked, { ...copy, verified: true, check: 'quote_found', source_id: page.id });
    assert.deepEqual(source, copy);
  });

  it('quote_not_found for a quote the snapshot lacks, naming the snapshot checked', () => {
    const checked = new CitationChecker([page], OPEN_POLICY).check({ url: PAGE, quote: 'opened in 1642' });
    assert.deepEqual({ check: checked.check, verified: checked.verified, source_id: checked.source_id }, { check: 'quote_not_found', verified: false, source_id: page.id });
  });

  it('page_read when no quote is given (or only white space) and the page was read', () => {
    const checker = new CitationChecker([page], OPEN_POLICY);
    assert.deepEqual(checker.check({ url: PAGE }), { url: PAGE, verified: true, check: 'page_read', source_id: page.id });
    assert.equal(checker.check({ url: PAGE, quote: '' }).check, 'page_read');
  });

  it('not_read for a URL never read, with no source_id', () => {
    const checked = new CitationChecker([page], OPEN_POLICY).check({ url: 'https://example.com/other', quote: 'opened in 1885' });
    assert.deepEqual(checked, { url: 'https://example.com/other', quote: 'opened in 1885', verified: false, check: 'not_read' });
    assert.equal(new CitationChecker([], OPEN_POLICY).check({ url: PAGE }).check, 'not_read');
  });

  it('matches the URL asked for and the URL arrived at, and ignores a #fragment and spelling', () => {
    const moved = snapshot({ url: 'https://example.com/old', finalUrl: 'https://www.example.com/new', text: 'Marble from Carrara.' });
    const checker = new CitationChecker([moved], OPEN_POLICY);
    for (const url of ['https://example.com/old', 'https://www.example.com/new', 'https://www.example.com/new#top', 'HTTPS://WWW.Example.com/new']) {
      const checked = checker.check({ url, quote: 'marble from carrara' });
      assert.equal(checked.check, 'quote_found', url);
      assert.equal(checked.source_id, moved.id, url);
    }
  });

  it('a page read several times (it changed): a quote found in any snapshot names that one; otherwise the latest is named', () => {
    const older = snapshot({ url: PAGE, text: 'Output in 2023: 4,000 tonnes.' });
    const newer = snapshot({ url: PAGE, text: 'Output in 2024: 4,400 tonnes.' });
    const checker = new CitationChecker([older, newer], OPEN_POLICY);
    assert.equal(checker.check({ url: PAGE, quote: 'output in 2023' }).source_id, older.id);
    assert.equal(checker.check({ url: PAGE, quote: 'output in 2024' }).source_id, newer.id);
    assert.deepEqual(checker.check({ url: PAGE, quote: 'output in 2025' }), { url: PAGE, quote: 'output in 2025', verified: false, check: 'quote_not_found', source_id: newer.id });
    assert.equal(checker.check({ url: PAGE }).source_id, newer.id);
  });

  it('uploads are matched by upload_id only: quote_found, page_read, quote_not_found, not_read', () => {
    const ledger = upload('upl_a', 'Cava Fantiscritti: 12,000 tonnes.\nRock of Ages \u2014 4,000 tonnes.');
    const checker = new CitationChecker([ledger], OPEN_POLICY);
    assert.deepEqual(checker.check({ upload_id: 'upl_a', quote: 'rock of ages - 4,000 tonnes' }), { upload_id: 'upl_a', quote: 'rock of ages - 4,000 tonnes', verified: true, check: 'quote_found', source_id: ledger.id });
    assert.equal(checker.check({ upload_id: 'upl_a' }).check, 'page_read');
    assert.equal(checker.check({ upload_id: 'upl_a', quote: '99,000 tonnes' }).check, 'quote_not_found');
    assert.equal(checker.check({ upload_id: 'upl_b', quote: '12,000 tonnes' }).check, 'not_read');
    // The upload's snapshot URL is not a page anyone fetched.
    assert.equal(checker.check({ url: uploadUrl('upl_a') }).check, 'not_read');
  });

  it('a URL outside the policy is not_read even though a snapshot of it exists', () => {
    const blog = snapshot({ url: 'https://blog.bad.example/post', text: 'Granite is soft.' });
    const news = snapshot({ url: 'https://news.example.com/story', text: 'Granite is hard.' });
    const excluding = new CitationChecker([blog, news], domainPolicy({ include_domains: [], exclude_domains: ['bad.example'] }));
    assert.deepEqual(excluding.check({ url: 'https://blog.bad.example/post', quote: 'granite is soft' }), { url: 'https://blog.bad.example/post', quote: 'granite is soft', verified: false, check: 'not_read' });
    assert.equal(excluding.check({ url: 'https://news.example.com/story', quote: 'granite is hard' }).check, 'quote_found');
    const including = new CitationChecker([blog, news], domainPolicy({ include_domains: ['example.com'], exclude_domains: [] }));
    assert.equal(including.check({ url: 'https://blog.bad.example/post' }).check, 'not_read');
    assert.equal(including.check({ url: 'https://news.example.com/story' }).check, 'page_read');
    // Uploads are not under the domain policy.
    const withUpload = new CitationChecker([upload('upl_c', 'Notes.')], domainPolicy({ include_domains: ['example.com'], exclude_domains: [] }));
    assert.equal(withUpload.check({ upload_id: 'upl_c' }).check, 'page_read');
  });

  it('checks many quotes against a 100,000-character snapshot quickly', () => {
    const big = snapshot({ url: PAGE, text: `${'Filler about gravel and sand. '.repeat(3400)}The marker sentence.` });
    const checker = new CitationChecker([big], OPEN_POLICY);
    const started = performance.now();
    for (let i = 0; i < 5000; i++) checker.check({ url: PAGE, quote: `A quote that is not there, number ${i}.` });
    assert.equal(checker.check({ url: PAGE, quote: 'the MARKER sentence' }).check, 'quote_found');
    const ms = performance.now() - started;
    assert.ok(ms < 2000, `5,000 quotes took ${Math.round(ms)} ms`);
  });
});

describe('rowVerified', () => {
  const ok: CheckedSource = { url: PAGE, verified: true, check: 'quote_found', source_id: 'src_1' };
  const read: CheckedSource = { url: PAGE, verified: true, check: 'page_read', source_id: 'src_1' };
  const bad: CheckedSource = { url: PAGE, verified: false, check: 'quote_not_found', source_id: 'src_1' };
  const unread: CheckedSource = { url: 'https://example.com/x', verified: false, check: 'not_read' };

  it('is true only for a row with sources, every one verified', () => {
    assert.equal(rowVerified([ok]), true);
    assert.equal(rowVerified([ok, read]), true);
    assert.equal(rowVerified([]), false, 'a row without sources is not verified');
    assert.equal(rowVerified([ok, bad]), false);
    assert.equal(rowVerified([read, unread]), false);
  });
});

describe('domain policy', () => {
  it('no domains: every URL is allowed', () => {
    const open = domainPolicy({ include_domains: [], exclude_domains: [] });
    assert.equal(open.refuses('https://anything.example/'), undefined);
    assert.equal(domainPolicy(undefined).refuses('https://anything.example/'), undefined);
  });

  it('a domain covers itself and its subdomains, not a name that merely ends like it', () => {
    const policy = domainPolicy({ include_domains: ['example.com'], exclude_domains: [] });
    for (const url of ['https://example.com/', 'https://www.example.com/a', 'http://a.b.example.com:8080/x', 'https://EXAMPLE.com/', 'https://example.com./']) {
      assert.equal(policy.refuses(url), undefined, url);
    }
    for (const url of ['https://badexample.com/', 'https://example.com.evil.org/', 'https://example.org/', 'https://example.com@evil.org/']) {
      assert.match(policy.refuses(url) ?? '', /outside the task's source policy \(include_domains: example\.com\)/, url);
    }
  });

  it('exclude_domains wins over include_domains, for the domain and its subdomains', () => {
    const policy = domainPolicy({ include_domains: ['example.com'], exclude_domains: ['ads.example.com'] });
    assert.equal(policy.refuses('https://www.example.com/'), undefined);
    assert.match(policy.refuses('https://ads.example.com/') ?? '', /ads\.example\.com is excluded by the task's source policy \(exclude_domains: ads\.example\.com\)/);
    assert.match(policy.refuses('https://x.ads.example.com/') ?? '', /excluded/);
    const both = domainPolicy({ include_domains: ['example.com'], exclude_domains: ['example.com'] });
    assert.match(both.refuses('https://example.com/') ?? '', /excluded/);
  });

  it('with only exclude_domains, everything else is allowed', () => {
    const policy = domainPolicy({ include_domains: [], exclude_domains: ['pinterest.com'] });
    assert.equal(policy.refuses('https://example.org/'), undefined);
    assert.match(policy.refuses('https://www.pinterest.com/pin/1') ?? '', /excluded/);
    assert.equal(policy.refuses('https://notpinterest.com/'), undefined);
  });

  it('takes a URL object as well, and refuses what is not a URL', () => {
    const policy = domainPolicy({ include_domains: ['example.com'], exclude_domains: [] });
    assert.equal(policy.refuses(new URL('https://www.example.com/')), undefined);
    assert.match(policy.refuses('not a url') ?? '', /not a valid URL/);
  });

  it('names a long include list in short', () => {
    const include = Array.from({ length: 12 }, (_, i) => `d${i}.example`);
    const why = domainPolicy({ include_domains: include, exclude_domains: [] }).refuses('https://other.example/') ?? '';
    assert.ok(why.includes('d9.example, \u2026') && !why.includes('d10.example'), why);
  });

  it('normalizeDomain lower-cases and drops a leading *. or . and a trailing dot', () => {
    assert.equal(normalizeDomain(' *.Example.COM. '), 'example.com');
    assert.equal(normalizeDomain('.example.com'), 'example.com');
    assert.equal(normalizeDomain('Sub.Example.com'), 'sub.example.com');
  });
});
