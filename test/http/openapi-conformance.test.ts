/**
 * GET /openapi.json is the contract clients generate code from, so it must be true of the server:
 *
 * (a) `redocly lint` (built-in recommended rules) finds no error in it;
 * (b) a scenario of every route (successes, streams, exports, uploads, admin routes and every
 *     error a client can provoke) sent through Stoplight Prism's validating proxy shows no
 *     violation: each status, content type, body and declared header of each answer matches the
 *     operation it answers, and every operation of the document is reached and succeeds;
 * (c) openapi-typescript gives every JSON response (successes and declared errors) a real type;
 * (d) the headers the API reference promises (X-Request-ID, WWW-Authenticate, X-Next-Cursor, Link,
 *     Content-Disposition, Idempotent-Replayed, Retry-After, Allow) are declared where they are sent.
 *
 * Everything runs from node_modules, offline. OPENAPI_CONFORMANCE_REPORT=<file> also writes every
 * finding as JSON.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startHarness, type Harness } from '../kit/harness.js';
import { OpenApiDocument } from '../openapi/document.js';
import { ProbeRunner, runScenario, scenarioModel, sweepUncovered, type Exchange } from '../openapi/scenario.js';
import { inspectResponseTypes, openapiTypescript, redoclyLint, startPrismProxy, type PrismProxy, type TypedResponse } from '../openapi/tools.js';

/** Headers docs/api.md promises to clients: where Quarry sends one, the document must declare it. */
const PROMISED_HEADERS = ['x-request-id', 'www-authenticate', 'allow', 'retry-after', 'x-next-cursor', 'link', 'content-disposition', 'idempotent-replayed'];

const findings: Record<string, unknown> = {};

/** Fails with every finding listed, grouped under `title`. */
function failWith(title: string, lines: string[]): void {
  if (lines.length === 0) return;
  assert.fail(`${title} (${lines.length}):\n${lines.map((l) => `  - ${l}`).join('\n')}`);
}

const isJson = (contentType: string) => /^application\/(?:[\w.+-]+\+)?json\b/i.test(contentType.split(';')[0]!.trim());
const describeProbe = (e: Exchange) => `${e.probe.method} ${e.probe.path.length > 90 ? e.probe.path.slice(0, 90) + '…' : e.probe.path} [${e.probe.note}]`;

describe('GET /openapi.json is correct by construction', { timeout: 120_000 }, () => {
  let h: Harness;
  let dir: string;
  let docPath: string;
  let doc: OpenApiDocument;
  const proxies: PrismProxy[] = [];
  let run: ProbeRunner | undefined;

  before(async () => {
    h = await startHarness({ listen: true, env: { QUARRY_RATE_LIMIT_PER_MIN: '1000000', QUARRY_STARTER_CREDITS: '1000' } });
    h.model!.setResponder(scenarioModel);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-openapi-'));
    const res = await fetch(`${h.url}/openapi.json`);
    assert.equal(res.status, 200, 'GET /openapi.json answers');
    const json = await res.json();
    docPath = path.join(dir, 'openapi.json');
    fs.writeFileSync(docPath, JSON.stringify(json, null, 2));
    doc = new OpenApiDocument(json);
  });

  after(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await h?.close();
    if (h) fs.rmSync(h.dataDir, { recursive: true, force: true });
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    if (process.env.OPENAPI_CONFORMANCE_REPORT) fs.writeFileSync(process.env.OPENAPI_CONFORMANCE_REPORT, JSON.stringify(findings, null, 2));
  });

  it('(a) redocly lint finds no error', async () => {
    const lint = await redoclyLint(docPath);
    findings.lint = lint;
    if (lint.warnings.length > 0) {
      const byRule = new Map<string, number>();
      for (const w of lint.warnings) byRule.set(w.ruleId, (byRule.get(w.ruleId) ?? 0) + 1);
      console.log(`redocly lint warnings (not failing): ${[...byRule].map(([r, n]) => `${r} ×${n}`).join(', ')}`);
    }
    failWith('redocly lint errors', lint.errors.map((p) => `${p.ruleId} at ${p.pointer}: ${p.message}`));
  });

  it('(b) every route, through Prism, shows no violation', async () => {
    const [strict, lenient] = await Promise.all([
      startPrismProxy(docPath, h.url, { errors: true }),
      startPrismProxy(docPath, h.url, { errors: false }),
    ]).catch(async (err) => {
      throw new Error(`Prism could not start on the document: ${(err as Error).message}`);
    });
    proxies.push(strict, lenient);
    run = new ProbeRunner(h, { strict: strict.url, lenient: lenient.url }, doc);
    await runScenario(h, run);
    const swept = await sweepUncovered(h, run, doc);

    const violations: string[] = [];
    const drift: string[] = [];
    for (const e of run.exchanges) {
      const where = `${e.operation ?? 'no operation'}: ${describeProbe(e)} → ${e.status}`;
      const found = e.violations.map((v) => `${v.severity} ${(v.location ?? []).join('.')}: ${v.message}`);
      // With --errors Prism replaces an answer with error violations by a 500; it also refuses requests itself.
      if (e.prismAnswered && !(e.prismAnswered.startsWith('VIOLATIONS') && found.length > 0)) found.unshift(`Prism answered instead of the server: ${e.prismAnswered}`);
      // The document must have an operation for every request that is not a wrong method on purpose.
      if (!e.operation && e.probe.expect !== 405 && !e.prismAnswered) found.push('no operation in the document for this request');
      // A body the server sends must be declared for its status (Prism checks only declared contents).
      const op = e.operation ? doc.operations.find((o) => o.key === e.operation) : undefined;
      const declared = op && !e.prismAnswered ? doc.responseFor(op, e.status) : undefined;
      if (declared && e.text.length > 0 && e.contentType && !OpenApiDocument.declaresMediaType(declared.response, e.contentType)) {
        found.push(`response ${declared.code} declares no content for ${e.contentType.split(';')[0]} (declared: ${Object.keys(declared.response?.content ?? {}).join(', ') || 'none'})`);
      }
      if (found.length > 0) violations.push(`${where}${e.prismAnswered?.startsWith('VIOLATIONS') ? ' (replaced by Prism)' : ''}: ${found.join(' | ')}`);
      if (e.probe.expect !== 0 && !e.prismAnswered) {
        if (e.status !== e.probe.expect) drift.push(`${where}: expected ${e.probe.expect}: ${e.text.slice(0, 300)}`);
        const wantType = e.probe.expectType ?? (e.text ? 'application/json' : undefined);
        if (wantType && !e.contentType.startsWith(wantType)) drift.push(`${where}: expected ${wantType}, got ${e.contentType || 'no content type'}`);
      }
    }
    violations.sort();
    const succeeded = new Set(run.exchanges.filter((e) => e.status >= 200 && e.status < 300 && !e.prismAnswered).map((e) => e.operation));
    const neverSucceeded = doc.operations
      .filter((o) => !succeeded.has(o.key))
      .map((o) => {
        const tries = run!.exchanges.filter((e) => e.operation === o.key);
        const answers = [...new Set(tries.map((e) => (e.prismAnswered ? `${e.status} from Prism` : `${e.status}${e.body?.error ? ` ${e.body.error}` : ''}`)))].join(', ');
        return `${o.key}: ${swept.includes(o.key) ? 'not covered by the scenario; a generic request' : 'the scenario'} got ${answers || 'nothing'}`;
      });

    // For the report only: declared statuses no answer of the scenario came with (429, 500, 503… cannot be provoked).
    const unexercised = doc.operations.flatMap((o) => {
      const seen = new Set(run!.exchanges.filter((e) => e.operation === o.key && !e.prismAnswered).map((e) => doc.responseFor(o, e.status)?.code));
      const missing = Object.keys(o.operation.responses ?? {}).filter((code) => !seen.has(code));
      return missing.length > 0 ? [`${o.key}: ${missing.join(', ')}`] : [];
    });
    findings.prism = {
      violations,
      unexercised,
      drift,
      neverSucceeded,
      exchanges: run.exchanges.map((e) => ({ via: e.probe.via, method: e.probe.method, path: e.probe.path, note: e.probe.note, status: e.status, operation: e.operation, ms: e.ms })),
    };
    console.log(`${run.exchanges.length} requests through Prism; ${doc.operations.length} operations in the document`);
    const sections = [
      ['Prism violations', violations],
      ['Operations of the document that never answered 2xx', neverSucceeded],
      ['Answers other than the API reference promises (scenario expectations)', drift],
    ] as const;
    const failing = sections.filter(([, lines]) => lines.length > 0);
    if (failing.length > 0) {
      assert.fail(failing.map(([title, lines]) => `${title} (${lines.length}):\n${lines.map((l) => `  - ${l}`).join('\n')}`).join('\n\n'));
    }
  });

  it('(c) openapi-typescript types every JSON response', async () => {
    // What to look up: every JSON content the document declares, and every JSON answer the
    // scenario saw (a success must then be declared under the status it came with; an
    // undeclared error status is a violation of (b) already).
    const wanted = new Map<string, TypedResponse>();
    for (const op of doc.operations) {
      for (const [code, raw] of Object.entries<unknown>(op.operation.responses ?? {})) {
        for (const mediaType of Object.keys(doc.resolve(raw)?.content ?? {})) {
          if (isJson(mediaType)) wanted.set(`${op.key} ${code} ${mediaType}`, { operation: op.key, status: code, mediaType });
        }
      }
    }
    // A JSON answer the document declares no JSON content for cannot be typed at all.
    const undeclared = new Set<string>();
    for (const e of run?.exchanges ?? []) {
      if (e.prismAnswered || !e.operation || !isJson(e.contentType) || !e.text) continue;
      const op = doc.operations.find((o) => o.key === e.operation)!;
      const declared = doc.responseFor(op, e.status);
      const mediaType = Object.keys(declared?.response?.content ?? {}).find(isJson);
      if (e.status >= 300 && !mediaType) continue;
      if (!declared || !mediaType) undeclared.add(`${op.key} ${declared?.code ?? e.status}: answers ${e.contentType.split(';')[0]} but the document declares ${declared ? 'no JSON content' : 'no such status'}, so its type is never`);
      else wanted.set(`${op.key} ${declared.code} ${mediaType}`, { operation: op.key, status: declared.code, mediaType });
    }
    let dts: string;
    try {
      dts = await openapiTypescript(doc.doc);
    } catch (err) {
      assert.fail(`openapi-typescript could not read the document: ${(err as Error).message}`);
    }
    const results = inspectResponseTypes(dts, [...wanted.values()]);
    const untyped = [
      ...undeclared,
      ...results.filter((r) => r.untyped).map((r) => `${r.operation} ${r.status} ${r.mediaType}: ${r.untyped} (type: ${r.type})`),
    ];
    findings.types = { checked: results.length + undeclared.size, untyped };
    failWith('JSON responses without a real type', untyped);
  });

  it('(d) the headers the API reference promises are declared where they are sent', () => {
    assert.ok(run, 'needs the scenario of (b)');
    const missing = new Map<string, Set<string>>();
    for (const e of run.exchanges) {
      if (e.prismAnswered || !e.operation) continue;
      const op = doc.operations.find((o) => o.key === e.operation)!;
      const declared = doc.responseFor(op, e.status);
      if (!declared) continue; // an undeclared status is a violation of (b)
      const headers = OpenApiDocument.declaredHeaders(declared.response);
      for (const name of PROMISED_HEADERS) {
        if (e.headers.get(name) !== null && !headers.has(name)) {
          const key = `${op.key} ${declared.code}`;
          if (!missing.has(key)) missing.set(key, new Set());
          missing.get(key)!.add(name);
        }
      }
    }
    const lines = [...missing].map(([where, names]) => `${where}: sends ${[...names].join(', ')} but does not declare ${names.size > 1 ? 'them' : 'it'}`);
    findings.headers = lines;
    failWith('Response headers sent but not declared', lines);
  });
});
