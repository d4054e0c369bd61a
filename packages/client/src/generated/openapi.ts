/**
 * Generated from Quarry's OpenAPI document by scripts/generate-client-types.ts: do not edit.
 * The shapes are declared once, in the server's contract (src/contract).
 */

export type paths = {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Liveness: 200 once the server accepts requests */
        get: operations["health"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Readiness: 200 once the store and the workers are ready */
        get: operations["ready"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/workflow": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Route map and state machine */
        get: operations["getWorkflow"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/metaprompt": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Spec schema, output kinds and a metaprompt for caller-side agents */
        get: operations["getMetaprompt"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List tasks: pinned first, then most recently updated */
        get: operations["listTasks"];
        put?: never;
        /** Start a task from a prompt, or message an existing task */
        post: operations["createTask"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** As POST /task, answered with the event stream */
        post: operations["createTaskStream"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/start": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Start a task from a spec (without task: as POST /task) */
        post: operations["startTask"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/start/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** As POST /task/start, answered with the event stream */
        post: operations["startTaskStream"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/{task_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The task with its spec and last 100 events (a deleted task too) */
        get: operations["getTask"];
        put?: never;
        post?: never;
        /** Delete the task (its turn is stopped) */
        delete: operations["deleteTask"];
        options?: never;
        head?: never;
        /** Rename, pin, or enter/leave cron mode */
        patch: operations["updateTask"];
        trace?: never;
    };
    "/task/{task_id}/state": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The cheap poll: is a turn running? */
        get: operations["getTaskState"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/{task_id}/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Follow the task as SSE until no turn runs and nothing is queued */
        get: operations["streamTask"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/{task_id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Page through the full event history */
        get: operations["listEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/{task_id}/continue": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Send a message: runs now when idle, queued (202) while a turn runs */
        post: operations["continueTask"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/{task_id}/continue/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** As continue, answered with the event stream */
        post: operations["continueTaskStream"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/{task_id}/execute": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Run the current spec again; refused while a turn runs */
        post: operations["executeTask"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/{task_id}/execute/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** As execute, answered with the event stream */
        post: operations["executeTaskStream"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/{task_id}/stop": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Stop the running turn (rows written are kept) */
        post: operations["stopTask"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/{task_id}/output": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Rows of the active output (or ?output=ID); format=csv|jsonl exports */
        get: operations["getOutput"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/{task_id}/outputs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The task's named outputs with row counts */
        get: operations["listOutputs"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/{task_id}/outputs/{output_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Rows of one named output; format=csv|jsonl exports */
        get: operations["getNamedOutput"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/{task_id}/sources": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The pages and inputs the task read, kept as snapshots for checking citations */
        get: operations["listSources"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/{task_id}/changes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** What the task's turns changed in its keyed table outputs, oldest first */
        get: operations["listChanges"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/{task_id}/sources/{source_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One snapshot with its text */
        get: operations["getSource"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/task/{task_id}/recheck": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Check every row's sources and cells again against the stored snapshots (never fetches) */
        post: operations["recheckTask"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/upload-url": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Get a signed URL to PUT a large input to */
        post: operations["createUploadUrl"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/upload/{upload_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /** Upload the file to a signed URL (the signature is the credential) */
        put: operations["putUpload"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/group": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List groups, newest first */
        get: operations["listGroups"];
        put?: never;
        /** Run one spec over many inputs: each input becomes a run, at most max_parallel at once */
        post: operations["createGroup"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/group/{group_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A group: its status, counts by run status, and spec */
        get: operations["getGroup"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/group/{group_id}/inputs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Add inputs to a group, also while it runs */
        post: operations["addGroupInputs"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/group/{group_id}/rows": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The merged table: each run's rows with its input; format=csv|jsonl exports */
        get: operations["getGroupRows"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/group/{group_id}/changes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The runs' changes merged, each with its run's input, oldest first */
        get: operations["listGroupChanges"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/group/{group_id}/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Follow the group as SSE until no run is pending or running (resumable over its whole life) */
        get: operations["streamGroup"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/group/{group_id}/stop": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Stop every run: pending ones become stopped, running ones are stopped */
        post: operations["stopGroup"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/group/{group_id}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Run the failed (or also the stopped) inputs again, each as a new run */
        post: operations["retryGroup"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/group/{group_id}/runs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Every run of the group in input order, rows or not */
        get: operations["listGroupRuns"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The account's endpoints, newest first (never their secrets) */
        get: operations["listWebhooks"];
        put?: never;
        /** Register an endpoint for turn (and group) events; its secret is shown once */
        post: operations["createWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{webhook_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One endpoint */
        get: operations["getWebhook"];
        put?: never;
        post?: never;
        /** Delete an endpoint and its deliveries; nothing more is sent to it */
        delete: operations["deleteWebhook"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{webhook_id}/rotate-secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** A new signing secret; for 24 h the previous one signs too */
        post: operations["rotateWebhookSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{webhook_id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The endpoint's deliveries, newest first */
        get: operations["listWebhookDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{webhook_id}/deliveries/{delivery_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A delivery with its body and the log of its attempts */
        get: operations["getWebhookDelivery"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Send a delivery again, with the same webhook-id */
        post: operations["redeliverWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/account": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The account of the API key: its balance and the credits it has used */
        get: operations["getAccount"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/accounts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create an account with credits and a first key */
        post: operations["adminCreateAccount"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/accounts/{account_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** An account and its balance */
        get: operations["adminGetAccount"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/accounts/{account_id}/credits": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Add (or, negative, take) credits; the balance never goes below 0 */
        post: operations["adminAddCredits"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/accounts/{account_id}/keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** An account's keys (never the secrets) */
        get: operations["adminListKeys"];
        put?: never;
        /** Create another API key (shown once) */
        post: operations["adminCreateKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/accounts/{account_id}/keys/{key_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Revoke a key: it is 401 from then on */
        delete: operations["adminRevokeKey"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/accounts/{account_id}/usage": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Per-turn usage */
        get: operations["adminGetUsage"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
};
export type webhooks = Record<string, never>;
export type components = {
    schemas: {
        Account: {
            account_id: string;
            name: string;
            /** @description Credits left (at most 6 decimal places). */
            balance: number;
            /** @description Credits used so far (at most 6 decimal places). */
            credits_used: number;
            /** Format: date-time */
            created_at: string;
        };
        Balance: {
            account_id: string;
            /** @description Credits left (at most 6 decimal places). */
            balance: number;
        };
        /** @description A task with a keyed table output: what the turn changed, as on its done event (GET /task/{task_id}/changes lists it). */
        ChangeCounts: {
            /** @description Keys the turn wrote for the first time. */
            added: number;
            /** @description Rows whose values or sources the turn changed. */
            changed: number;
            /** @description Keys an execute turn did not write again although they existed before (the rows stay). */
            unconfirmed: number;
        };
        CreatedAccount: {
            account_id: string;
            name: string;
            /** @description The starting balance (at most 6 decimal places). */
            balance: number;
            /** @description Shown once. */
            api_key: string;
            key_id: string;
        };
        CreatedKey: {
            key_id: string;
            /** @description Shown once. */
            api_key: string;
        };
        /** @description A turn ended (stored), or a stream of an idle task or a refused change closes (unstored). */
        DoneEvent: {
            /** @description Per-task sequence number; absent on unstored frames. */
            seq?: number;
            /** @enum {string} */
            type: "done";
            task_id: string | null;
            turn_id: string | null;
            /** Format: date-time */
            at: string;
            /** @enum {string} */
            outcome: "completed" | "stopped" | "failed" | "refused" | "idle";
            output_count: number | null;
            credits_used: number;
            /** @description Rows the turn wrote (a stored `done` of a turn). */
            rows_written?: number;
            /** @description Of them, rows whose every source was verified. */
            verified_rows?: number;
            /** @description Of them, rows with a source that was not verified, or none. */
            unverified_rows?: number;
            citation_accuracy?: number | null;
            next_turn_id?: string | null;
            /** @description A turn that ended: all input tokens of its model calls, cached ones included. */
            tokens_in?: number;
            /** @description Of tokens_in, those the provider read from its prompt cache. */
            tokens_in_cached?: number;
            /** @description A turn that ended: the output tokens of its model calls. */
            tokens_out?: number;
            /** @description A turn that ended: how often its conversation was compacted to fit the model's context. */
            compactions?: number;
            changes?: components["schemas"]["ChangeCounts"];
        };
        Error: {
            /**
             * @description Stable snake_case code: branch on it.
             * @enum {string}
             */
            error: "invalid_request" | "unauthorized" | "out_of_credits" | "origin_not_allowed" | "task_not_found" | "source_not_found" | "group_not_found" | "webhook_not_found" | "delivery_not_found" | "not_found" | "method_not_allowed" | "request_timeout" | "task_executing" | "task_in_cron_mode" | "task_exists" | "webhook_limit_reached" | "payload_too_large" | "unsupported_media_type" | "rate_limited" | "internal_error" | "bad_gateway" | "service_unavailable" | "at_capacity" | "auth_unavailable" | "limit_reached";
            /** @description What went wrong and what to do: show it to a person. */
            message: string;
            /** @description Whether the same request may succeed later. */
            retryable: boolean;
            /** @description Also in the X-Request-ID header. */
            request_id: string;
            /** @description Seconds to wait (429, 503); also the Retry-After header. */
            retry_after?: number;
            /** @description Where to fix the cause (402). */
            resolve?: string;
            /** @description The field that failed validation (422). */
            param?: string;
            /** @description Validator output (422). */
            detail?: {
                /** @description What kind of check failed, e.g. missing, string_too_long. */
                type: string;
                /** @description Where: the request part, then the path to the field. */
                loc: (string | number)[];
                msg: string;
            }[];
            /** @description The task the error refers to. */
            task_id?: string;
            /** @description false on a refused POST /task: no task exists. */
            task_created?: boolean;
        };
        /** @description A failure after the stream opened (a turn failed, or a refusal inside a stream). */
        ErrorEvent: {
            /** @description Per-task sequence number; absent on unstored frames. */
            seq?: number;
            /** @enum {string} */
            type: "error";
            task_id: string | null;
            turn_id: string | null;
            /** Format: date-time */
            at: string;
            /**
             * @description Stable snake_case code: branch on it.
             * @enum {string}
             */
            error: "invalid_request" | "unauthorized" | "out_of_credits" | "origin_not_allowed" | "task_not_found" | "source_not_found" | "group_not_found" | "webhook_not_found" | "delivery_not_found" | "not_found" | "method_not_allowed" | "request_timeout" | "task_executing" | "task_in_cron_mode" | "task_exists" | "webhook_limit_reached" | "payload_too_large" | "unsupported_media_type" | "rate_limited" | "internal_error" | "bad_gateway" | "service_unavailable" | "at_capacity" | "auth_unavailable" | "limit_reached";
            message: string;
            retryable: boolean;
        };
        EventPage: {
            events: components["schemas"]["TaskEvent"][];
            next_after: number | null;
        };
        FieldBasis: {
            /** @enum {string} */
            confidence: "high" | "medium" | "low";
            reasoning?: string;
        };
        Group: {
            group_id: string;
            name: string | null;
            /**
             * @description running while a run is pending or running; finished when none is; stopped by POST /group/{id}/stop.
             * @enum {string}
             */
            status: "running" | "finished" | "stopped";
            /** @description The group's inputs by the status of their run (duplicates are not counted). */
            counts: {
                pending: number;
                running: number;
                completed: number;
                failed: number;
                stopped: number;
            };
            /** @description Inputs received, duplicates included; each took the next index (`_input`). */
            inputs: number;
            /** @description Inputs whose `_key` the group already had: counted, never run. */
            duplicates: number;
            /** @description What the group's runs used: with max_credits as they are charged, without as each run ends; a scheduled group: since the last tick. */
            credits_used: number;
            max_parallel: number;
            max_credits: number | null;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            updated_at: string;
            finished_at: string | null;
            cron: {
                expression: string;
                timezone: string;
                next_run_at: string | null;
            } | null;
        };
        /** @description A group with the spec its runs share. */
        GroupDetail: {
            group_id: string;
            name: string | null;
            /**
             * @description running while a run is pending or running; finished when none is; stopped by POST /group/{id}/stop.
             * @enum {string}
             */
            status: "running" | "finished" | "stopped";
            /** @description The group's inputs by the status of their run (duplicates are not counted). */
            counts: {
                pending: number;
                running: number;
                completed: number;
                failed: number;
                stopped: number;
            };
            /** @description Inputs received, duplicates included; each took the next index (`_input`). */
            inputs: number;
            /** @description Inputs whose `_key` the group already had: counted, never run. */
            duplicates: number;
            /** @description What the group's runs used: with max_credits as they are charged, without as each run ends; a scheduled group: since the last tick. */
            credits_used: number;
            max_parallel: number;
            max_credits: number | null;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            updated_at: string;
            finished_at: string | null;
            cron: {
                expression: string;
                timezone: string;
                next_run_at: string | null;
            } | null;
            spec: components["schemas"]["TaskSpec"];
        };
        GroupRowChange: components["schemas"]["RowChange"] & {
            /** @description The input's 0-based index in the group. */
            _input: number;
            /** @description The run's input. */
            input: {
                [key: string]: unknown;
            };
            /** @description The run. */
            task_id: string;
        };
        GroupRowsPage: {
            /** @description Merged rows in the group so far. */
            total: number;
            rows: ({
                /** @description The input's 0-based index in the group. */
                _input: number;
                /** @description As on the run's output rows. */
                _sources: unknown[];
                _basis?: unknown;
                _run: {
                    task_id: string;
                    /** @enum {string} */
                    status: "pending" | "running" | "completed" | "failed" | "stopped";
                };
            } & {
                [key: string]: unknown;
            })[];
        };
        /** @description One input of a group and the run that works on it, rows or not. */
        GroupRun: {
            task_id: string | null;
            /** @description The input's 0-based index in the group (`_input` of its merged rows). */
            input_index: number;
            /** @description The input it runs on. */
            input: {
                [key: string]: unknown;
            };
            /** @enum {string} */
            status: "pending" | "running" | "completed" | "failed" | "stopped";
            /** @description A failed run: the error its turn failed with; null otherwise. */
            error: {
                error: string;
                message: string;
            } | null;
            /** @description Credits the run's task has used (at most 6 decimal places). */
            credits_used: number;
            updated_at: string | null;
        };
        GroupRunList: {
            runs: components["schemas"]["GroupRun"][];
        };
        KeyInfo: {
            key_id: string;
            /** Format: date-time */
            created_at: string;
            revoked_at: string | null;
        };
        KeyList: {
            keys: components["schemas"]["KeyInfo"][];
        };
        /** @description The last turn that ended. */
        LastTurn: {
            turn_id: string;
            /**
             * @description plan: a prompt create; execute: a spec create, execute or cron tick; continue: a message.
             * @enum {string}
             */
            kind: "plan" | "execute" | "continue";
            /** @enum {string} */
            outcome: "completed" | "failed" | "stopped";
            started_at: string | null;
            /** Format: date-time */
            ended_at: string;
            /** @description Credits the turn used (at most 6 decimal places). */
            credits_used: number;
            /** @description What the turn failed with; null when it completed or was stopped. */
            error: {
                /**
                 * @description Stable snake_case code: branch on it.
                 * @enum {string}
                 */
                error: "invalid_request" | "unauthorized" | "out_of_credits" | "origin_not_allowed" | "task_not_found" | "source_not_found" | "group_not_found" | "webhook_not_found" | "delivery_not_found" | "not_found" | "method_not_allowed" | "request_timeout" | "task_executing" | "task_in_cron_mode" | "task_exists" | "webhook_limit_reached" | "payload_too_large" | "unsupported_media_type" | "rate_limited" | "internal_error" | "bad_gateway" | "service_unavailable" | "at_capacity" | "auth_unavailable" | "limit_reached";
                message: string;
            } | null;
            changes?: components["schemas"]["ChangeCounts"];
        };
        Metaprompt: {
            version: string;
            /** @description The JSON Schema of a task spec (TaskSpecInput). */
            spec_schema: {
                [key: string]: unknown;
            };
            /** @description What the rows of each output kind look like. */
            output_kinds: {
                [key: string]: unknown;
            };
            kinds: string[];
            tools: string[];
            /** @description The limits a spec gets when it names none. */
            default_limits: {
                [key: string]: unknown;
            };
            /** @description Fields every row carries besides its own. */
            reserved_row_fields: {
                [key: string]: unknown;
            };
            /** @description Instructions a caller-side agent can follow to write a good spec. */
            metaprompt: string;
            example: components["schemas"]["TaskSpecInput"];
        } & {
            [key: string]: unknown;
        };
        OutputInfo: {
            id: string;
            /**
             * @description table: typed columns; report: {heading, markdown} sections; records: free objects.
             * @enum {string}
             */
            kind: "table" | "report" | "records";
            path: string;
            description: string | null;
            /** @description Tables only: the normalized columns. */
            columns?: {
                name: string;
                /** @enum {string} */
                type: "string" | "number" | "integer" | "boolean" | "date" | "url" | "json";
                required: boolean;
                description?: string;
            }[];
            row_count: number;
            /** @description Rows with at least one source, every one of them verified. */
            verified_rows: number;
            /** @description The other rows: row_count - verified_rows. */
            unverified_rows: number;
            /** @description Cells a verified source's quote holds. */
            supported_cells: number;
            /** @description Cells checked against at least one quote that none holds. */
            unsupported_cells: number;
            /** @description Non-null cells no quote was checked for. */
            unchecked_cells: number;
            updated_at: string | null;
        };
        OutputList: {
            outputs: components["schemas"]["OutputInfo"][];
        };
        OutputPage: {
            /** @description Rows in the output, counted before offset and limit. */
            total: number;
            rows: components["schemas"]["Row"][];
            output: components["schemas"]["OutputRef"] | null;
        };
        OutputRef: {
            id: string;
            /**
             * @description table: typed columns; report: {heading, markdown} sections; records: free objects.
             * @enum {string}
             */
            kind: "table" | "report" | "records";
            path: string;
        };
        /** @description The account the API key belongs to. */
        OwnAccount: {
            account_id: string;
            name: string;
            /** @description Credits left (at most 6 decimal places). */
            balance: number;
            /** @description Credits used so far (at most 6 decimal places). */
            credits_used: number;
        };
        /** @description What a recheck did: every row checked again against the stored snapshots, nothing fetched. */
        RecheckResult: {
            /** @description Rows checked again, over every output of the task. */
            rows: number;
            /** @description Of them, rows whose _sources checks, supports or _support changed (and were stored again). */
            changed: number;
        };
        /** @description One row: the output's columns (or report/records fields) plus _row, _sources, _support and, when given, _basis. */
        Row: {
            /** @description 1-based position in the output. */
            _row: number;
            _sources: components["schemas"]["RowSource"][];
            /** @description Per column: how sure the agent is and why (when it said). */
            _basis?: {
                [key: string]: components["schemas"]["FieldBasis"];
            };
            /** @description Per non-null column: supported (a verified source's quote holds the value), unsupported (checked, and no quote holds it) or unchecked. Absent on rows written before cells were checked, until a recheck. */
            _support?: {
                [key: string]: "supported" | "unsupported" | "unchecked";
            };
        } & {
            [key: string]: unknown;
        };
        RowChange: {
            turn_id: string;
            /**
             * Format: date-time
             * @description When the turn wrote it (for unconfirmed: when the turn ended).
             */
            at: string;
            /** @description The output id. */
            output: string;
            /** @description The key columns and their values. */
            key: {
                [key: string]: unknown;
            };
            /** @enum {string} */
            change: "added" | "changed" | "unconfirmed";
            /** @description added: every column with a value (before null); changed: the columns whose value changed; unconfirmed: none. */
            fields: {
                [key: string]: {
                    before: unknown;
                    after: unknown;
                };
            };
            /** @description The row's _sources before and after (null where the row did not exist, and both null for unconfirmed). */
            sources: {
                before: components["schemas"]["RowSource"][] | null;
                after: components["schemas"]["RowSource"][] | null;
            };
        };
        RowSource: {
            url?: string;
            upload_id?: string;
            title?: string;
            quote?: string;
            /** @description The columns this source supports; absent: the whole row. */
            fields?: string[];
            /** @description true for quote_found and page_read. Absent on rows written before sources were checked. */
            verified?: boolean;
            /**
             * @description quote_found: the quote is in the snapshot of that URL or the text of that upload; page_read: no quote, but it was read in this task; quote_not_found: read, but the quote is not in it; not_read: never read in this task (or outside its source policy).
             * @enum {string}
             */
            check?: "quote_found" | "page_read" | "quote_not_found" | "not_read";
            /** @description The snapshot (GET /task/{task_id}/sources/{source_id}) the source was matched against. */
            source_id?: string;
            /** @description quote_found sources: per column the source backs (its fields, else every non-null column), whether the quote holds the value after normalizing; null: not checked (booleans, json, prose). */
            supports?: {
                [key: string]: boolean | null;
            };
        } & {
            [key: string]: unknown;
        };
        SourceDetail: {
            source_id: string;
            /** @description The URL asked for (an upload: upload:<upload_id>). */
            url: string;
            /** @description The URL that answered, after redirects. */
            final_url: string;
            upload_id: string | null;
            title: string | null;
            /** Format: date-time */
            fetched_at: string;
            /** @description Hex SHA-256 of the stored text (UTF-8). */
            sha256: string;
            /** @description Bytes of the stored text (UTF-8). */
            bytes: number;
            /** @description The readable text as read: what quotes are checked against. */
            text: string;
        };
        SourceInfo: {
            source_id: string;
            /** @description The URL asked for (an upload: upload:<upload_id>). */
            url: string;
            /** @description The URL that answered, after redirects. */
            final_url: string;
            upload_id: string | null;
            title: string | null;
            /** Format: date-time */
            fetched_at: string;
            /** @description Hex SHA-256 of the stored text (UTF-8). */
            sha256: string;
            /** @description Bytes of the stored text (UTF-8). */
            bytes: number;
        };
        Task: {
            task_id: string;
            name: string | null;
            type: string | null;
            /**
             * @description plan: no turn runs; execute: a turn runs or waits; deleted; accepted on a 202 (message queued).
             * @enum {string}
             */
            status: "plan" | "execute" | "deleted" | "accepted";
            phase: ("plan" | "execute") | null;
            activity: ("idle" | "planning" | "executing" | "thinking") | null;
            /** @description What the running turn waits on now: model_rate_limit while its model call waits its place under the provider's limits (QUARRY_MODEL_RPM, QUARRY_MODEL_TPM, QUARRY_MODEL_CONCURRENCY, or what the provider's 429s and rate-limit headers said), search_rate_limit likewise for web_search; null otherwise. */
            waiting: ("model_rate_limit" | "search_rate_limit") | null;
            output_count: number;
            /** @description Seconds to wait before polling again: 2 while a turn runs, else 30 (or until the next cron run, at most 300). */
            poll_after_s: number;
            status_url: string;
            output_url: string;
            stream_url: string;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            updated_at: string;
            pinned: boolean;
            cron: {
                expression: string;
                timezone: string;
                next_run_at: string | null;
            } | null;
            queued_messages: number;
            /** @description Credits this task has used (at most 6 decimal places). */
            credits_used: number;
            active_output: string | null;
            /** @description The last turn that ended, or null before the first ends. */
            last_turn: components["schemas"]["LastTurn"] | null;
            citation_accuracy: number | null;
            /** @description A group's run only: its group. */
            group_id?: string;
            /** @description A group's run only: its input's index in the group (`_input`). */
            input_index?: number;
            /** @description A group's run only: the input it runs on. */
            input?: {
                [key: string]: unknown;
            };
        };
        /** @description The task changed; carries its snapshot. */
        TaskChangedEvent: {
            /** @description Per-task sequence number; absent on unstored frames. */
            seq?: number;
            /** @enum {string} */
            type: "task";
            task_id: string | null;
            turn_id: string | null;
            /** Format: date-time */
            at: string;
            /**
             * @description snapshot: the unstored idle snapshot of GET /task/{task_id}/stream.
             * @enum {string}
             */
            reason: "created" | "turn_started" | "phase_changed" | "activity_changed" | "message_queued" | "turn_ended" | "updated" | "cron_tick_skipped" | "deleted" | "snapshot";
            task: components["schemas"]["Task"];
            /** @description The caller's words: on `message_queued`, and on `turn_started` of a turn that a message or an `execute` instruction started. */
            message?: string;
        };
        TaskDetail: components["schemas"]["Task"] & {
            spec: components["schemas"]["TaskSpec"];
            /** @description The last 100 events, oldest first. */
            events: components["schemas"]["TaskEvent"][];
        };
        TaskEvent: components["schemas"]["TaskChangedEvent"] | components["schemas"]["ToolEvent"] | components["schemas"]["TextEvent"] | components["schemas"]["ErrorEvent"] | components["schemas"]["DoneEvent"];
        /** @description The spec as stored: every default filled in. */
        TaskSpec: {
            name: string | null;
            /** @enum {string} */
            type: "research";
            prompt: string | null;
            outputs: {
                id: string;
                /**
                 * @description table: typed columns; report: {heading, markdown} sections; records: free objects.
                 * @enum {string}
                 */
                kind: "table" | "report" | "records";
                path: string;
                description?: string;
                columns?: {
                    name: string;
                    /** @enum {string} */
                    type: "string" | "number" | "integer" | "boolean" | "date" | "url" | "json";
                    required: boolean;
                    description?: string;
                }[];
                key?: string[];
                /** @description JSON Schema each row of a records output must satisfy. */
                schema?: {
                    [key: string]: unknown;
                };
            }[];
            inputs: {
                upload_id: string;
                name?: string;
            }[];
            schedule: {
                cron: string;
                timezone: string;
            } | null;
            limits: {
                max_steps: number;
                max_turn_seconds: number;
                max_credits_per_turn: number;
                max_subagents: number;
                max_subagent_steps: number;
            };
            tools: ("web_search" | "fetch_url" | "read_input" | "run_code")[];
            /**
             * @description flag (default): rows are stored and unverified sources marked; require_verified: a row without a verified source, or with a source whose quote was not found or that was never read, is refused back to the agent; require_supported: as require_verified, and a row with an unsupported cell (a value no quote checked for it holds) is refused too.
             * @enum {string}
             */
            citations?: "flag" | "require_verified" | "require_supported";
            sources?: {
                include_domains: string[];
                exclude_domains: string[];
            };
            input_columns?: {
                name: string;
                /** @enum {string} */
                type: "string" | "number" | "integer" | "boolean" | "date" | "url" | "json";
                required: boolean;
                description?: string;
            }[];
        };
        /** @description A task spec: what to research and which outputs to fill. */
        TaskSpecInput: {
            name?: string;
            /** @enum {string} */
            type?: "research";
            /** @description 1-100,000 characters after trimming. */
            prompt?: string;
            outputs?: {
                /** @description 1-64 chars of a-z 0-9 _ -, starting with a letter. */
                id: string;
                /**
                 * @description table: typed columns; report: {heading, markdown} sections; records: free objects.
                 * @enum {string}
                 */
                kind: "table" | "report" | "records";
                path?: string;
                description?: string;
                columns?: {
                    /** @description Column name; may not start with "_". */
                    name: string;
                    /** @enum {string} */
                    type?: "string" | "number" | "integer" | "boolean" | "date" | "url" | "json";
                    required?: boolean;
                    description?: string;
                }[];
                /** @description Table outputs only: the required columns that identify a row; a row written again with the same key updates that row in place. */
                key?: string[];
                /** @description JSON Schema each row of a records output must satisfy. */
                schema?: {
                    [key: string]: unknown;
                };
            }[];
            inputs?: {
                upload_id: string;
                name?: string;
            }[];
            schedule?: {
                cron: string;
                timezone?: string;
            } | null;
            limits?: {
                max_steps?: number;
                max_turn_seconds?: number;
                max_credits_per_turn?: number;
                /** @description Tasks one research call may run as sub-researchers; 0 removes the research tool. */
                max_subagents?: number;
                /** @description Steps one sub-researcher may take. */
                max_subagent_steps?: number;
            };
            tools?: ("web_search" | "fetch_url" | "read_input" | "run_code")[];
            /**
             * @description flag (default): rows are stored and unverified sources marked; require_verified: a row without a verified source, or with a source whose quote was not found or that was never read, is refused back to the agent; require_supported: as require_verified, and a row with an unsupported cell (a value no quote checked for it holds) is refused too.
             * @enum {string}
             */
            citations?: "flag" | "require_verified" | "require_supported";
            sources?: {
                /** @description Only these domains (and their subdomains) are searched, fetched and accepted as sources. */
                include_domains?: string[];
                /** @description These domains (and their subdomains) are never searched, fetched or accepted as sources. */
                exclude_domains?: string[];
            };
            /** @description A group's spec only (POST /group): the columns every input has, declared as table columns are. */
            input_columns?: {
                /** @description Column name; may not start with "_". */
                name: string;
                /** @enum {string} */
                type?: "string" | "number" | "integer" | "boolean" | "date" | "url" | "json";
                required?: boolean;
                description?: string;
            }[];
        };
        TaskState: {
            task_id: string;
            /** @description True while a turn runs (or waits for a worker). */
            active: boolean;
            /** @enum {string} */
            status: "plan" | "execute" | "deleted";
            phase: ("plan" | "execute") | null;
            activity: ("idle" | "planning" | "executing" | "thinking") | null;
            /** @description What the running turn waits on now: model_rate_limit while its model call waits its place under the provider's limits (QUARRY_MODEL_RPM, QUARRY_MODEL_TPM, QUARRY_MODEL_CONCURRENCY, or what the provider's 429s and rate-limit headers said), search_rate_limit likewise for web_search; null otherwise. */
            waiting: ("model_rate_limit" | "search_rate_limit") | null;
            queued_messages: number;
            turn: {
                id: string;
                /**
                 * @description plan: a prompt create; execute: a spec create, execute or cron tick; continue: a message.
                 * @enum {string}
                 */
                kind: "plan" | "execute" | "continue";
                started_at: string | null;
            } | null;
            /** @description Sequence number of the last stored event: a Last-Event-ID to resume from. */
            last_event_id: number;
            /** @description While no turn runs: the error the last turn failed with (as its `error` event), or null when it completed or was stopped. Null while a turn runs. */
            last_error: components["schemas"]["TurnFailure"] | null;
            /** Format: date-time */
            updated_at: string;
        };
        /** @description A chunk of model text (coalesced about every 250 ms). */
        TextEvent: {
            /** @description Per-task sequence number; absent on unstored frames. */
            seq?: number;
            /** @enum {string} */
            type: "text";
            task_id: string | null;
            turn_id: string | null;
            /** Format: date-time */
            at: string;
            text: string;
            /**
             * @description The model reply whose text came since the turn's last tool event, or its task event turn_started or phase_changed, failed part-way or was cut off by a crash: drop that text. The model is asked again and the new reply's text follows (or, after the last try, the turn's error). Such an event's own text is then added as usual: the text of earlier complete answers that the drop took with it (a text-only answer before the reply to the outputs check), most often empty.
             * @enum {boolean}
             */
            restart?: true;
        };
        /** @description A tool call started, finished or failed. */
        ToolEvent: {
            /** @description Per-task sequence number; absent on unstored frames. */
            seq?: number;
            /** @enum {string} */
            type: "tool";
            task_id: string | null;
            turn_id: string | null;
            /** Format: date-time */
            at: string;
            call_id: string;
            /** @description A sub-researcher's call: "<research call_id>/<task index, from 0>". Absent on the lead's calls. */
            agent?: string;
            name: string;
            /** @enum {string} */
            state: "started" | "finished" | "failed";
            /** @description The arguments the model sent (strings longer than 2,000 characters cut). */
            input: unknown;
            summary: string | null;
            duration_ms: number | null;
            /** @description The full result the model was given (finished and failed calls). */
            output?: string;
            /** @description A write_rows call that wrote: where its rows went (read them by _row). */
            rows?: {
                output: string;
                first_row: number;
                count: number;
                /** @description How many of them had every source verified. */
                verified: number;
            };
        };
        /** @description The error a turn failed with: the members of its `error` event. */
        TurnFailure: {
            /**
             * @description Stable snake_case code: branch on it.
             * @enum {string}
             */
            error: "invalid_request" | "unauthorized" | "out_of_credits" | "origin_not_allowed" | "task_not_found" | "source_not_found" | "group_not_found" | "webhook_not_found" | "delivery_not_found" | "not_found" | "method_not_allowed" | "request_timeout" | "task_executing" | "task_in_cron_mode" | "task_exists" | "webhook_limit_reached" | "payload_too_large" | "unsupported_media_type" | "rate_limited" | "internal_error" | "bad_gateway" | "service_unavailable" | "at_capacity" | "auth_unavailable" | "limit_reached";
            /** @description What went wrong and what to do about it; show it to a person. */
            message: string;
            retryable: boolean;
        };
        TurnUsage: {
            task_id: string;
            turn_id: string;
            /**
             * @description plan: a prompt create; execute: a spec create, execute or cron tick; continue: a message.
             * @enum {string}
             */
            kind: "plan" | "execute" | "continue";
            status: string;
            /** @description Credits the turn used (at most 6 decimal places). */
            credits: number;
            /** @description All input tokens, cached ones included. */
            tokens_in: number;
            /** @description Of tokens_in, those read from the provider's prompt cache (priced at QUARRY_PRICE_CACHED_INPUT). */
            tokens_in_cached: number;
            tokens_out: number;
            tool_calls: number;
            /** @description How often the turn's conversation was compacted to fit the model's context. */
            compactions: number;
            /** @description Rows the turn wrote. */
            rows_written: number;
            /** @description Of them, rows whose every source was verified. */
            verified_rows: number;
            /** @description Of them, rows with a source that was not verified, or none. */
            unverified_rows: number;
        };
        UploadResult: {
            upload_id: string;
            size_bytes: number;
            /** @description Hex SHA-256 of the stored file. */
            sha256: string;
        };
        UploadTicket: {
            upload_id: string;
            /** @description Signed: needs no API key; expires at expires_at. */
            upload_url: string;
            /** @enum {string} */
            method: "PUT";
            headers: {
                [key: string]: string;
            };
            /** Format: date-time */
            expires_at: string;
            max_bytes: number;
        };
        Usage: {
            turns: components["schemas"]["TurnUsage"][];
        };
        Webhook: {
            webhook_id: string;
            url: string;
            events: ("task.turn_completed" | "task.turn_failed" | "task.turn_stopped" | "task.changed" | "group.finished")[];
            description: string | null;
            /** Format: date-time */
            created_at: string;
            previous_secret_expires_at: string | null;
        };
        WebhookDelivery: {
            /** @description Sent as the webhook-id header; the same on every attempt. */
            delivery_id: string;
            /** @enum {string} */
            event: "task.turn_completed" | "task.turn_failed" | "task.turn_stopped" | "task.changed" | "group.finished";
            /** @enum {string} */
            status: "pending" | "delivered" | "dead";
            last_status_code: number | null;
            last_error: string | null;
            next_attempt_at: string | null;
            /** Format: date-time */
            created_at: string;
            delivered_at: string | null;
            /** @description Attempts started so far. */
            attempts: number;
        };
        WebhookDeliveryAttempt: {
            /**
             * Format: date-time
             * @description When the attempt began.
             */
            at: string;
            status_code: number | null;
            error: string | null;
            duration_ms: number;
            response_excerpt: string | null;
        };
        /** @description A delivery with its body and the log of its attempts. */
        WebhookDeliveryDetail: {
            /** @description Sent as the webhook-id header; the same on every attempt. */
            delivery_id: string;
            /** @enum {string} */
            event: "task.turn_completed" | "task.turn_failed" | "task.turn_stopped" | "task.changed" | "group.finished";
            /** @enum {string} */
            status: "pending" | "delivered" | "dead";
            last_status_code: number | null;
            last_error: string | null;
            next_attempt_at: string | null;
            /** Format: date-time */
            created_at: string;
            delivered_at: string | null;
            /** @description The JSON body every attempt sends (a WebhookPayload). */
            payload: {
                [key: string]: unknown;
            };
            /** @description Its attempts, oldest first, each recorded as it ended (the last 50 are kept). */
            attempts: components["schemas"]["WebhookDeliveryAttempt"][];
        };
        WebhookWithSecret: {
            webhook_id: string;
            url: string;
            events: ("task.turn_completed" | "task.turn_failed" | "task.turn_stopped" | "task.changed" | "group.finished")[];
            description: string | null;
            /** Format: date-time */
            created_at: string;
            previous_secret_expires_at: string | null;
            /** @description `whsec_` + base64: the signing secret. Shown only here; store it. */
            secret: string;
        };
        Workflow: {
            version: string;
            summary: string;
            /** @description The values of status, phase and activity, and what they mean. */
            states: {
                [key: string]: unknown;
            };
            transitions: {
                from: string;
                trigger: string;
                to: string;
                note: string;
            }[];
            routes: {
                method: string;
                path: string;
                does: string;
            }[];
            events: {
                kinds: string[];
                wire: string;
            };
            polling: string;
            retry: string;
        } & {
            [key: string]: unknown;
        };
    };
    responses: {
        /** @description `invalid_request`: The request was rejected. */
        Error400: {
            headers: {
                /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                "X-Request-ID"?: string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description `unauthorized`: Credentials are missing or invalid: send X-API-Key or Authorization: Bearer. */
        Error401: {
            headers: {
                /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                "X-Request-ID"?: string;
                /** @description Bearer realm="quarry" */
                "WWW-Authenticate"?: string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description `out_of_credits`: The account has no credits left: add credits, then resend. */
        Error402: {
            headers: {
                /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                "X-Request-ID"?: string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description `task_not_found`, `source_not_found`, `group_not_found`, `webhook_not_found`, `delivery_not_found`, `not_found`: No task with that id. / No source snapshot with that id for this task. / No task group with that id. / No webhook endpoint with that id. / No delivery with that id for this endpoint. / No such route. */
        Error404: {
            headers: {
                /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                "X-Request-ID"?: string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description `method_not_allowed`: Wrong method for this route. */
        Error405: {
            headers: {
                /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                "X-Request-ID"?: string;
                /** @description The methods the path takes. */
                Allow?: string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description `task_executing`, `task_in_cron_mode`, `task_exists`, `webhook_limit_reached`: A turn is running: poll /state until active is false, then resend. / The task runs on a schedule and takes no messages. / A task with that task_id already exists: continue it instead. / The account has as many webhook endpoints as it may: delete one first. */
        Error409: {
            headers: {
                /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                "X-Request-ID"?: string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description `payload_too_large`: The body is too large: send large inputs via POST /upload-url. */
        Error413: {
            headers: {
                /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                "X-Request-ID"?: string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description `unsupported_media_type`: The body must be JSON with Content-Type: application/json. */
        Error415: {
            headers: {
                /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                "X-Request-ID"?: string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description `invalid_request`: A field failed validation. */
        Error422: {
            headers: {
                /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                "X-Request-ID"?: string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description `rate_limited`: Too many requests for this key. */
        Error429: {
            headers: {
                /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                "X-Request-ID"?: string;
                /** @description Seconds to wait before resending. */
                "Retry-After"?: number;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description `internal_error`: Something went wrong on our side. */
        Error500: {
            headers: {
                /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                "X-Request-ID"?: string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description `bad_gateway`: An upstream service failed: resend shortly. */
        Error502: {
            headers: {
                /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                "X-Request-ID"?: string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description `service_unavailable`, `at_capacity`, `auth_unavailable`: Task state cannot be read right now. / Too many turns are waiting to run. / Key verification is unavailable right now. */
        Error503: {
            headers: {
                /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                "X-Request-ID"?: string;
                /** @description Seconds to wait before resending. */
                "Retry-After"?: number;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
    };
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
};
export type $defs = Record<string, never>;
export interface operations {
    health: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Up. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {boolean} */
                        ok: true;
                    };
                };
            };
        };
    };
    ready: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Ready. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        ok: boolean;
                    };
                };
            };
            /** @description Not ready: `{"ok": false}` while starting or shutting down; the error body (`service_unavailable`) while the store does not answer. */
            503: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description Seconds to wait before resending. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        ok: boolean;
                    } | components["schemas"]["Error"];
                };
            };
        };
    };
    getWorkflow: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The task workflow and route map. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Workflow"];
                };
            };
            401: components["responses"]["Error401"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    getMetaprompt: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The spec's JSON Schema, the output kinds and a guide for writing a spec. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Metaprompt"];
                };
            };
            401: components["responses"]["Error401"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listTasks: {
        parameters: {
            query?: {
                limit?: number;
                /** @description X-Next-Cursor of the previous page. */
                cursor?: string;
                /** @description List this group's runs (they are left out otherwise). */
                group_id?: string;
                /** @description Only tasks whose name or prompt holds this text (case-insensitive). */
                q?: string;
                /** @description running: a turn runs or waits for a worker; idle: none does. */
                state?: "running" | "idle";
                /** @description Only tasks whose last ended turn had this outcome. */
                outcome?: "completed" | "failed" | "stopped";
                /** @description Only tasks created after this time (ISO 8601). */
                created_after?: string;
                /** @description Only tasks created before this time (ISO 8601). */
                created_before?: string;
            };
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of tasks. Without X-Next-Cursor and Link this is the last page. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description Pass as `cursor` for the next page. */
                    "X-Next-Cursor"?: string;
                    /** @description `<url>; rel="next"`: the next page. */
                    Link?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"][];
                };
            };
            401: components["responses"]["Error401"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    createTask: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
                /** @description The same key (1-128 chars) within 24 h replays the first answer and changes nothing. */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description What to research (1-100,000 characters after trimming). */
                    prompt: string;
                    /** @description 1-64 chars of A-Z a-z 0-9 _ . : - */
                    task_id?: string;
                    /** @description End the first turn after planning; then call execute. */
                    plan_only?: boolean;
                    /** @description Accepted for compatibility and ignored: creates never block. */
                    wait?: unknown;
                };
            };
        };
        responses: {
            /** @description The new task (a turn is running), or the task the message started a turn on. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description true when this answer replays an earlier request with the same Idempotency-Key. */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            /** @description The message was queued behind the running turn (status `accepted`). */
            202: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description true when this answer replays an earlier request with the same Idempotency-Key. */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            402: components["responses"]["Error402"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            409: components["responses"]["Error409"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            502: components["responses"]["Error502"];
            503: components["responses"]["Error503"];
        };
    };
    createTaskStream: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description What to research (1-100,000 characters after trimming). */
                    prompt: string;
                    /** @description 1-64 chars of A-Z a-z 0-9 _ . : - */
                    task_id?: string;
                    /** @description End the first turn after planning; then call execute. */
                    plan_only?: boolean;
                    /** @description Accepted for compatibility and ignored: creates never block. */
                    wait?: unknown;
                };
            };
        };
        responses: {
            /** @description Server-sent events: task, tool, text, error and done (each `data:` is a TaskEvent as JSON). Refusals from the task's state arrive in the stream as error then done. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    startTask: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
                /** @description The same key (1-128 chars) within 24 h replays the first answer and changes nothing. */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    task?: components["schemas"]["TaskSpecInput"];
                    /** @description 1-64 chars of A-Z a-z 0-9 _ . : - */
                    task_id?: string;
                    /** @description Used when `task` is absent: then the request is a prompt, as POST /task. */
                    prompt?: string;
                    plan_only?: boolean;
                    /** @description Accepted for compatibility and ignored: creates never block. */
                    wait?: unknown;
                };
            };
        };
        responses: {
            /** @description The new task (a turn is running). */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description true when this answer replays an earlier request with the same Idempotency-Key. */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            /** @description The message was queued behind the running turn (status `accepted`). */
            202: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description true when this answer replays an earlier request with the same Idempotency-Key. */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            402: components["responses"]["Error402"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            409: components["responses"]["Error409"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            502: components["responses"]["Error502"];
            503: components["responses"]["Error503"];
        };
    };
    startTaskStream: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    task?: components["schemas"]["TaskSpecInput"];
                    /** @description 1-64 chars of A-Z a-z 0-9 _ . : - */
                    task_id?: string;
                    /** @description Used when `task` is absent: then the request is a prompt, as POST /task. */
                    prompt?: string;
                    plan_only?: boolean;
                    /** @description Accepted for compatibility and ignored: creates never block. */
                    wait?: unknown;
                };
            };
        };
        responses: {
            /** @description Server-sent events: task, tool, text, error and done (each `data:` is a TaskEvent as JSON). Refusals from the task's state arrive in the stream as error then done. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    getTask: {
        parameters: {
            query?: {
                /** @description Seconds to wait for the running turn to end. */
                wait?: number;
            };
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The task, its spec and its last 100 events. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskDetail"];
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    deleteTask: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The task with status `deleted`. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    updateTask: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    name?: string | null;
                    pinned?: boolean;
                    schedule?: {
                        cron: string;
                        timezone?: string;
                    } | null;
                };
            };
        };
        responses: {
            /** @description The task as changed. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    getTaskState: {
        parameters: {
            query?: {
                /** @description Seconds to wait for the running turn to end. */
                wait?: number;
            };
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The task's state from one indexed read. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskState"];
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    streamTask: {
        parameters: {
            query?: {
                /** @description Replay stored events after this sequence number (as Last-Event-ID). */
                after?: number;
            };
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
                /** @description Replay stored events after this sequence number, then go live. */
                "Last-Event-ID"?: string;
            };
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Server-sent events: task, tool, text, error and done (each `data:` is a TaskEvent as JSON). Refusals from the task's state arrive in the stream as error then done. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            /** @description A reconnect (Last-Event-ID) to a task with no running turn and nothing new: there is nothing to follow, and a standard EventSource stops. */
            204: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listEvents: {
        parameters: {
            query?: {
                after?: number;
                limit?: number;
            };
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Stored events after `after`, oldest first. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventPage"];
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    continueTask: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
                /** @description The same key (1-128 chars) within 24 h replays the first answer and changes nothing. */
                "Idempotency-Key"?: string;
            };
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description What to change, add or continue. */
                    message: string;
                    /** @description Run this turn offline: web_search is not offered, and fetch_url answers only from the pages this task already fetched (its snapshots); a URL never fetched before is a tool error. */
                    offline?: boolean;
                    /** @description true or a positive integer: block until the turn ends (at most QUARRY_MAX_BLOCK_SECONDS). */
                    wait?: boolean | number;
                };
            };
        };
        responses: {
            /** @description A turn started on the message (or, with wait, the task after it). */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description true when this answer replays an earlier request with the same Idempotency-Key. */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            /** @description The message was queued behind the running turn (status `accepted`). */
            202: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description true when this answer replays an earlier request with the same Idempotency-Key. */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            402: components["responses"]["Error402"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            409: components["responses"]["Error409"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            502: components["responses"]["Error502"];
            503: components["responses"]["Error503"];
        };
    };
    continueTaskStream: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description What to change, add or continue. */
                    message: string;
                    /** @description Run this turn offline: web_search is not offered, and fetch_url answers only from the pages this task already fetched (its snapshots); a URL never fetched before is a tool error. */
                    offline?: boolean;
                    /** @description true or a positive integer: block until the turn ends (at most QUARRY_MAX_BLOCK_SECONDS). */
                    wait?: boolean | number;
                };
            };
        };
        responses: {
            /** @description Server-sent events: task, tool, text, error and done (each `data:` is a TaskEvent as JSON). Refusals from the task's state arrive in the stream as error then done. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    executeTask: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
                /** @description The same key (1-128 chars) within 24 h replays the first answer and changes nothing. */
                "Idempotency-Key"?: string;
            };
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    /** @description An instruction for this run. */
                    instruction?: string;
                    /** @description Run this turn offline: web_search is not offered, and fetch_url answers only from the pages this task already fetched (its snapshots); a URL never fetched before is a tool error. */
                    offline?: boolean;
                    /** @description true or a positive integer: block until the turn ends (at most QUARRY_MAX_BLOCK_SECONDS). */
                    wait?: boolean | number;
                };
            };
        };
        responses: {
            /** @description A turn started (or, with wait, the task after it). */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description true when this answer replays an earlier request with the same Idempotency-Key. */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            402: components["responses"]["Error402"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            409: components["responses"]["Error409"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            502: components["responses"]["Error502"];
            503: components["responses"]["Error503"];
        };
    };
    executeTaskStream: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    /** @description An instruction for this run. */
                    instruction?: string;
                    /** @description Run this turn offline: web_search is not offered, and fetch_url answers only from the pages this task already fetched (its snapshots); a URL never fetched before is a tool error. */
                    offline?: boolean;
                    /** @description true or a positive integer: block until the turn ends (at most QUARRY_MAX_BLOCK_SECONDS). */
                    wait?: boolean | number;
                };
            };
        };
        responses: {
            /** @description Server-sent events: task, tool, text, error and done (each `data:` is a TaskEvent as JSON). Refusals from the task's state arrive in the stream as error then done. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    stopTask: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    /** @description Also cancel the queued messages. */
                    clear_queue?: boolean;
                };
            };
        };
        responses: {
            /** @description The task right after the stop. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    getOutput: {
        parameters: {
            query?: {
                /** @description Rows per page. */
                limit?: number;
                offset?: number;
                /** @description A named output to read instead of the active one. */
                output?: string;
                /** @description csv or jsonl streams the whole output as a file (also Accept: text/csv). */
                format?: "json" | "csv" | "jsonl";
            };
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of rows (JSON), or with format=csv|jsonl (or Accept: text/csv) the whole output as a file. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description attachment; filename="<output file>" (csv and jsonl). */
                    "Content-Disposition"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OutputPage"];
                    "text/csv": string;
                    "application/x-ndjson": string;
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listOutputs: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The outputs of the spec, in order. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OutputList"];
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    getNamedOutput: {
        parameters: {
            query?: {
                /** @description Rows per page. */
                limit?: number;
                offset?: number;
                /** @description A named output to read instead of the active one. */
                output?: string;
                /** @description csv or jsonl streams the whole output as a file (also Accept: text/csv). */
                format?: "json" | "csv" | "jsonl";
            };
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                task_id: string;
                output_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of rows (JSON), or with format=csv|jsonl (or Accept: text/csv) the whole output as a file. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description attachment; filename="<output file>" (csv and jsonl). */
                    "Content-Disposition"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OutputPage"];
                    "text/csv": string;
                    "application/x-ndjson": string;
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listSources: {
        parameters: {
            query?: {
                limit?: number;
                offset?: number;
            };
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Snapshots in the order they were read. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        total: number;
                        sources: components["schemas"]["SourceInfo"][];
                    };
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listChanges: {
        parameters: {
            query?: {
                /** @description A turn id: only changes of later turns. */
                since?: string;
                /** @description Only changes written after this time. */
                after?: string;
                limit?: number;
                /** @description X-Next-Cursor of the previous page. */
                cursor?: string;
            };
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of changes. Without X-Next-Cursor and Link this is the last page. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description Pass as `cursor` for the next page. */
                    "X-Next-Cursor"?: string;
                    /** @description `<url>; rel="next"`: the next page. */
                    Link?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        changes: components["schemas"]["RowChange"][];
                    };
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    getSource: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                task_id: string;
                source_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The snapshot and the text quotes are checked against. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SourceDetail"];
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    recheckTask: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                task_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": Record<string, never>;
            };
        };
        responses: {
            /** @description How many rows were checked and how many changed; a second recheck changes none. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RecheckResult"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            405: components["responses"]["Error405"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    createUploadUrl: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    filename: string;
                    content_type: string;
                    /** @description The file's size; the PUT may send at most this many bytes. */
                    size_bytes: number;
                };
            };
        };
        responses: {
            /** @description Where and how to PUT the file. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UploadTicket"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    putUpload: {
        parameters: {
            query?: {
                expires?: string;
                sig?: string;
            };
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                upload_id: string;
            };
            cookie?: never;
        };
        /** @description The file itself, of any type, at most size_bytes bytes. */
        requestBody: {
            content: {
                "*/*": string;
            };
        };
        responses: {
            /** @description Stored. */
            201: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UploadResult"];
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            413: components["responses"]["Error413"];
            422: components["responses"]["Error422"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listGroups: {
        parameters: {
            query?: {
                limit?: number;
                /** @description X-Next-Cursor of the previous page. */
                cursor?: string;
                /** @description Only groups whose name holds this text (case-insensitive). */
                q?: string;
                /** @description Only groups with this status. */
                status?: "running" | "finished" | "stopped";
            };
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of groups. Without X-Next-Cursor and Link this is the last page. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description Pass as `cursor` for the next page. */
                    "X-Next-Cursor"?: string;
                    /** @description `<url>; rel="next"`: the next page. */
                    Link?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Group"][];
                };
            };
            401: components["responses"]["Error401"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    createGroup: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
                /** @description The same key (1-128 chars) within 24 h replays the first answer and changes nothing. */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    name?: string;
                    task: components["schemas"]["TaskSpecInput"];
                    /** @description At most 1000 per request; more through an uploaded file. */
                    inputs?: {
                        [key: string]: unknown;
                    }[];
                    /** @description A finished upload: a CSV file (a header row naming the columns) or JSON Lines (one object per line). */
                    input_upload_id?: string;
                    /** @description Runs of this group working at once (default 8). */
                    max_parallel?: number;
                    /** @description Once the group's runs have used this much (a scheduled group: in this tick), the runs still pending are stopped. */
                    max_credits?: number;
                    schedule?: {
                        cron: string;
                        timezone?: string;
                    };
                };
            };
        };
        responses: {
            /** @description The group; its first runs have started. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description true when this answer replays an earlier request with the same Idempotency-Key. */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GroupDetail"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            402: components["responses"]["Error402"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    getGroup: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                group_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The group. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GroupDetail"];
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    addGroupInputs: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                group_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description At most 1000 per request; more through an uploaded file. */
                    inputs?: {
                        [key: string]: unknown;
                    }[];
                    /** @description A finished upload: a CSV file (a header row naming the columns) or JSON Lines (one object per line). */
                    input_upload_id?: string;
                };
            };
        };
        responses: {
            /** @description The group with the inputs added. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GroupDetail"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            402: components["responses"]["Error402"];
            404: components["responses"]["Error404"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    getGroupRows: {
        parameters: {
            query?: {
                /** @description Rows per page. */
                limit?: number;
                offset?: number;
                /** @description csv or jsonl streams every merged row as a file (also Accept: text/csv). */
                format?: "json" | "csv" | "jsonl";
            };
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                group_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of merged rows (JSON), or with format=csv|jsonl (or Accept: text/csv) every merged row as a file. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description attachment; filename="<group_id>.<format>" (exports only). */
                    "Content-Disposition"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GroupRowsPage"];
                    "text/csv": string;
                    "application/x-ndjson": string;
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listGroupChanges: {
        parameters: {
            query?: {
                /** @description A turn id: only changes of later turns. */
                since?: string;
                /** @description Only changes written after this time. */
                after?: string;
                limit?: number;
                /** @description X-Next-Cursor of the previous page. */
                cursor?: string;
            };
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                group_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of changes. Without X-Next-Cursor and Link this is the last page. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description Pass as `cursor` for the next page. */
                    "X-Next-Cursor"?: string;
                    /** @description `<url>; rel="next"`: the next page. */
                    Link?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        changes: components["schemas"]["GroupRowChange"][];
                    };
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    streamGroup: {
        parameters: {
            query?: {
                /** @description Replay stored events after this sequence number (as Last-Event-ID). */
                after?: number;
            };
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
                /** @description Replay stored events after this sequence number, then go live. */
                "Last-Event-ID"?: string;
            };
            path: {
                group_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Server-sent events of the group: run, group and done (each `data:` is a GroupEvent as JSON). */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            /** @description A resume point (Last-Event-ID or after) at the last event of a group with nothing pending or running: nothing to follow. */
            204: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    stopGroup: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                group_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": Record<string, never>;
            };
        };
        responses: {
            /** @description The group after the stop. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GroupDetail"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    retryGroup: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                group_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    /**
                     * @description Which runs to run again: failed (the default), stopped (by POST /group/{id}/stop or max_credits), or both.
                     * @default [
                     *       "failed"
                     *     ]
                     */
                    include?: ("failed" | "stopped")[];
                    max_credits?: number | null;
                };
            };
        };
        responses: {
            /** @description The group with those inputs pending again. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GroupDetail"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            402: components["responses"]["Error402"];
            404: components["responses"]["Error404"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listGroupRuns: {
        parameters: {
            query?: {
                /** @description Only the runs with this status. */
                status?: "pending" | "running" | "completed" | "failed" | "stopped";
                limit?: number;
                /** @description X-Next-Cursor of the previous page. */
                cursor?: string;
            };
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                group_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of runs. Without X-Next-Cursor and Link this is the last page. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description Pass as `cursor` for the next page. */
                    "X-Next-Cursor"?: string;
                    /** @description `<url>; rel="next"`: the next page. */
                    Link?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GroupRunList"];
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listWebhooks: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Every endpoint of the account. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        webhooks: components["schemas"]["Webhook"][];
                    };
                };
            };
            401: components["responses"]["Error401"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    createWebhook: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description An http(s) URL that takes POST requests; no user name or password in it. */
                    url: string;
                    /** @description Which events to send: task.turn_completed, task.turn_failed, task.turn_stopped, task.changed (a turn changed a keyed output), group.finished. */
                    events: ("task.turn_completed" | "task.turn_failed" | "task.turn_stopped" | "task.changed" | "group.finished")[];
                    description?: string;
                };
            };
        };
        responses: {
            /** @description The endpoint and its signing secret (shown only now). */
            201: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookWithSecret"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            409: components["responses"]["Error409"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    getWebhook: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                webhook_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The endpoint. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    deleteWebhook: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                webhook_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The endpoint as it was. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    rotateWebhookSecret: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                webhook_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": Record<string, never>;
            };
        };
        responses: {
            /** @description The endpoint and its new secret (shown only now). */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookWithSecret"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listWebhookDeliveries: {
        parameters: {
            query?: {
                limit?: number;
                /** @description X-Next-Cursor of the previous page. */
                cursor?: string;
            };
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                webhook_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of deliveries. Without X-Next-Cursor and Link this is the last page. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    /** @description Pass as `cursor` for the next page. */
                    "X-Next-Cursor"?: string;
                    /** @description `<url>; rel="next"`: the next page. */
                    Link?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        deliveries: components["schemas"]["WebhookDelivery"][];
                    };
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    getWebhookDelivery: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                webhook_id: string;
                delivery_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The delivery. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDeliveryDetail"];
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    redeliverWebhook: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                webhook_id: string;
                delivery_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": Record<string, never>;
            };
        };
        responses: {
            /** @description The delivery, due now. */
            202: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDelivery"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    getAccount: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The account. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OwnAccount"];
                };
            };
            401: components["responses"]["Error401"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    adminCreateAccount: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    name: string;
                    credits: number;
                };
            };
        };
        responses: {
            /** @description The account and its first key (shown once). */
            201: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreatedAccount"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    adminGetAccount: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                account_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The account. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Account"];
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            422: components["responses"]["Error422"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    adminAddCredits: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                account_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description Credits to add; negative takes them (the balance never goes below 0). */
                    amount: number;
                };
            };
        };
        responses: {
            /** @description The new balance. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Balance"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    adminListKeys: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                account_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The keys, revoked ones too. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["KeyList"];
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            422: components["responses"]["Error422"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    adminCreateKey: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                account_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": Record<string, never>;
            };
        };
        responses: {
            /** @description The new key (shown once). */
            201: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreatedKey"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            422: components["responses"]["Error422"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    adminRevokeKey: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                account_id: string;
                key_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The key as revoked. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        key_id: string;
                        revoked_at: string | null;
                    };
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            422: components["responses"]["Error422"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    adminGetUsage: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed. */
                "X-Request-ID"?: string;
            };
            path: {
                account_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The account's turns, newest first. */
            200: {
                headers: {
                    /** @description The request id: the client's valid X-Request-ID echoed, else a new req_ id. */
                    "X-Request-ID"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Usage"];
                };
            };
            401: components["responses"]["Error401"];
            404: components["responses"]["Error404"];
            422: components["responses"]["Error422"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
}
