# Generated from Quarry's OpenAPI document (src/contract) by scripts/generate-python-client.ts: do not edit.
# Run `npm run generate` after changing the contract; a test fails while this file is stale.
"""Every body, answer and event of the API as a TypedDict (fields as on the wire)."""
from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union


class Account(TypedDict):
    account_id: str
    name: str
    balance: float
    """Credits left (at most 6 decimal places)."""
    credits_used: float
    """Credits used so far (at most 6 decimal places)."""
    created_at: str


class Balance(TypedDict):
    account_id: str
    balance: float
    """Credits left (at most 6 decimal places)."""


class ChangeCounts(TypedDict):
    """A task with a keyed table output: what the turn changed, as on its done event (GET /task/{task_id}/changes lists it)."""
    added: int
    """Keys the turn wrote for the first time."""
    changed: int
    """Rows whose values or sources the turn changed."""
    unconfirmed: int
    """Keys an execute turn did not write again although they existed before (the rows stay)."""


class CreatedAccount(TypedDict):
    account_id: str
    name: str
    balance: float
    """The starting balance (at most 6 decimal places)."""
    api_key: str
    """Shown once."""
    key_id: str


class CreatedKey(TypedDict):
    key_id: str
    api_key: str
    """Shown once."""


class _DoneEventRequired(TypedDict):
    type: Literal["done"]
    task_id: Optional[str]
    turn_id: Optional[str]
    at: str
    outcome: Literal["completed", "stopped", "failed", "refused", "idle"]
    output_count: Optional[int]
    credits_used: float


class DoneEvent(_DoneEventRequired, total=False):
    """A turn ended (stored), or a stream of an idle task or a refused change closes (unstored)."""
    seq: int
    """Per-task sequence number; absent on unstored frames."""
    rows_written: int
    """Rows the turn wrote (a stored `done` of a turn)."""
    verified_rows: int
    """Of them, rows whose every source was verified."""
    unverified_rows: int
    """Of them, rows with a source that was not verified, or none."""
    citation_accuracy: Optional[float]
    next_turn_id: Optional[str]
    tokens_in: int
    """A turn that ended: all input tokens of its model calls, cached ones included."""
    tokens_in_cached: int
    """Of tokens_in, those the provider read from its prompt cache."""
    tokens_out: int
    """A turn that ended: the output tokens of its model calls."""
    compactions: int
    """A turn that ended: how often its conversation was compacted to fit the model's context."""
    changes: ChangeCounts


class _ErrorRequired(TypedDict):
    error: Literal["invalid_request", "unauthorized", "out_of_credits", "origin_not_allowed", "task_not_found", "source_not_found", "group_not_found", "webhook_not_found", "delivery_not_found", "not_found", "method_not_allowed", "request_timeout", "task_executing", "task_in_cron_mode", "task_exists", "webhook_limit_reached", "payload_too_large", "unsupported_media_type", "rate_limited", "internal_error", "bad_gateway", "service_unavailable", "at_capacity", "auth_unavailable", "limit_reached"]
    """Stable snake_case code: branch on it."""
    message: str
    """What went wrong and what to do: show it to a person."""
    retryable: bool
    """Whether the same request may succeed later."""
    request_id: str
    """Also in the X-Request-ID header."""


class Error(_ErrorRequired, total=False):
    retry_after: int
    """Seconds to wait (429, 503); also the Retry-After header."""
    resolve: str
    """Where to fix the cause (402)."""
    param: str
    """The field that failed validation (422)."""
    detail: List[ErrorDetailItem]
    """Validator output (422)."""
    task_id: str
    """The task the error refers to."""
    task_created: bool
    """false on a refused POST /task: no task exists."""


class ErrorDetailItem(TypedDict):
    type: str
    """What kind of check failed, e.g. missing, string_too_long."""
    loc: List[Union[str, int]]
    """Where: the request part, then the path to the field."""
    msg: str


class _ErrorEventRequired(TypedDict):
    type: Literal["error"]
    task_id: Optional[str]
    turn_id: Optional[str]
    at: str
    error: Literal["invalid_request", "unauthorized", "out_of_credits", "origin_not_allowed", "task_not_found", "source_not_found", "group_not_found", "webhook_not_found", "delivery_not_found", "not_found", "method_not_allowed", "request_timeout", "task_executing", "task_in_cron_mode", "task_exists", "webhook_limit_reached", "payload_too_large", "unsupported_media_type", "rate_limited", "internal_error", "bad_gateway", "service_unavailable", "at_capacity", "auth_unavailable", "limit_reached"]
    """Stable snake_case code: branch on it."""
    message: str
    retryable: bool


class ErrorEvent(_ErrorEventRequired, total=False):
    """A failure after the stream opened (a turn failed, or a refusal inside a stream)."""
    seq: int
    """Per-task sequence number; absent on unstored frames."""


class EventPage(TypedDict):
    events: List[TaskEvent]
    next_after: Optional[int]


class _TaskChangedEventRequired(TypedDict):
    type: Literal["task"]
    task_id: Optional[str]
    turn_id: Optional[str]
    at: str
    reason: Literal["created", "turn_started", "phase_changed", "activity_changed", "message_queued", "turn_ended", "updated", "cron_tick_skipped", "deleted", "snapshot"]
    """snapshot: the unstored idle snapshot of GET /task/{task_id}/stream."""
    task: Task


class TaskChangedEvent(_TaskChangedEventRequired, total=False):
    """The task changed; carries its snapshot."""
    seq: int
    """Per-task sequence number; absent on unstored frames."""
    message: str
    """The caller's words: on `message_queued`, and on `turn_started` of a turn that a message or an `execute` instruction started."""


class _TaskRequired(TypedDict):
    task_id: str
    name: Optional[str]
    type: Optional[str]
    status: Literal["plan", "execute", "deleted", "accepted"]
    """plan: no turn runs; execute: a turn runs or waits; deleted; accepted on a 202 (message queued)."""
    phase: Optional[Literal["plan", "execute"]]
    activity: Optional[Literal["idle", "planning", "executing", "thinking"]]
    waiting: Optional[Literal["model_rate_limit", "search_rate_limit"]]
    """What the running turn waits on now: model_rate_limit while its model call waits its place under the provider's limits (QUARRY_MODEL_RPM, QUARRY_MODEL_TPM, QUARRY_MODEL_CONCURRENCY, or what the provider's 429s and rate-limit headers said), search_rate_limit likewise for web_search; null otherwise."""
    output_count: int
    poll_after_s: int
    """Seconds to wait before polling again: 2 while a turn runs, else 30 (or until the next cron run, at most 300)."""
    status_url: str
    output_url: str
    stream_url: str
    created_at: str
    updated_at: str
    pinned: bool
    cron: Optional[TaskCron]
    queued_messages: int
    credits_used: float
    """Credits this task has used (at most 6 decimal places)."""
    active_output: Optional[str]
    last_turn: Optional[LastTurn]
    """The last turn that ended, or null before the first ends."""
    citation_accuracy: Optional[float]


class Task(_TaskRequired, total=False):
    group_id: str
    """A group's run only: its group."""
    input_index: int
    """A group's run only: its input's index in the group (`_input`)."""
    input: Dict[str, Any]
    """A group's run only: the input it runs on."""


class TaskCron(TypedDict):
    expression: str
    timezone: str
    next_run_at: Optional[str]


class _LastTurnRequired(TypedDict):
    turn_id: str
    kind: Literal["plan", "execute", "continue"]
    """plan: a prompt create; execute: a spec create, execute or cron tick; continue: a message."""
    outcome: Literal["completed", "failed", "stopped"]
    started_at: Optional[str]
    ended_at: str
    credits_used: float
    """Credits the turn used (at most 6 decimal places)."""
    error: Optional[LastTurnError]
    """What the turn failed with; null when it completed or was stopped."""


class LastTurn(_LastTurnRequired, total=False):
    """The last turn that ended."""
    changes: ChangeCounts


class LastTurnError(TypedDict):
    error: Literal["invalid_request", "unauthorized", "out_of_credits", "origin_not_allowed", "task_not_found", "source_not_found", "group_not_found", "webhook_not_found", "delivery_not_found", "not_found", "method_not_allowed", "request_timeout", "task_executing", "task_in_cron_mode", "task_exists", "webhook_limit_reached", "payload_too_large", "unsupported_media_type", "rate_limited", "internal_error", "bad_gateway", "service_unavailable", "at_capacity", "auth_unavailable", "limit_reached"]
    """Stable snake_case code: branch on it."""
    message: str


class _ToolEventRequired(TypedDict):
    type: Literal["tool"]
    task_id: Optional[str]
    turn_id: Optional[str]
    at: str
    call_id: str
    name: str
    state: Literal["started", "finished", "failed"]
    input: Any
    """The arguments the model sent (strings longer than 2,000 characters cut)."""
    summary: Optional[str]
    duration_ms: Optional[int]


class ToolEvent(_ToolEventRequired, total=False):
    """A tool call started, finished or failed."""
    seq: int
    """Per-task sequence number; absent on unstored frames."""
    agent: str
    """A sub-researcher's call: "<research call_id>/<task index, from 0>". Absent on the lead's calls."""
    output: str
    """The full result the model was given (finished and failed calls)."""
    rows: ToolEventRows
    """A write_rows call that wrote: where its rows went (read them by _row)."""


class ToolEventRows(TypedDict):
    """A write_rows call that wrote: where its rows went (read them by _row)."""
    output: str
    first_row: int
    count: int
    verified: int
    """How many of them had every source verified."""


class _TextEventRequired(TypedDict):
    type: Literal["text"]
    task_id: Optional[str]
    turn_id: Optional[str]
    at: str
    text: str


class TextEvent(_TextEventRequired, total=False):
    """A chunk of model text (coalesced about every 250 ms)."""
    seq: int
    """Per-task sequence number; absent on unstored frames."""
    restart: Literal[True]
    """The model reply whose text came since the turn's last tool event, or its task event turn_started or phase_changed, failed part-way or was cut off by a crash: drop that text. The model is asked again and the new reply's text follows (or, after the last try, the turn's error). Such an event's own text is then added as usual: the text of earlier complete answers that the drop took with it (a text-only answer before the reply to the outputs check), most often empty."""


TaskEvent = Union[TaskChangedEvent, ToolEvent, TextEvent, ErrorEvent, DoneEvent]


class _FieldBasisRequired(TypedDict):
    confidence: Literal["high", "medium", "low"]


class FieldBasis(_FieldBasisRequired, total=False):
    reasoning: str


class Group(TypedDict):
    group_id: str
    name: Optional[str]
    status: Literal["running", "finished", "stopped"]
    """running while a run is pending or running; finished when none is; stopped by POST /group/{id}/stop."""
    counts: GroupCounts
    """The group's inputs by the status of their run (duplicates are not counted)."""
    inputs: int
    """Inputs received, duplicates included; each took the next index (`_input`)."""
    duplicates: int
    """Inputs whose `_key` the group already had: counted, never run."""
    credits_used: float
    """What the group's runs used: with max_credits as they are charged, without as each run ends; a scheduled group: since the last tick."""
    max_parallel: int
    max_credits: Optional[float]
    created_at: str
    updated_at: str
    finished_at: Optional[str]
    cron: Optional[GroupCron]


class GroupCounts(TypedDict):
    """The group's inputs by the status of their run (duplicates are not counted)."""
    pending: int
    running: int
    completed: int
    failed: int
    stopped: int


class GroupCron(TypedDict):
    """A scheduled group: its schedule and next tick; null otherwise."""
    expression: str
    timezone: str
    next_run_at: Optional[str]


class GroupDetail(TypedDict):
    """A group with the spec its runs share."""
    group_id: str
    name: Optional[str]
    status: Literal["running", "finished", "stopped"]
    """running while a run is pending or running; finished when none is; stopped by POST /group/{id}/stop."""
    counts: GroupDetailCounts
    """The group's inputs by the status of their run (duplicates are not counted)."""
    inputs: int
    """Inputs received, duplicates included; each took the next index (`_input`)."""
    duplicates: int
    """Inputs whose `_key` the group already had: counted, never run."""
    credits_used: float
    """What the group's runs used: with max_credits as they are charged, without as each run ends; a scheduled group: since the last tick."""
    max_parallel: int
    max_credits: Optional[float]
    created_at: str
    updated_at: str
    finished_at: Optional[str]
    cron: Optional[GroupDetailCron]
    spec: TaskSpec


class GroupDetailCounts(TypedDict):
    """The group's inputs by the status of their run (duplicates are not counted)."""
    pending: int
    running: int
    completed: int
    failed: int
    stopped: int


class GroupDetailCron(TypedDict):
    """A scheduled group: its schedule and next tick; null otherwise."""
    expression: str
    timezone: str
    next_run_at: Optional[str]


class _TaskSpecRequired(TypedDict):
    name: Optional[str]
    type: Literal["research"]
    prompt: Optional[str]
    outputs: List[TaskSpecOutputsItem]
    inputs: List[TaskSpecInputsItem]
    schedule: Optional[TaskSpecSchedule]
    limits: TaskSpecLimits
    tools: List[Literal["web_search", "fetch_url", "read_input", "run_code"]]


class TaskSpec(_TaskSpecRequired, total=False):
    """The spec as stored: every default filled in."""
    citations: Literal["flag", "require_verified", "require_supported"]
    """flag (default): rows are stored and unverified sources marked; require_verified: a row without a verified source, or with a source whose quote was not found or that was never read, is refused back to the agent; require_supported: as require_verified, and a row with an unsupported cell (a value no quote checked for it holds) is refused too."""
    sources: TaskSpecSources
    input_columns: List[TaskSpecInputColumnsItem]


class _TaskSpecOutputsItemRequired(TypedDict):
    id: str
    kind: Literal["table", "report", "records"]
    """table: typed columns; report: {heading, markdown} sections; records: free objects."""
    path: str


class TaskSpecOutputsItem(_TaskSpecOutputsItemRequired, total=False):
    description: str
    columns: List[TaskSpecOutputsItemColumnsItem]
    key: List[str]
    schema: Dict[str, Any]
    """JSON Schema each row of a records output must satisfy."""


class _TaskSpecOutputsItemColumnsItemRequired(TypedDict):
    name: str
    type: Literal["string", "number", "integer", "boolean", "date", "url", "json"]
    required: bool


class TaskSpecOutputsItemColumnsItem(_TaskSpecOutputsItemColumnsItemRequired, total=False):
    description: str


class _TaskSpecInputsItemRequired(TypedDict):
    upload_id: str


class TaskSpecInputsItem(_TaskSpecInputsItemRequired, total=False):
    name: str


class TaskSpecSchedule(TypedDict):
    cron: str
    timezone: str


class TaskSpecLimits(TypedDict):
    max_steps: int
    max_turn_seconds: int
    max_credits_per_turn: float
    max_subagents: int
    max_subagent_steps: int


class TaskSpecSources(TypedDict):
    include_domains: List[str]
    exclude_domains: List[str]


class _TaskSpecInputColumnsItemRequired(TypedDict):
    name: str
    type: Literal["string", "number", "integer", "boolean", "date", "url", "json"]
    required: bool


class TaskSpecInputColumnsItem(_TaskSpecInputColumnsItemRequired, total=False):
    description: str


class RowChange(TypedDict):
    turn_id: str
    at: str
    """When the turn wrote it (for unconfirmed: when the turn ended)."""
    output: str
    """The output id."""
    key: Dict[str, Any]
    """The key columns and their values."""
    change: Literal["added", "changed", "unconfirmed"]
    fields: Dict[str, RowChangeFieldsValue]
    """added: every column with a value (before null); changed: the columns whose value changed; unconfirmed: none."""
    sources: RowChangeSources
    """The row's _sources before and after (null where the row did not exist, and both null for unconfirmed)."""


class RowChangeFieldsValue(TypedDict):
    before: Any
    after: Any


class RowChangeSources(TypedDict):
    """The row's _sources before and after (null where the row did not exist, and both null for unconfirmed)."""
    before: Optional[List[RowSource]]
    after: Optional[List[RowSource]]


class RowSource(TypedDict, total=False):
    url: str
    upload_id: str
    title: str
    quote: str
    fields: List[str]
    """The columns this source supports; absent: the whole row."""
    verified: bool
    """true for quote_found and page_read. Absent on rows written before sources were checked."""
    check: Literal["quote_found", "page_read", "quote_not_found", "not_read"]
    """quote_found: the quote is in the snapshot of that URL or the text of that upload; page_read: no quote, but it was read in this task; quote_not_found: read, but the quote is not in it; not_read: never read in this task (or outside its source policy)."""
    source_id: str
    """The snapshot (GET /task/{task_id}/sources/{source_id}) the source was matched against."""
    supports: Dict[str, Optional[bool]]
    """quote_found sources: per column the source backs (its fields, else every non-null column), whether the quote holds the value after normalizing; null: not checked (booleans, json, prose)."""


class GroupRowChange(RowChange):
    _input: int
    """The input's 0-based index in the group."""
    input: Dict[str, Any]
    """The run's input."""
    task_id: str
    """The run."""


class GroupRowsPage(TypedDict):
    total: int
    """Merged rows in the group so far."""
    rows: List[GroupRowsPageRowsItem]


class _GroupRowsPageRowsItemRequired(TypedDict):
    _input: int
    """The input's 0-based index in the group."""
    _sources: List[Any]
    """As on the run's output rows."""
    _run: GroupRowsPageRowsItemRun


class GroupRowsPageRowsItem(_GroupRowsPageRowsItemRequired, total=False):
    """One output row of one run: `_input`, the input's fields, the output's columns, `_sources`, `_basis`, `_run`."""
    _basis: Any


class GroupRowsPageRowsItemRun(TypedDict):
    task_id: str
    status: Literal["pending", "running", "completed", "failed", "stopped"]


class GroupRun(TypedDict):
    """One input of a group and the run that works on it, rows or not."""
    task_id: Optional[str]
    input_index: int
    """The input's 0-based index in the group (`_input` of its merged rows)."""
    input: Dict[str, Any]
    """The input it runs on."""
    status: Literal["pending", "running", "completed", "failed", "stopped"]
    error: Optional[GroupRunError]
    """A failed run: the error its turn failed with; null otherwise."""
    credits_used: float
    """Credits the run's task has used (at most 6 decimal places)."""
    updated_at: Optional[str]


class GroupRunError(TypedDict):
    error: str
    message: str


class GroupRunList(TypedDict):
    runs: List[GroupRun]


class KeyInfo(TypedDict):
    key_id: str
    created_at: str
    revoked_at: Optional[str]


class KeyList(TypedDict):
    keys: List[KeyInfo]


class Metaprompt(TypedDict):
    version: str
    spec_schema: Dict[str, Any]
    """The JSON Schema of a task spec (TaskSpecInput)."""
    output_kinds: Dict[str, Any]
    """What the rows of each output kind look like."""
    kinds: List[str]
    tools: List[str]
    default_limits: Dict[str, Any]
    """The limits a spec gets when it names none."""
    reserved_row_fields: Dict[str, Any]
    """Fields every row carries besides its own."""
    metaprompt: str
    """Instructions a caller-side agent can follow to write a good spec."""
    example: TaskSpecInput


class TaskSpecInput(TypedDict, total=False):
    """A task spec: what to research and which outputs to fill."""
    name: str
    type: Literal["research"]
    prompt: str
    """1-100,000 characters after trimming."""
    outputs: List[TaskSpecInputOutputsItem]
    inputs: List[TaskSpecInputInputsItem]
    schedule: Optional[TaskSpecInputSchedule]
    limits: TaskSpecInputLimits
    tools: List[Literal["web_search", "fetch_url", "read_input", "run_code"]]
    citations: Literal["flag", "require_verified", "require_supported"]
    """flag (default): rows are stored and unverified sources marked; require_verified: a row without a verified source, or with a source whose quote was not found or that was never read, is refused back to the agent; require_supported: as require_verified, and a row with an unsupported cell (a value no quote checked for it holds) is refused too."""
    sources: TaskSpecInputSources
    input_columns: List[TaskSpecInputInputColumnsItem]
    """A group's spec only (POST /group): the columns every input has, declared as table columns are."""


class _TaskSpecInputOutputsItemRequired(TypedDict):
    id: str
    """1-64 chars of a-z 0-9 _ -, starting with a letter."""
    kind: Literal["table", "report", "records"]
    """table: typed columns; report: {heading, markdown} sections; records: free objects."""


class TaskSpecInputOutputsItem(_TaskSpecInputOutputsItemRequired, total=False):
    path: str
    description: str
    columns: List[TaskSpecInputOutputsItemColumnsItem]
    key: List[str]
    """Table outputs only: the required columns that identify a row; a row written again with the same key updates that row in place."""
    schema: Dict[str, Any]
    """JSON Schema each row of a records output must satisfy."""


class _TaskSpecInputOutputsItemColumnsItemRequired(TypedDict):
    name: str
    """Column name; may not start with "_"."""


class TaskSpecInputOutputsItemColumnsItem(_TaskSpecInputOutputsItemColumnsItemRequired, total=False):
    type: Literal["string", "number", "integer", "boolean", "date", "url", "json"]
    required: bool
    description: str


class _TaskSpecInputInputsItemRequired(TypedDict):
    upload_id: str


class TaskSpecInputInputsItem(_TaskSpecInputInputsItemRequired, total=False):
    name: str


class _TaskSpecInputScheduleRequired(TypedDict):
    cron: str


class TaskSpecInputSchedule(_TaskSpecInputScheduleRequired, total=False):
    timezone: str


class TaskSpecInputLimits(TypedDict, total=False):
    max_steps: int
    max_turn_seconds: int
    max_credits_per_turn: float
    max_subagents: int
    """Tasks one research call may run as sub-researchers; 0 removes the research tool."""
    max_subagent_steps: int
    """Steps one sub-researcher may take."""


class TaskSpecInputSources(TypedDict, total=False):
    include_domains: List[str]
    """Only these domains (and their subdomains) are searched, fetched and accepted as sources."""
    exclude_domains: List[str]
    """These domains (and their subdomains) are never searched, fetched or accepted as sources."""


class _TaskSpecInputInputColumnsItemRequired(TypedDict):
    name: str
    """Column name; may not start with "_"."""


class TaskSpecInputInputColumnsItem(_TaskSpecInputInputColumnsItemRequired, total=False):
    type: Literal["string", "number", "integer", "boolean", "date", "url", "json"]
    required: bool
    description: str


class _OutputInfoRequired(TypedDict):
    id: str
    kind: Literal["table", "report", "records"]
    """table: typed columns; report: {heading, markdown} sections; records: free objects."""
    path: str
    description: Optional[str]
    row_count: int
    verified_rows: int
    """Rows with at least one source, every one of them verified."""
    unverified_rows: int
    """The other rows: row_count - verified_rows."""
    supported_cells: int
    """Cells a verified source's quote holds."""
    unsupported_cells: int
    """Cells checked against at least one quote that none holds."""
    unchecked_cells: int
    """Non-null cells no quote was checked for."""
    updated_at: Optional[str]


class OutputInfo(_OutputInfoRequired, total=False):
    columns: List[OutputInfoColumnsItem]
    """Tables only: the normalized columns."""


class _OutputInfoColumnsItemRequired(TypedDict):
    name: str
    type: Literal["string", "number", "integer", "boolean", "date", "url", "json"]
    required: bool


class OutputInfoColumnsItem(_OutputInfoColumnsItemRequired, total=False):
    description: str


class OutputList(TypedDict):
    outputs: List[OutputInfo]


class OutputPage(TypedDict):
    total: int
    """Rows in the output, counted before offset and limit."""
    rows: List[Row]
    output: Optional[OutputRef]


class _RowRequired(TypedDict):
    _row: int
    """1-based position in the output."""
    _sources: List[RowSource]


class Row(_RowRequired, total=False):
    """One row: the output's columns (or report/records fields) plus _row, _sources, _support and, when given, _basis."""
    _basis: Dict[str, FieldBasis]
    """Per column: how sure the agent is and why (when it said)."""
    _support: Dict[str, Literal["supported", "unsupported", "unchecked"]]
    """Per non-null column: supported (a verified source's quote holds the value), unsupported (checked, and no quote holds it) or unchecked. Absent on rows written before cells were checked, until a recheck."""


class OutputRef(TypedDict):
    id: str
    kind: Literal["table", "report", "records"]
    """table: typed columns; report: {heading, markdown} sections; records: free objects."""
    path: str


class OwnAccount(TypedDict):
    """The account the API key belongs to."""
    account_id: str
    name: str
    balance: float
    """Credits left (at most 6 decimal places)."""
    credits_used: float
    """Credits used so far (at most 6 decimal places)."""


class RecheckResult(TypedDict):
    """What a recheck did: every row checked again against the stored snapshots, nothing fetched."""
    rows: int
    """Rows checked again, over every output of the task."""
    changed: int
    """Of them, rows whose _sources checks, supports or _support changed (and were stored again)."""


class SourceDetail(TypedDict):
    source_id: str
    url: str
    """The URL asked for (an upload: upload:<upload_id>)."""
    final_url: str
    """The URL that answered, after redirects."""
    upload_id: Optional[str]
    title: Optional[str]
    fetched_at: str
    sha256: str
    """Hex SHA-256 of the stored text (UTF-8)."""
    bytes: int
    """Bytes of the stored text (UTF-8)."""
    text: str
    """The readable text as read: what quotes are checked against."""


class SourceInfo(TypedDict):
    source_id: str
    url: str
    """The URL asked for (an upload: upload:<upload_id>)."""
    final_url: str
    """The URL that answered, after redirects."""
    upload_id: Optional[str]
    title: Optional[str]
    fetched_at: str
    sha256: str
    """Hex SHA-256 of the stored text (UTF-8)."""
    bytes: int
    """Bytes of the stored text (UTF-8)."""


class TaskDetail(Task):
    spec: TaskSpec
    events: List[TaskEvent]
    """The last 100 events, oldest first."""


class TaskState(TypedDict):
    task_id: str
    active: bool
    """True while a turn runs (or waits for a worker)."""
    status: Literal["plan", "execute", "deleted"]
    phase: Optional[Literal["plan", "execute"]]
    activity: Optional[Literal["idle", "planning", "executing", "thinking"]]
    waiting: Optional[Literal["model_rate_limit", "search_rate_limit"]]
    """What the running turn waits on now: model_rate_limit while its model call waits its place under the provider's limits (QUARRY_MODEL_RPM, QUARRY_MODEL_TPM, QUARRY_MODEL_CONCURRENCY, or what the provider's 429s and rate-limit headers said), search_rate_limit likewise for web_search; null otherwise."""
    queued_messages: int
    turn: Optional[TaskStateTurn]
    last_event_id: int
    """Sequence number of the last stored event: a Last-Event-ID to resume from."""
    last_error: Optional[TurnFailure]
    """While no turn runs: the error the last turn failed with (as its `error` event), or null when it completed or was stopped. Null while a turn runs."""
    updated_at: str


class TaskStateTurn(TypedDict):
    id: str
    kind: Literal["plan", "execute", "continue"]
    """plan: a prompt create; execute: a spec create, execute or cron tick; continue: a message."""
    started_at: Optional[str]


class TurnFailure(TypedDict):
    """The error a turn failed with: the members of its `error` event."""
    error: Literal["invalid_request", "unauthorized", "out_of_credits", "origin_not_allowed", "task_not_found", "source_not_found", "group_not_found", "webhook_not_found", "delivery_not_found", "not_found", "method_not_allowed", "request_timeout", "task_executing", "task_in_cron_mode", "task_exists", "webhook_limit_reached", "payload_too_large", "unsupported_media_type", "rate_limited", "internal_error", "bad_gateway", "service_unavailable", "at_capacity", "auth_unavailable", "limit_reached"]
    """Stable snake_case code: branch on it."""
    message: str
    """What went wrong and what to do about it; show it to a person."""
    retryable: bool


class TurnUsage(TypedDict):
    task_id: str
    turn_id: str
    kind: Literal["plan", "execute", "continue"]
    """plan: a prompt create; execute: a spec create, execute or cron tick; continue: a message."""
    status: str
    credits: float
    """Credits the turn used (at most 6 decimal places)."""
    tokens_in: int
    """All input tokens, cached ones included."""
    tokens_in_cached: int
    """Of tokens_in, those read from the provider's prompt cache (priced at QUARRY_PRICE_CACHED_INPUT)."""
    tokens_out: int
    tool_calls: int
    compactions: int
    """How often the turn's conversation was compacted to fit the model's context."""
    rows_written: int
    """Rows the turn wrote."""
    verified_rows: int
    """Of them, rows whose every source was verified."""
    unverified_rows: int
    """Of them, rows with a source that was not verified, or none."""


class UploadResult(TypedDict):
    upload_id: str
    size_bytes: int
    sha256: str
    """Hex SHA-256 of the stored file."""


class UploadTicket(TypedDict):
    upload_id: str
    upload_url: str
    """Signed: needs no API key; expires at expires_at."""
    method: Literal["PUT"]
    headers: Dict[str, str]
    expires_at: str
    max_bytes: int


class Usage(TypedDict):
    turns: List[TurnUsage]


class Webhook(TypedDict):
    webhook_id: str
    url: str
    events: List[Literal["task.turn_completed", "task.turn_failed", "task.turn_stopped", "task.changed", "group.finished"]]
    description: Optional[str]
    created_at: str
    previous_secret_expires_at: Optional[str]


class WebhookDelivery(TypedDict):
    delivery_id: str
    """Sent as the webhook-id header; the same on every attempt."""
    event: Literal["task.turn_completed", "task.turn_failed", "task.turn_stopped", "task.changed", "group.finished"]
    status: Literal["pending", "delivered", "dead"]
    last_status_code: Optional[int]
    last_error: Optional[str]
    next_attempt_at: Optional[str]
    created_at: str
    delivered_at: Optional[str]
    attempts: int
    """Attempts started so far."""


class WebhookDeliveryAttempt(TypedDict):
    at: str
    """When the attempt began."""
    status_code: Optional[int]
    error: Optional[str]
    duration_ms: int
    response_excerpt: Optional[str]


class WebhookDeliveryDetail(TypedDict):
    """A delivery with its body and the log of its attempts."""
    delivery_id: str
    """Sent as the webhook-id header; the same on every attempt."""
    event: Literal["task.turn_completed", "task.turn_failed", "task.turn_stopped", "task.changed", "group.finished"]
    status: Literal["pending", "delivered", "dead"]
    last_status_code: Optional[int]
    last_error: Optional[str]
    next_attempt_at: Optional[str]
    created_at: str
    delivered_at: Optional[str]
    payload: Dict[str, Any]
    """The JSON body every attempt sends (a WebhookPayload)."""
    attempts: List[WebhookDeliveryAttempt]
    """Its attempts, oldest first, each recorded as it ended (the last 50 are kept)."""


class WebhookWithSecret(TypedDict):
    webhook_id: str
    url: str
    events: List[Literal["task.turn_completed", "task.turn_failed", "task.turn_stopped", "task.changed", "group.finished"]]
    description: Optional[str]
    created_at: str
    previous_secret_expires_at: Optional[str]
    secret: str
    """`whsec_` + base64: the signing secret. Shown only here; store it."""


class Workflow(TypedDict):
    version: str
    summary: str
    states: Dict[str, Any]
    """The values of status, phase and activity, and what they mean."""
    transitions: List[WorkflowTransitionsItem]
    routes: List[WorkflowRoutesItem]
    events: WorkflowEvents
    polling: str
    retry: str


_WorkflowTransitionsItemRequired = TypedDict("_WorkflowTransitionsItemRequired", {"from": str, "trigger": str, "to": str, "note": str})
_WorkflowTransitionsItemOptional = TypedDict("_WorkflowTransitionsItemOptional", {}, total=False)


class WorkflowTransitionsItem(_WorkflowTransitionsItemRequired, _WorkflowTransitionsItemOptional):
    pass


class WorkflowRoutesItem(TypedDict):
    method: str
    path: str
    does: str


class WorkflowEvents(TypedDict):
    kinds: List[str]
    wire: str


class GroupEventRun(TypedDict):
    """A run started (status running) or ended."""
    seq: int
    group_id: str
    at: str
    type: Literal["run"]
    task_id: str
    input: int
    """The input's index."""
    status: Literal["pending", "running", "completed", "failed", "stopped"]


class GroupEventGroup(TypedDict):
    """The group after a change to many runs at once."""
    seq: int
    group_id: str
    at: str
    type: Literal["group"]
    reason: Literal["created", "inputs_added", "stopped", "retried", "budget_reached", "out_of_credits", "scheduled_tick"]
    group: Group


class GroupEventDone(TypedDict):
    """No run is pending or running any more."""
    seq: int
    group_id: str
    at: str
    type: Literal["done"]
    group: Group


GroupEvent = Union[GroupEventRun, GroupEventGroup, GroupEventDone]


class HealthResponse(TypedDict):
    ok: Literal[True]


class ReadyResponse(TypedDict):
    ok: bool


class _CreateTaskBodyRequired(TypedDict):
    prompt: str
    """What to research (1-100,000 characters after trimming)."""


class CreateTaskBody(_CreateTaskBodyRequired, total=False):
    task_id: str
    """1-64 chars of A-Z a-z 0-9 _ . : -"""
    plan_only: bool
    """End the first turn after planning; then call execute."""
    wait: Any
    """Accepted for compatibility and ignored: creates never block."""


class _CreateTaskStreamBodyRequired(TypedDict):
    prompt: str
    """What to research (1-100,000 characters after trimming)."""


class CreateTaskStreamBody(_CreateTaskStreamBodyRequired, total=False):
    task_id: str
    """1-64 chars of A-Z a-z 0-9 _ . : -"""
    plan_only: bool
    """End the first turn after planning; then call execute."""
    wait: Any
    """Accepted for compatibility and ignored: creates never block."""


class StartTaskBody(TypedDict, total=False):
    task: TaskSpecInput
    task_id: str
    """1-64 chars of A-Z a-z 0-9 _ . : -"""
    prompt: str
    """Used when `task` is absent: then the request is a prompt, as POST /task."""
    plan_only: bool
    wait: Any
    """Accepted for compatibility and ignored: creates never block."""


class StartTaskStreamBody(TypedDict, total=False):
    task: TaskSpecInput
    task_id: str
    """1-64 chars of A-Z a-z 0-9 _ . : -"""
    prompt: str
    """Used when `task` is absent: then the request is a prompt, as POST /task."""
    plan_only: bool
    wait: Any
    """Accepted for compatibility and ignored: creates never block."""


class UpdateTaskBody(TypedDict, total=False):
    name: Optional[str]
    pinned: bool
    schedule: Optional[UpdateTaskBodySchedule]


class _UpdateTaskBodyScheduleRequired(TypedDict):
    cron: str


class UpdateTaskBodySchedule(_UpdateTaskBodyScheduleRequired, total=False):
    timezone: str


class _ContinueTaskBodyRequired(TypedDict):
    message: str
    """What to change, add or continue."""


class ContinueTaskBody(_ContinueTaskBodyRequired, total=False):
    offline: bool
    """Run this turn offline: web_search is not offered, and fetch_url answers only from the pages this task already fetched (its snapshots); a URL never fetched before is a tool error."""
    wait: Union[bool, int]
    """true or a positive integer: block until the turn ends (at most QUARRY_MAX_BLOCK_SECONDS)."""


class _ContinueTaskStreamBodyRequired(TypedDict):
    message: str
    """What to change, add or continue."""


class ContinueTaskStreamBody(_ContinueTaskStreamBodyRequired, total=False):
    offline: bool
    """Run this turn offline: web_search is not offered, and fetch_url answers only from the pages this task already fetched (its snapshots); a URL never fetched before is a tool error."""
    wait: Union[bool, int]
    """true or a positive integer: block until the turn ends (at most QUARRY_MAX_BLOCK_SECONDS)."""


class ExecuteTaskBody(TypedDict, total=False):
    instruction: str
    """An instruction for this run."""
    offline: bool
    """Run this turn offline: web_search is not offered, and fetch_url answers only from the pages this task already fetched (its snapshots); a URL never fetched before is a tool error."""
    wait: Union[bool, int]
    """true or a positive integer: block until the turn ends (at most QUARRY_MAX_BLOCK_SECONDS)."""


class ExecuteTaskStreamBody(TypedDict, total=False):
    instruction: str
    """An instruction for this run."""
    offline: bool
    """Run this turn offline: web_search is not offered, and fetch_url answers only from the pages this task already fetched (its snapshots); a URL never fetched before is a tool error."""
    wait: Union[bool, int]
    """true or a positive integer: block until the turn ends (at most QUARRY_MAX_BLOCK_SECONDS)."""


class StopTaskBody(TypedDict, total=False):
    clear_queue: bool
    """Also cancel the queued messages."""


class ListSourcesResponse(TypedDict):
    total: int
    sources: List[SourceInfo]


class ListChangesResponse(TypedDict):
    changes: List[RowChange]


class CreateUploadUrlBody(TypedDict):
    filename: str
    content_type: str
    size_bytes: int
    """The file's size; the PUT may send at most this many bytes."""


class _CreateGroupBodyRequired(TypedDict):
    task: TaskSpecInput


class CreateGroupBody(_CreateGroupBodyRequired, total=False):
    name: str
    inputs: List[Dict[str, Any]]
    """At most 1000 per request; more through an uploaded file."""
    input_upload_id: str
    """A finished upload: a CSV file (a header row naming the columns) or JSON Lines (one object per line)."""
    max_parallel: int
    """Runs of this group working at once (default 8)."""
    max_credits: float
    """Once the group's runs have used this much (a scheduled group: in this tick), the runs still pending are stopped."""
    schedule: CreateGroupBodySchedule


class _CreateGroupBodyScheduleRequired(TypedDict):
    cron: str


class CreateGroupBodySchedule(_CreateGroupBodyScheduleRequired, total=False):
    timezone: str


class AddGroupInputsBody(TypedDict, total=False):
    inputs: List[Dict[str, Any]]
    """At most 1000 per request; more through an uploaded file."""
    input_upload_id: str
    """A finished upload: a CSV file (a header row naming the columns) or JSON Lines (one object per line)."""


class ListGroupChangesResponse(TypedDict):
    changes: List[GroupRowChange]


class RetryGroupBody(TypedDict, total=False):
    include: List[Literal["failed", "stopped"]]
    """Which runs to run again: failed (the default), stopped (by POST /group/{id}/stop or max_credits), or both."""
    max_credits: Optional[float]


class _CreateWebhookBodyRequired(TypedDict):
    url: str
    """An http(s) URL that takes POST requests; no user name or password in it."""
    events: List[Literal["task.turn_completed", "task.turn_failed", "task.turn_stopped", "task.changed", "group.finished"]]
    """Which events to send: task.turn_completed, task.turn_failed, task.turn_stopped, task.changed (a turn changed a keyed output), group.finished."""


class CreateWebhookBody(_CreateWebhookBodyRequired, total=False):
    description: str


class ListWebhooksResponse(TypedDict):
    webhooks: List[Webhook]


class ListWebhookDeliveriesResponse(TypedDict):
    deliveries: List[WebhookDelivery]


class AdminCreateAccountBody(TypedDict):
    name: str
    credits: float


class AdminAddCreditsBody(TypedDict):
    amount: float
    """Credits to add; negative takes them (the balance never goes below 0)."""


class AdminRevokeKeyResponse(TypedDict):
    key_id: str
    revoked_at: Optional[str]

