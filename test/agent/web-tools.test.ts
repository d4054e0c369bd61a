import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv } from 'ajv';
import { createFetchUrlTool, fetchUrlTool, type FetchUrlToolOptions } from '../../src/agent/tools/fetch-url.js';
import type { ToolContext, ToolResult } from '../../src/agent/tools/tool.js';
import { normalizeSpec } from '../../src/domain/spec.js';
import { createWebSearchTool } from '../../src/agent/tools/web-search.js';
import { blockedReason } from '../../src/net/address-policy.js';
import { createWebTools } from '../../src/agent/web/index.js';
import type { Lookup, ResolvedAddress } from '../../src/net/safe-fetch.js';
import { createSearchProvider, SearchError } from '../../src/agent/web/search.js';
import { searchConfigProblem, type SearchConfig } from '../../src/config.js';
import { BRAVE_KEY, startFakeSearch, TAVILY_KEY, type FakeSearch } from '../kit/fake-search-server.js';
import { ARTICLE_FACT, BOILERPLATE, CSV, startFixtureWeb, type FixtureWeb } from '../kit/fixture-web.js';
import { within } from '../kit/bounded-waits.js';

let web: FixtureWeb;
let search: FakeSearch;

before(async () => {
  web = await startFixtureWeb();
  search = await startFakeSearch();
});

after(async () => {
  await web.close();
  await search.close();
});

function toolCtx(signal: AbortSignal = new AbortController().signal): ToolContext {
  const unused = () => {
    throw new Error('not used by web tools');
  };
  return {
    signal, offline: false, writeKey: 'test', callId: 'call_1', spec: () => normalizeSpec({}), updateSpec: unused, rowCounts: unused, appendRows: unused, inputs: unused, workspaceDir: unused,
    recordSource: async () => 'src_test', citedSources: unused, source: unused, waitingOn: () => () => undefined,
  };
}

async function fetchUrl(url: string, opts: FetchUrlToolOptions = { allowPrivate: true }, signal?: AbortSignal): Promise<ToolResult> {
  return createFetchUrlTool({ timeoutMs: 5000, ...opts }).run({ url }, toolCtx(signal));
}

/** The text after the header lines. */
function bodyOf(result: ToolResult): string {
  return result.content.slice(result.content.indexOf('\n\n') + 2);
}

describe('address policy', () => {
  const blocked = [
    '127.0.0.1', '127.255.255.254', '10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '169.254.0.1',
    '100.64.0.1', '100.127.255.255', '0.0.0.0', '0.1.2.3', '224.0.0.1', '239.255.255.250', '255.255.255.255', '240.0.0.1', '192.0.2.10', '198.18.0.1',
    '::', '::1', '[::1]', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'fe80::1%eth0', 'febf::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:7f00:1',
    '::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '::ffff:10.1.2.3', '::ffff:0:10.1.2.3', '::127.0.0.1', '64:ff9b::a9fe:a9fe', '64:ff9b::10.0.0.1',
    '2002:7f00:1::1', '2002:c0a8:101::', '2001:db8::1', 'fec0::1', '2001::1',
  ];
  const allowed = ['93.184.216.34', '8.8.8.8', '1.1.1.1', '172.32.0.1', '172.15.255.255', '100.128.0.1', '192.169.0.1', '169.255.0.1', '2606:4700:4700::1111', '2a00:1450:4001:81b::200e', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'];

  for (const ip of blocked) {
    it(`refuses ${ip}`, () => assert.ok(blockedReason(ip), `${ip} should be blocked`));
  }
  for (const ip of allowed) {
    it(`allows ${ip}`, () => assert.equal(blockedReason(ip), undefined));
  }
  it('treats a string that is not an address as blocked', () => assert.ok(blockedReason('example.com')));
});

describe('fetch_url on the fixture web', () => {
  it('returns the readable article of an HTML page with its title and final URL, without the site chrome', async () => {
    const result = await fetchUrl(`${web.url}/articles/granite.html`);

    assert.ok(!result.isError, result.content);
    assert.match(result.content, new RegExp(`^URL: ${web.url}/articles/granite\\.html$`, 'm'));
    assert.match(result.content, /^Content-Type: text\/html; charset=utf-8$/m);
    assert.match(result.content, /^Title: Granite in Vermont/m);
    assert.match(result.content, /^Byline: By Ada Stone$/m);
    const text = bodyOf(result);
    assert.ok(text.includes(ARTICLE_FACT), text);
    for (const chrome of BOILERPLATE) assert.ok(!text.includes(chrome), `"${chrome}" should be left out:\n${text}`);
    assert.ok(text.includes('## Output by year'));
    assert.ok(text.includes('2023 | 4,000'), 'table rows keep their cells');
    assert.ok(text.includes(`[Marble in Carrara](${web.url}/articles/marble.html)`), 'links are absolute');
    assert.ok(text.includes(`[Quarry list (CSV)](${web.url}/data/quarries.csv)`), 'relative links resolve against the page');
    assert.ok(text.includes('Text with bold and italic words, and a line\nbreak.'));
    assert.match(result.summary, /^fetched .*granite\.html \(html, [\d,]+ chars\)$/);
  });

  it('decodes a page in the charset its Content-Type declares', async () => {
    const result = await fetchUrl(`${web.url}/articles/marble.html`);
    assert.ok(!result.isError, result.content);
    assert.ok(result.content.includes('Pietà') && result.content.includes('café'), result.content);
    assert.ok(result.content.includes(`[granite in Vermont](${web.url}/articles/granite.html)`));
  });

  it('decompresses a gzip-encoded page', async () => {
    const plain = await fetchUrl(`${web.url}/articles/granite.html`);
    const gzipped = await fetchUrl(`${web.url}/articles/granite-gzip.html`);
    assert.equal(bodyOf(gzipped), bodyOf(plain));
    const sent = [...web.requests].reverse().find((r) => r.path === '/articles/granite-gzip.html');
    assert.match(String(sent?.headers['accept-encoding']), /gzip/);
  });

  it('returns the text of a PDF, page by page, with its title', async () => {
    const result = await fetchUrl(`${web.url}/docs/report.pdf`);
    assert.ok(!result.isError, result.content);
    assert.match(result.content, /^Content-Type: application\/pdf$/m);
    assert.match(result.content, /^Title: Quarry Gazette Annual Report$/m);
    assert.match(result.content, /^Pages: 2$/m);
    assert.ok(result.content.includes('[page 1]\nQuarry Gazette annual report 2024\nGranite output rose 12% (to 4,000 t).'));
    assert.ok(result.content.includes('[page 2]\nMarble output held steady at Carrara.'));
  });

  it('returns CSV as it is, JSON pretty-printed, and sniffs JSON served as octet-stream', async () => {
    const csv = await fetchUrl(`${web.url}/data/quarries.csv`);
    assert.equal(bodyOf(csv), CSV);
    assert.match(csv.content, /^Content-Type: text\/csv/m);

    const json = await fetchUrl(`${web.url}/data/quarries.json`);
    assert.ok(bodyOf(json).startsWith('{\n  "quarries": [\n    {\n      "name": "Rock of Ages"'), bodyOf(json));
    const untyped = await fetchUrl(`${web.url}/data/untyped.json`);
    assert.equal(bodyOf(untyped), bodyOf(json));

    const text = await fetchUrl(`${web.url}/notes.txt`);
    assert.equal(bodyOf(text), 'Plain notes: granite is igneous, marble is metamorphic.\n');
  });

  it('follows a redirect chain and reports the final URL and where it started', async () => {
    const result = await fetchUrl(`${web.url}/redirect/chain/4`);
    assert.ok(!result.isError, result.content);
    assert.match(result.content, new RegExp(`^URL: ${web.url}/articles/granite\\.html$`, 'm'));
    assert.match(result.content, new RegExp(`^Redirected from: ${web.url}/redirect/chain/4$`, 'm'));
    assert.ok(result.content.includes(ARTICLE_FACT));

    const relative = await fetchUrl(`${web.url}/redirect/relative`);
    assert.match(relative.content, new RegExp(`^URL: ${web.url}/articles/granite\\.html$`, 'm'));
  });

  it('gives up after 5 redirects, and on a redirect loop', async () => {
    const tooMany = await fetchUrl(`${web.url}/redirect/chain/5`);
    assert.equal(tooMany.isError, true);
    assert.match(tooMany.content, /more than 5 redirects/);
    const loop = await fetchUrl(`${web.url}/redirect/loop`);
    assert.equal(loop.isError, true);
    assert.match(loop.content, /more than 5 redirects/);
  });

  it('refuses a redirect to a file: URL', async () => {
    const result = await fetchUrl(`${web.url}/redirect/file`);
    assert.equal(result.isError, true);
    assert.match(result.content, /only http and https URLs are fetched, not file:/);
  });

  it('reports an HTTP error status with the start of the error page', async () => {
    const result = await fetchUrl(`${web.url}/missing`);
    assert.equal(result.isError, true);
    assert.match(result.content, /^Status: 404 Not Found$/m);
    assert.match(result.content, /HTTP 404; the page says:\n\n# Not found\n\nNo such quarry\./);
    assert.equal(result.summary, `HTTP 404: ${web.url}/missing`);
  });

  it('says when content is not text it can read', async () => {
    const result = await fetchUrl(`${web.url}/image.png`);
    assert.equal(result.isError, true);
    assert.match(result.content, /\(image\/png\) is not text/);
  });

  it('cuts the text at maxChars and says so', async () => {
    const result = await fetchUrl(`${web.url}/articles/granite.html`, { allowPrivate: true, maxChars: 100 });
    assert.ok(!result.isError);
    assert.match(result.content, /^Length: 100 characters$/m);
    assert.match(result.content, /^Note: the text is [\d,]+ characters; only the first 100 are shown$/m);
    assert.equal(bodyOf(result).length, 100);
  });

  it('stops downloading at maxBytes and says the file was cut', async () => {
    const started = Date.now();
    const result = await fetchUrl(`${web.url}/big`, { allowPrivate: true, maxBytes: 100_000, maxChars: 1_000_000 });
    assert.ok(!result.isError, result.content.slice(0, 500));
    assert.match(result.content, /^Note: the file is larger than 100,000 bytes; only its beginning was downloaded$/m);
    assert.match(result.content, /^Length: 100,000 characters$/m);
    assert.ok(Date.now() - started < 3000);
  });

  it('keeps 5 MiB of a larger download by default', async () => {
    const result = await fetchUrl(`${web.url}/big`, { allowPrivate: true, maxChars: 10_000_000 });
    assert.match(result.content, /^Note: the file is larger than 5 MiB; only its beginning was downloaded$/m);
    assert.match(result.content, /^Length: 5,242,880 characters$/m);
  });

  it('gives up on a server that does not answer in time', async () => {
    const started = Date.now();
    const silent = await fetchUrl(`${web.url}/slow`, { allowPrivate: true, timeoutMs: 300 });
    assert.equal(silent.isError, true);
    assert.match(silent.content, /no complete answer within 300 ms/);
    const stalled = await fetchUrl(`${web.url}/slow-body`, { allowPrivate: true, timeoutMs: 300 });
    assert.match(stalled.content, /no complete answer within 300 ms/);
    assert.ok(Date.now() - started < 2000);
  });

  it('reports a connection closed before the body was complete', async () => {
    const result = await fetchUrl(`${web.url}/cut`);
    assert.equal(result.isError, true);
    assert.match(result.content, /closed the connection before the body was complete/);
  });

  it('rejects with the turn’s abort reason at once when the turn is stopped', async () => {
    const controller = new AbortController();
    const pending = fetchUrl(`${web.url}/slow`, { allowPrivate: true }, controller.signal);
    setTimeout(() => controller.abort(new DOMException('stopped', 'AbortError')), 50);
    await assert.rejects(within(pending, 1000), (err: Error) => err.name === 'AbortError');
  });

  it('answers a malformed or non-web URL with an error for the model', async () => {
    for (const [url, message] of [
      ['not a url', /not a valid absolute URL/],
      ['ftp://example.com/file', /only http and https/],
      ['http://user:pw@example.com/', /user name or password/],
    ] as const) {
      const result = await fetchUrl(url);
      assert.equal(result.isError, true, url);
      assert.match(result.content, message);
    }
  });
});

describe('fetch_url refuses non-public addresses', () => {
  const PUBLIC_IP = '93.184.216.34';

  /**
   * Every connection fetch_url tries is recorded and sent to the fixture server instead, so no
   * test can reach a real private address even if a check were missing.
   */
  function guarded(lookupTable: Record<string, string[]>, extra: FetchUrlToolOptions = {}) {
    const attempts: string[] = [];
    const lookups: string[] = [];
    const lookup: Lookup = async (hostname) => {
      lookups.push(hostname);
      const found = lookupTable[hostname];
      if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      return found.map((address): ResolvedAddress => ({ address, family: address.includes(':') ? 6 : 4 }));
    };
    const tool = createFetchUrlTool({
      timeoutMs: 5000,
      lookup,
      connectTo: (address) => {
        attempts.push(address);
        return { host: '127.0.0.1', port: web.port };
      },
      ...extra,
    });
    return { attempts, lookups, run: (url: string) => tool.run({ url }, toolCtx()) };
  }

  it('refuses loopback, private, link-local, metadata, CGNAT and mapped addresses without connecting', async () => {
    const g = guarded({});
    for (const url of [
      `${web.url}/articles/granite.html`,
      'http://127.0.0.1/',
      'http://[::1]/',
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/',
      'http://172.16.5.4/',
      'http://192.168.1.1/',
      'http://100.64.0.1/',
      'http://0.0.0.0/',
      'http://[fd00::1]/',
      'http://[fe80::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:a9fe:a9fe]/',
      'http://2130706433/',
      'http://0x7f.1/',
      'http://017700000001/',
      'https://224.0.0.1/',
    ]) {
      const result = await g.run(url);
      assert.equal(result.isError, true, url);
      assert.match(result.content, /refused: .* not a public address/, url);
      assert.match(result.summary, /^refused: /);
    }
    assert.deepEqual(g.attempts, []);
  });

  it('refuses the loopback fixture by default (QUARRY_FETCH_ALLOW_PRIVATE unset)', async () => {
    const before = web.requests.length;
    const result = await fetchUrlTool.run({ url: `${web.url}/articles/granite.html` }, toolCtx());
    assert.equal(result.isError, true);
    assert.match(result.content, /127\.0\.0\.1 is not a public address \(loopback/);
    assert.equal(web.requests.length, before, 'nothing reached the server');
  });

  it('refuses localhost as resolved by the system', async () => {
    const result = await fetchUrlTool.run({ url: 'http://localhost:1/' }, toolCtx());
    assert.equal(result.isError, true);
    assert.match(result.content, /localhost resolves to .*not a public address/);
  });

  it('refuses a name that resolves to a private address, or to any private address among public ones', async () => {
    const g = guarded({
      'intranet.quarry.test': ['10.0.0.7'],
      'mixed.quarry.test': [PUBLIC_IP, '192.168.0.10'],
      'mapped.quarry.test': ['::ffff:169.254.169.254'],
      'ula.quarry.test': ['fd00::7'],
    });
    for (const [host, address] of [
      ['intranet.quarry.test', '10.0.0.7'],
      ['mixed.quarry.test', '192.168.0.10'],
      ['mapped.quarry.test', '::ffff:169.254.169.254'],
      ['ula.quarry.test', 'fd00::7'],
    ]) {
      const result = await g.run(`http://${host}/`);
      assert.equal(result.isError, true, host);
      assert.ok(result.content.includes(`${host} resolves to ${address}, which is not a public address`), result.content);
    }
    assert.deepEqual(g.attempts, []);
  });

  it('connects to the checked address itself, sending the name as Host', async () => {
    const g = guarded({ 'www.quarry-news.test': [PUBLIC_IP] });
    const result = await g.run('http://www.quarry-news.test/articles/granite.html');
    assert.ok(!result.isError, result.content);
    assert.ok(result.content.includes(ARTICLE_FACT));
    assert.match(result.content, /^URL: http:\/\/www\.quarry-news\.test\/articles\/granite\.html$/m);
    assert.deepEqual(g.attempts, [PUBLIC_IP]);
    assert.equal(web.requests.at(-1)?.headers.host, 'www.quarry-news.test');
  });

  it('resolves each name once per hop, so a DNS answer that changes cannot swap the address', async () => {
    let calls = 0;
    const attempts: string[] = [];
    // First answer public, every later one loopback: the classic rebinding trick.
    const tool = createFetchUrlTool({
      lookup: async () => [{ address: calls++ === 0 ? PUBLIC_IP : '127.0.0.1', family: 4 }],
      connectTo: (address) => {
        attempts.push(address);
        return { host: '127.0.0.1', port: web.port };
      },
    });
    const result = await tool.run({ url: 'http://rebind.quarry.test/articles/granite.html' }, toolCtx());
    assert.ok(!result.isError, result.content);
    assert.equal(calls, 1);
    assert.deepEqual(attempts, [PUBLIC_IP]);

    // A redirect is a new hop: its name is resolved and checked again.
    calls = 0;
    const redirected = await tool.run({ url: 'http://rebind.quarry.test/redirect/chain/1' }, toolCtx());
    assert.equal(redirected.isError, true);
    assert.match(redirected.content, /rebind\.quarry\.test resolves to 127\.0\.0\.1, which is not a public address/);
    assert.deepEqual(attempts, [PUBLIC_IP, PUBLIC_IP]);
  });

  it('checks every redirect: to the metadata service, to loopback, to a private name', async () => {
    const g = guarded({ 'www.quarry-news.test': [PUBLIC_IP], 'intranet.quarry.test': ['10.0.0.7'] });
    for (const [path, pattern] of [
      ['/redirect/metadata', /169\.254\.169\.254 is not a public address \(link-local/],
      ['/redirect/loopback', /127\.0\.0\.1 is not a public address \(loopback/],
      ['/redirect/intranet', /intranet\.quarry\.test resolves to 10\.0\.0\.7, which is not a public address \(private/],
    ] as const) {
      const result = await g.run(`http://www.quarry-news.test${path}`);
      assert.equal(result.isError, true, path);
      assert.match(result.content, pattern);
    }
    assert.deepEqual(g.attempts, [PUBLIC_IP, PUBLIC_IP, PUBLIC_IP], 'only the public first hops connected');
  });

  it('follows redirects between public hops', async () => {
    const g = guarded({ 'www.quarry-news.test': [PUBLIC_IP] });
    const result = await g.run('http://www.quarry-news.test/redirect/chain/2');
    assert.ok(!result.isError, result.content);
    assert.match(result.content, /^Redirected from: http:\/\/www\.quarry-news\.test\/redirect\/chain\/2$/m);
    assert.equal(g.attempts.length, 4, 'chain/2 → chain/1 → chain/0 → the article');
  });

  it('with allowPrivate, follows a redirect to loopback', async () => {
    const g = guarded({ 'www.quarry-news.test': [PUBLIC_IP] }, { allowPrivate: true });
    const result = await g.run('http://www.quarry-news.test/redirect/loopback');
    assert.ok(!result.isError, result.content);
    assert.match(result.content, new RegExp(`^URL: ${web.url}/articles/granite\\.html$`, 'm'));
  });

  it('reports a name that does not resolve', async () => {
    const g = guarded({});
    const result = await g.run('http://nowhere.quarry.test/');
    assert.equal(result.isError, true);
    assert.match(result.content, /the host name nowhere\.quarry\.test could not be resolved \(ENOTFOUND\)/);
  });
});

describe('web_search', () => {
  const run = (config: SearchConfig | undefined, args: { query: string; max_results?: number }, signal?: AbortSignal) =>
    createWebSearchTool(config ? createSearchProvider(config) : undefined).run(args, toolCtx(signal));

  it('says that no provider is configured', async () => {
    const result = await createWebSearchTool(undefined).run({ query: 'granite' }, toolCtx());
    assert.equal(result.isError, true);
    assert.match(result.content, /no search provider is configured/);
    assert.match(result.content, /QUARRY_SEARCH_PROVIDER/);
    assert.equal(result.summary, 'no search provider configured');
  });

  it('asks SearXNG for JSON and lists title, URL and snippet, without duplicates or non-web links', async () => {
    const result = await run({ provider: 'searxng', url: `${search.url}/` }, { query: 'granite quarries', max_results: 4 });
    assert.ok(!result.isError, result.content);
    const sent = search.requests.at(-1)!;
    assert.equal(sent.method, 'GET');
    assert.equal(sent.path, '/search');
    assert.equal(sent.query.get('q'), 'granite quarries');
    assert.equal(sent.query.get('format'), 'json');
    assert.equal(
      result.content,
      [
        'Results for "granite quarries" (searxng, 4):',
        '',
        '1. Result 1 for granite quarries',
        '   https://example.com/granite-quarries/1',
        '   Snippet 1 about granite quarries.',
        '',
        '2. Result 2 for granite quarries',
        '   https://example.com/granite-quarries/2',
        '   Snippet 2 about granite quarries.',
        '',
        '3. Result 3 for granite quarries',
        '   https://example.com/granite-quarries/3',
        '   Snippet 3 about granite quarries.',
        '',
        '4. Result 4 for granite quarries',
        '   https://example.com/granite-quarries/4',
        '   Snippet 4 about granite quarries.',
      ].join('\n'),
    );
    assert.equal(result.summary, '4 results for "granite quarries"');
  });

  it('returns 8 results by default', async () => {
    const result = await run({ provider: 'searxng', url: search.url }, { query: 'marble' });
    assert.match(result.content, /\(searxng, 8\)/);
  });

  it('calls Brave with the subscription token and strips its highlighting', async () => {
    const result = await run({ provider: 'brave', url: search.url, apiKey: BRAVE_KEY }, { query: 'slate', max_results: 2 });
    assert.ok(!result.isError, result.content);
    const sent = search.requests.at(-1)!;
    assert.equal(sent.path, '/res/v1/web/search');
    assert.equal(sent.headers['x-subscription-token'], BRAVE_KEY);
    assert.equal(sent.query.get('q'), 'slate');
    assert.equal(sent.query.get('count'), '2');
    assert.ok(result.content.includes('   Snippet 1 about slate. & more'), result.content);
    assert.match(result.content, /\(brave, 2\)/);
  });

  it('posts to Tavily with the API key', async () => {
    const result = await run({ provider: 'tavily', url: search.url, apiKey: TAVILY_KEY }, { query: 'basalt', max_results: 3 });
    assert.ok(!result.isError, result.content);
    const sent = search.requests.at(-1)!;
    assert.equal(sent.method, 'POST');
    assert.equal(sent.path, '/search');
    assert.deepEqual({ api_key: sent.body?.api_key, query: sent.body?.query, max_results: sent.body?.max_results }, { api_key: TAVILY_KEY, query: 'basalt', max_results: 3 });
    assert.match(result.content, /\(tavily, 3\)/);
    assert.ok(result.content.includes('1. Result 1 for basalt\n   https://example.com/basalt/1\n   Snippet 1 about basalt.'));
  });

  it('passes the provider’s error on to the model', async () => {
    const brave = await run({ provider: 'brave', url: search.url, apiKey: 'wrong' }, { query: 'x' });
    assert.equal(brave.isError, true);
    assert.match(brave.content, /brave answered HTTP 401 \(check QUARRY_SEARCH_API_KEY\): The provided subscription token is invalid\./);

    const tavily = await run({ provider: 'tavily', url: search.url, apiKey: 'wrong' }, { query: 'x' });
    assert.match(tavily.content, /tavily answered HTTP 401 .*Unauthorized: missing or invalid API key\./);

    search.failNext(403, '<html>Forbidden</html>', 'text/html');
    const searx = await run({ provider: 'searxng', url: search.url }, { query: 'x' });
    assert.match(searx.content, /searxng answered HTTP 403 \(is "json" listed under search\.formats/);

    search.failNext(200, '<html>not json</html>', 'text/html');
    const notJson = await run({ provider: 'searxng', url: search.url }, { query: 'x' });
    assert.match(notJson.content, /not JSON/);
  });

  it('reads a 429\'s Retry-After, in seconds or as an HTTP date', async () => {
    const provider = createSearchProvider({ provider: 'searxng', url: search.url });
    const refusal = async (retryAfter: string) => {
      search.failNext(429, JSON.stringify({ error: 'Too many requests' }), 'application/json', { 'retry-after': retryAfter });
      const err = await provider.search('x', 5, new AbortController().signal).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof SearchError && err.status === 429, String(err));
      return err.retryAfterMs;
    };
    assert.equal(await refusal('3'), 3000);
    // An HTTP date has whole seconds: 30 s from now reads as a little under 30 s.
    const inHalfAMinute = await refusal(new Date(Date.now() + 30_000).toUTCString());
    assert.ok(inHalfAMinute !== undefined && inHalfAMinute > 28_000 && inHalfAMinute <= 30_000, String(inHalfAMinute));
    assert.equal(await refusal('soon'), undefined);
  });

  it('says when nothing was found', async () => {
    search.failNext(200, JSON.stringify({ query: 'zzz', results: [] }));
    const result = await run({ provider: 'searxng', url: search.url }, { query: 'zzz' });
    assert.ok(!result.isError);
    assert.match(result.content, /^No results for "zzz" \(searxng\)/);
  });

  it('stops at once when the turn is aborted', async () => {
    search.hangNext();
    const controller = new AbortController();
    const pending = run({ provider: 'searxng', url: search.url }, { query: 'slow' }, controller.signal);
    setTimeout(() => controller.abort(new DOMException('stopped', 'AbortError')), 50);
    await assert.rejects(within(pending, 1000), (err: Error) => err.name === 'AbortError');
  });

  it('checks its configuration', () => {
    assert.match(searchConfigProblem({ provider: 'searxng' }) ?? '', /needs QUARRY_SEARCH_URL/);
    assert.match(searchConfigProblem({ provider: 'brave' }) ?? '', /needs QUARRY_SEARCH_API_KEY/);
    assert.match(searchConfigProblem({ provider: 'tavily', url: 'nope', apiKey: 'k' }) ?? '', /not a valid URL/);
    assert.match(searchConfigProblem({ provider: 'bing' as never }) ?? '', /must be one of searxng, brave, tavily/);
    assert.equal(searchConfigProblem({ provider: 'brave', apiKey: 'k' }), undefined);
    assert.throws(() => createSearchProvider({ provider: 'searxng' }), /QUARRY_SEARCH_URL/);
  });
});

describe('createWebTools', () => {
  it('builds web_search, fetch_url and read_input with argument schemas the loop can check', () => {
    const tools = createWebTools({ search: { provider: 'searxng', url: search.url }, fetch: { allowPrivate: false } });
    assert.deepEqual(tools.map((t) => t.name), ['web_search', 'fetch_url', 'read_input']);
    const ajv = new Ajv({ allErrors: true, strict: false });
    const check = (name: string, args: unknown) => ajv.validate(tools.find((t) => t.name === name)!.parameters, args);
    assert.ok(check('web_search', { query: 'granite' }));
    assert.ok(check('web_search', { query: 'granite', max_results: 20 }));
    assert.ok(!check('web_search', { query: 'granite', max_results: 21 }));
    assert.ok(!check('web_search', {}));
    assert.ok(check('fetch_url', { url: 'https://example.com/' }));
    assert.ok(!check('fetch_url', { url: '' }));
    assert.ok(check('read_input', { upload_id: 'upl_1', offset: 10, length: 500 }));
    assert.ok(!check('read_input', { upload_id: 'upl_1', offset: -1 }));
    assert.ok(!check('read_input', { upload_id: 'upl_1', length: 100_001 }));
  });
});

describe('fetch_url offline', () => {
  const snapshot = (id: string, url: string, finalUrl: string, text: string) => ({
    id, taskId: 'tsk_1', url, finalUrl, uploadId: null, title: 'Granite', fetchedAt: '2026-01-02T03:04:05.000Z', sha256: '', bytes: text.length, text,
  });
  const stored = [snapshot('src_1', 'https://a.example/old', 'https://a.example/new', 'first read'), snapshot('src_2', 'https://a.example/new', 'https://a.example/new', 'second read')];
  const offlineCtx = (sources: Record<string, unknown> = {}): ToolContext => ({
    ...toolCtx(), offline: true, spec: () => normalizeSpec({ sources }),
    citedSources: async (urls) => stored.filter((s) => urls.includes(s.url) || urls.includes(s.finalUrl)),
  });

  it('answers a URL fetched before (asked for or arrived at) from its latest snapshot, and fetches nothing', async () => {
    const before = web.requests.length;
    const viaRedirect = await fetchUrlTool.run({ url: 'https://a.example/old' }, offlineCtx());
    assert.ok(!viaRedirect.isError);
    assert.match(viaRedirect.content, /^URL: https:\/\/a\.example\/new\nRedirected from: https:\/\/a\.example\/old\nSource: src_1\n/);
    assert.ok(viaRedirect.content.endsWith('\n\nfirst read'));
    // Asked for and arrived at: the latest of both reads.
    const latest = await fetchUrlTool.run({ url: 'https://a.example/new' }, offlineCtx());
    assert.ok(latest.content.split('\n').includes('Source: src_2'), latest.content);
    assert.ok(latest.content.endsWith('\n\nsecond read'));
    const never = await fetchUrlTool.run({ url: `${web.url}/articles/granite.html` }, offlineCtx());
    assert.equal(never.isError, true);
    assert.match(never.content, /offline: .* was never fetched by this task/);
    assert.equal(web.requests.length, before);
  });

  it('keeps to the source policy', async () => {
    const refused = await fetchUrlTool.run({ url: 'https://a.example/new' }, offlineCtx({ exclude_domains: ['a.example'] }));
    assert.equal(refused.isError, true);
    assert.match(refused.content, /^Could not fetch https:\/\/a\.example\/new: /);
  });
});
