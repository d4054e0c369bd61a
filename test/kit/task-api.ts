/**
 * Steps the HTTP tests take again and again against a Harness: reading a task, its state and
 * its events, waiting for a task as its account sees it, creating accounts, and reading what
 * the fake model was sent. Each checks the status it expects, so a test fails where it went wrong.
 */
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ADMIN_KEY, startHarness, type Harness, type HarnessOptions } from './harness.js';
import { fetchJson, waitIdle, type TestResponse } from './http.js';
import type { FakeOpenAI, FakeRequestBody } from './fake-openai-server.js';
import type { CreatedAccount } from '../../packages/client/src/index.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

/** A short random suffix that keeps names unique across the tests sharing one server. */
export const uid = (): string => randomUUID().slice(0, 8);

/** Starts a harness that is closed when the test ends. */
export async function startTestHarness(t: TestContext, opts: HarnessOptions = {}): Promise<Harness> {
  const h = await startHarness(opts);
  t.after(() => h.close());
  return h;
}

/** The harness's fake model, which it runs unless told not to. */
export function fakeModel(h: Harness): FakeOpenAI {
  assert.ok(h.model, 'the harness runs the fake model');
  return h.model;
}

/** Every user message the model was sent, joined: the task's prompt, messages and instructions. */
export function userText(body: FakeRequestBody): string {
  return (body.messages ?? []).filter((m) => m.role === 'user').map((m) => String(m.content)).join('\n');
}

export async function getTask(h: Harness, taskId: string): Promise<Json> {
  const res = await h.request('GET', `/task/${encodeURIComponent(taskId)}`);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

export async function taskState(h: Harness, taskId: string): Promise<Json> {
  const res = await h.request('GET', `/task/${encodeURIComponent(taskId)}/state`);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** The task's events as `key` (default: the harness's own key) reads them. */
export async function taskEvents(h: Harness, taskId: string, key?: string): Promise<Json[]> {
  const res = await h.request('GET', `/task/${encodeURIComponent(taskId)}/events?limit=1000`, key ? { key } : {});
  assert.equal(res.status, 200, res.text);
  return res.body.events;
}

/** The ids of the tasks `key` (default: the harness's own key) sees. */
export async function taskIds(h: Harness, key?: string): Promise<string[]> {
  const res = await h.request('GET', '/task?limit=200', key ? { key } : {});
  assert.equal(res.status, 200, res.text);
  return res.body.map((t: { task_id: string }) => t.task_id);
}

/** Long-polls /state with `key` until no turn runs (bounded; a refused poll fails at once). */
export async function waitIdleAs(h: Harness, taskId: string, key: string): Promise<void> {
  await waitIdle(h.request, taskId, { key });
}

/**
 * PUTs `body` to an upload ticket's signed URL, with no API key (the signature is the only
 * credential): over the socket, or, on a harness that does not listen, through app.inject()
 * with the URL's path and query.
 */
export function putUpload(h: Harness, ticket: { upload_url: string; headers: Record<string, string> }, body: string | Uint8Array): Promise<TestResponse> {
  if (!h.injected) return fetchJson('PUT', ticket.upload_url, { rawBody: body, headers: ticket.headers });
  const url = new URL(ticket.upload_url);
  return h.request('PUT', url.pathname + url.search, { key: null, rawBody: body, headers: ticket.headers });
}

export async function createAccount(h: Harness, name: string, credits: number): Promise<CreatedAccount> {
  const res = await h.request('POST', '/admin/accounts', { key: ADMIN_KEY, body: { name, credits } });
  assert.equal(res.status, 201, res.text);
  return res.body;
}
