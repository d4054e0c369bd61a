/** Webhook endpoints (decisions §15.3): register, list, delete; an endpoint's deliveries and redelivery. */
import { useRef, useState } from 'preact/hooks';
import type { WebhookDeliveryAttempt, WebhookEventType } from './api.js';
import { useAction, useLoad, usePagedList } from './hooks.js';
import { Link, navigate } from './router.js';
import { useSession } from './session.js';
import { duration, ErrorNote, PageTitle, ShowMore, StatusBadge, Time, toneOf } from './ui.js';

const DELIVERIES_PER_PAGE = 50;
/** How often the deliveries are read again: attempts and their answers come in the background. */
const DELIVERIES_REFRESH_MS = 5000;

/** Every event an endpoint can ask for (a Record, so one the API adds fails to compile here). */
const EVENTS: Record<WebhookEventType, string> = {
  'task.turn_completed': 'a turn completed',
  'task.turn_failed': 'a turn failed',
  'task.turn_stopped': 'a turn was stopped',
  'task.changed': 'a turn changed a keyed output',
  'group.finished': 'a group finished',
};

export function WebhookList() {
  const { client } = useSession();
  const list = useLoad(() => client.webhooks.list(), [client]);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<WebhookEventType[]>(['task.turn_completed', 'task.turn_failed']);
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const action = useAction();
  const create = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const created = await client.webhooks.create({ url, events });
      setSecret(created.secret);
      setUrl('');
      list.reload();
    });
  };
  return (
    <section>
      <PageTitle>Webhooks</PageTitle>
      <ErrorNote message={list.error} />
      {list.data && list.data.length === 0 && <p>No endpoints yet.</p>}
      <ul class="cards" aria-label="Webhook endpoints">
        {list.data?.map((hook) => (
          <li key={hook.webhook_id} class="card">
            <div class="card-head">
              <Link to={`/webhooks/${encodeURIComponent(hook.webhook_id)}`} class="card-title">{hook.url}</Link>
            </div>
            <div class="card-meta">
              <span class="mono">{hook.webhook_id}</span>
              <span>{hook.events.join(', ')}</span>
              <span>created <Time at={hook.created_at} /></span>
            </div>
          </li>
        ))}
      </ul>
      <h2>Register an endpoint</h2>
      <form onSubmit={create} class="form">
        <label for="hook-url">URL</label>
        <input id="hook-url" type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} placeholder="https://example.com/quarry-hook" />
        <fieldset class="choice">
          <legend>Events</legend>
          {(Object.keys(EVENTS) as WebhookEventType[]).map((event) => (
            <label class="check" key={event}>
              <input type="checkbox" checked={events.includes(event)} onChange={(e) => setEvents(e.currentTarget.checked ? [...events, event] : events.filter((x) => x !== event))} />{' '}
              <code>{event}</code>: {EVENTS[event]}
            </label>
          ))}
        </fieldset>
        <div class="buttons">
          <button type="submit" disabled={action.busy || events.length === 0}>Register</button>
        </div>
        <ErrorNote message={action.error} />
        {secret && (
          <p class="notice" role="status">
            Signing secret, shown this once: <code class="mono">{secret}</code>
          </p>
        )}
      </form>
    </section>
  );
}

export function WebhookPage(props: { webhookId: string }) {
  const { client } = useSession();
  const hook = useLoad(() => client.webhooks.retrieve(props.webhookId), [client, props.webhookId]);
  const deliveries = usePagedList(
    (limit, cursor) => client.webhooks.deliveries(props.webhookId, { limit, cursor }),
    (d) => d.delivery_id,
    [client, props.webhookId],
    { pageSize: DELIVERIES_PER_PAGE, refreshMs: DELIVERIES_REFRESH_MS },
  );
  const cards = useRef<HTMLUListElement>(null);
  const action = useAction();
  const redeliver = (deliveryId: string) => action.run(async () => {
    await client.webhooks.redeliver(props.webhookId, deliveryId);
    deliveries.reload();
  });
  const remove = () => action.run(async () => {
    if (!confirm('Delete this endpoint and its deliveries?')) return;
    await client.webhooks.delete(props.webhookId);
    navigate('/webhooks');
  });
  return (
    <article>
      <PageTitle tabTitle={hook.data ? `Webhook ${hook.data.url}` : 'Webhook'}>Webhook</PageTitle>
      <ErrorNote message={hook.error} />
      {hook.data && (
        <p class="card-meta">
          <span class="mono">{hook.data.url}</span>
          <span>{hook.data.events.join(', ')}</span>
          <button type="button" class="danger small" disabled={action.busy} onClick={remove}>Delete endpoint</button>
        </p>
      )}
      <ErrorNote message={action.error ?? deliveries.error} />
      <h2>Deliveries</h2>
      {deliveries.items && deliveries.items.length === 0 && <p>No deliveries yet.</p>}
      <ul class="cards" aria-label="Deliveries" ref={cards}>
        {deliveries.items?.map((d) => (
          <li key={d.delivery_id} class="card">
            <div class="card-head">
              <Link to={deliveryPath(props.webhookId, d.delivery_id)} class="card-title">
                {d.event}<span class="visually-hidden"> {d.delivery_id}</span>
              </Link>
              <StatusBadge status={d.status} />
            </div>
            <div class="card-meta">
              <span class="mono">{d.delivery_id}</span>
              <span>{d.attempts} attempt{d.attempts === 1 ? '' : 's'}</span>
              {d.last_status_code !== null && <span>HTTP {d.last_status_code}</span>}
              {d.last_error && <span>{d.last_error}</span>}
              <span>created <Time at={d.created_at} /></span>
              {d.next_attempt_at && <span>next attempt <Time at={d.next_attempt_at} /></span>}
            </div>
            <button type="button" class="secondary small" disabled={action.busy} onClick={() => redeliver(d.delivery_id)}>
              Redeliver<span class="visually-hidden"> {d.delivery_id}</span>
            </button>
          </li>
        ))}
      </ul>
      <ShowMore list={deliveries} cards={cards} noun="deliveries" />
    </article>
  );
}

function deliveryPath(webhookId: string, deliveryId: string): string {
  return `/webhooks/${encodeURIComponent(webhookId)}/deliveries/${encodeURIComponent(deliveryId)}`;
}

/**
 * One delivery: the body every attempt sends, and each attempt (when, the receiver's status or
 * why none came, how long it took, the start of its answer), oldest first. Read again while it is
 * pending, as its attempts come in the background.
 */
export function DeliveryPage(props: { webhookId: string; deliveryId: string }) {
  const { client } = useSession();
  const delivery = useLoad(() => client.webhooks.delivery(props.webhookId, props.deliveryId), [client, props.webhookId, props.deliveryId], DELIVERIES_REFRESH_MS);
  const action = useAction();
  const [copied, setCopied] = useState(false);
  const d = delivery.data;
  const payload = d ? JSON.stringify(d.payload, null, 2) : '';
  const copy = () => action.run(async () => {
    setCopied(false);
    await navigator.clipboard.writeText(payload);
    setCopied(true);
  });
  return (
    <article>
      <PageTitle tabTitle={d ? `${d.status} · delivery ${d.event}` : 'Delivery'}>Delivery</PageTitle>
      <p><Link to={`/webhooks/${encodeURIComponent(props.webhookId)}`}>Back to the endpoint</Link></p>
      <ErrorNote message={delivery.error ?? action.error} />
      {d && (
        <>
          <p class="card-meta">
            <StatusBadge status={d.status} />
            <span>{d.event}</span>
            <span class="mono">{d.delivery_id}</span>
            <span>created <Time at={d.created_at} /></span>
            {d.delivered_at && <span>delivered <Time at={d.delivered_at} /></span>}
            {d.next_attempt_at && <span>next attempt <Time at={d.next_attempt_at} /></span>}
            <button type="button" class="secondary small" disabled={action.busy} onClick={() => action.run(async () => {
              await client.webhooks.redeliver(props.webhookId, props.deliveryId);
              delivery.reload();
            })}>Redeliver</button>
          </p>
          <h2>Attempts</h2>
          {d.attempts.length === 0 && <p>No attempt yet.</p>}
          <ol class="cards" aria-label="Attempts, oldest first">
            {d.attempts.map((a, i) => <AttemptCard key={i} attempt={a} number={i + 1} />)}
          </ol>
          <h2>Payload</h2>
          <div class="buttons">
            <button type="button" class="secondary small" onClick={copy}>Copy payload</button>
            {copied && <span role="status">Copied</span>}
          </div>
          <pre class="payload" tabIndex={0} role="region" aria-label="Payload">{payload}</pre>
        </>
      )}
    </article>
  );
}

/** An attempt: failed with its reason, or delivered; its receiver's answer as it came. */
function AttemptCard(props: { attempt: WebhookDeliveryAttempt; number: number }) {
  const a = props.attempt;
  const outcome = a.error ? 'failed' : 'delivered';
  return (
    <li class={`card attempt tone-${toneOf(outcome)}`} aria-label={`Attempt ${props.number}`}>
      <div class="card-head">
        <StatusBadge status={outcome} />
        <span class="card-title">{a.status_code !== null ? `HTTP ${a.status_code}` : 'no answer'}</span>
      </div>
      <div class="card-meta">
        <span><Time at={a.at} seconds /></span>
        <span>took {duration(a.duration_ms)}</span>
      </div>
      {a.error && <p class="card-reason">{a.error}</p>}
      {a.response_excerpt
        ? <pre class="excerpt" tabIndex={0} role="region" aria-label={`Answer to attempt ${props.number}`}>{a.response_excerpt}</pre>
        : <p class="hint">No answer body.</p>}
    </li>
  );
}
