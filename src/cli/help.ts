/** The CLI's usage text (docs/client.md has the same, with examples). */

export const USAGE = `usage: quarry <command> [options]

Server:
  serve [--role all|api|worker]          run the service (configured by QUARRY_* variables)

On the server's host (QUARRY_DATA_DIR or QUARRY_DATABASE_URL, as the server has them):
  keys create [--account NAME]            print a new API key for the "default" account (or
                                          NAME), written into the server's store; no server
                                          or admin key needed (a lost starter key)

Tasks (QUARRY_URL, QUARRY_API_KEY):
  task create PROMPT [--spec FILE] [--id ID] [--plan-only] [--follow]
                                          start a task from a prompt, or from a spec file
                                          (--spec FILE, "-" for stdin; PROMPT then optional)
  task ls [--limit N] [--all]             list tasks (pinned first, then most recent)
          [--q TEXT] [--state running|idle] [--outcome completed|failed|stopped]
          [--created-after ISO] [--created-before ISO]
                                          only the tasks those filters match
  task show ID [--events N]               a task, its outputs and its last events
  task follow ID [--after SEQ]            follow a task's events until no turn runs
  task wait ID [--timeout SECONDS]        wait until no turn runs
  task continue ID MESSAGE [--follow] [--offline]
                                          send a message (queued while a turn runs)
  task execute ID [INSTRUCTION] [--follow] [--offline]
                                          run the spec again
                                          --offline: no web search; fetch_url reads only
                                          pages the task fetched before
  task stop ID [--clear-queue]            stop the running turn
  task rm ID                              delete a task
  task outputs ID                         a task's outputs with row counts
  task rows ID [--output OUT] [--limit N] [--offset N] [--csv | --jsonl]
                                          read rows; --csv/--jsonl export the whole output
  task recheck ID                         check every row's sources and cells again against
                                          the pages already read (fetches nothing)
  task changes ID [--since TURN] [--limit N] [--all]
                                          what the turns changed in keyed outputs, oldest
                                          first
  upload FILE [--content-type TYPE] [--name NAME]
                                          upload an input file; prints its upload_id
  eval FILE [--limit N] [--concurrency N] [--out DIR] [--grader exact|model]
                                          run a question set (JSON Lines or CSV), one task
                                          per question, and grade the answers; writes
                                          results.jsonl, results.csv and summary.json to
                                          DIR (docs/eval.md)

Task groups: one spec over many inputs, each input a run (QUARRY_URL, QUARRY_API_KEY):
  group create --spec FILE --inputs FILE [--format csv|jsonl] [--name NAME]
         [--max-parallel N] [--max-credits C] [--follow]
                                          upload the inputs (.csv with a header row, or
                                          .jsonl) and run the spec (input_columns and one
                                          table output) over each; prints the group id
  group ls [--limit N] [--all]            list groups, newest first
  group get ID                            a group: status, counts by run status, credits
  group follow ID                         show its progress until no run is pending or
                                          running
  group rows ID [--limit N] [--offset N] [--csv | --jsonl]
                                          read the merged rows; --csv/--jsonl export all
  group changes ID [--since TURN] [--limit N] [--all]
                                          the runs' changes, oldest first, each with its
                                          input's index
  group stop ID                           stop every run (pending ones never start)
  group retry ID [--include failed,stopped] [--follow]
                                          run the failed (or the listed) runs again
  group runs ID [--status S] [--limit N] [--all]
                                          every run: status, task, credits, error
  group add-inputs ID --inputs FILE [--format csv|jsonl] [--follow]
                                          add inputs, also while the group runs

Webhooks (QUARRY_URL, QUARRY_API_KEY):
  webhooks create --url URL --events EVENT[,EVENT...] [--description TEXT]
                                          register an endpoint; prints its signing secret
                                          once. Events: task.turn_completed,
                                          task.turn_failed, task.turn_stopped,
                                          task.changed, group.finished
  webhooks ls                             list the endpoints (never their secrets)
  webhooks show ID                        one endpoint
  webhooks rm ID                          delete an endpoint and its deliveries
  webhooks rotate-secret ID               a new secret, printed once; the old one signs
                                          too for 24 h
  webhooks deliveries ID [--limit N] [--all]
                                          an endpoint's deliveries, newest first
  webhooks delivery ID DELIVERY_ID        a delivery's payload and its attempts
  webhooks redeliver ID DELIVERY_ID       send a delivery again (same webhook-id)
  account                                 your account: balance and credits used

Admin (QUARRY_URL, QUARRY_ADMIN_KEY):
  accounts create NAME [--credits N]      create an account and its first key
  accounts show ACCOUNT                   an account's balance
  accounts usage ACCOUNT                  per-turn usage
  keys create ACCOUNT                     create another API key (ACCOUNT: an account id)
  keys ls ACCOUNT                         list an account's keys
  keys revoke ACCOUNT KEY                 revoke a key
  credits add ACCOUNT AMOUNT              add (or, negative, take) credits

Options:
  --json        machine-readable output (errors as JSON on stderr); --follow prints JSON lines
  -h, --help    this text

Exit codes:
  0 ok, 1 API error, 2 usage error, 3 credentials missing or refused, 4 not found,
  5 conflict (task executing, in cron mode, exists; webhook limit), 6 out of credits,
  7 unavailable (rate limited, 5xx, network), 8 followed turn failed or was stopped, or a
  followed group ended with runs failed or stopped, 130 interrupted
`;
