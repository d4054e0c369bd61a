import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  compileRecordSchema,
  MAX_ROWS_PER_CALL,
  MAX_SOURCES_PER_ROW,
  MAX_STRING_LENGTH,
  serializeRow,
  validateRows,
  type RowError,
  type RowValidation,
  type ValidRow,
} from '../../src/domain/row-validation.js';
import type { ColumnType, OutputDecl } from '../../src/contract/index.js';

const SOURCE = [{ url: 'https://example.com/a' }];

function table(columns: { name: string; type?: ColumnType; required?: boolean }[]): OutputDecl {
  return {
    id: 'makers',
    kind: 'table',
    path: 'outputs/makers.csv',
    columns: columns.map((c) => ({ name: c.name, type: c.type ?? 'string', required: c.required ?? false })),
  };
}

const makers = table([
  { name: 'company', required: true },
  { name: 'country' },
  { name: 'capacity_gwh', type: 'number' },
  { name: 'source_url', type: 'url' },
]);
const report: OutputDecl = { id: 'summary', kind: 'report', path: 'outputs/summary.md' };
const records: OutputDecl = { id: 'facts', kind: 'records', path: 'outputs/facts.jsonl' };

function accepted(result: RowValidation): ValidRow[] {
  if (!result.ok) assert.fail(`expected the rows to be accepted, got ${JSON.stringify(result.errors)}`);
  return result.rows;
}

function rejected(result: RowValidation): RowError[] {
  if (result.ok) assert.fail('expected the rows to be rejected');
  return result.errors;
}

/** The stored value of a single-column table row holding `value`. */
function convert(type: ColumnType, value: unknown): unknown {
  return accepted(validateRows(table([{ name: 'v', type }]), [{ v: value }], SOURCE))[0]!.values.v;
}

/** The error for a single-column table row holding `value`. */
function conversionError(type: ColumnType, value: unknown): RowError {
  const errors = rejected(validateRows(table([{ name: 'v', type }]), [{ v: value }], SOURCE));
  assert.equal(errors.length, 1);
  return errors[0]!;
}

describe('compileRecordSchema', () => {
  it('compiles a schema into a validator with short readable errors', () => {
    const { validate, error } = compileRecordSchema({
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string' }, price: { type: 'number' }, status: { enum: ['open', 'closed'] } },
      additionalProperties: false,
    });
    assert.equal(error, undefined);
    assert.equal(validate!({ name: 'x', price: 3 }), null);
    assert.equal(validate!({ name: 'x', price: 'cheap' }), '/price must be number');
    assert.equal(validate!({}), "must have required property 'name'");
    assert.equal(validate!({ name: 'x', extra: 1 }), 'must NOT have additional properties ("extra")');
    assert.equal(validate!({ name: 'x', status: 'gone' }), '/status must be equal to one of the allowed values: ["open","closed"]');
  });

  it('checks formats', () => {
    const { validate } = compileRecordSchema({ properties: { mail: { type: 'string', format: 'email' } } });
    assert.equal(validate!({ mail: 'a@example.com' }), null);
    assert.equal(validate!({ mail: 'nope' }), '/mail must match format "email"');
  });

  it('reports schemas that do not compile', () => {
    assert.match(compileRecordSchema({ type: 'nope' }).error!, /schema is invalid/);
    assert.match(compileRecordSchema({ $async: true, type: 'object' }).error!, /\$async/);
  });

  it('returns the cached result for the same schema text', () => {
    assert.equal(compileRecordSchema({ type: 'object', minProperties: 7 }), compileRecordSchema({ type: 'object', minProperties: 7 }));
  });

  it('lets two schemas share an $id, including a meta-schema id', () => {
    const first = compileRecordSchema({ $id: 'https://example.com/s', required: ['a'] });
    const second = compileRecordSchema({ $id: 'https://example.com/s', required: ['b'] });
    assert.equal(first.validate!({ b: 1 }), "must have required property 'a'");
    assert.equal(second.validate!({ a: 1 }), "must have required property 'b'");
    assert.equal(compileRecordSchema({ $id: 'http://json-schema.org/draft-07/schema#', type: 'object' }).error, undefined);
    assert.equal(compileRecordSchema({ type: 'object', maxProperties: 1 }).validate!({ a: 1, b: 2 }), 'must NOT have more than 1 properties');
  });

  it('resolves references within the schema', () => {
    const { validate } = compileRecordSchema({
      definitions: { amount: { type: 'number' } },
      properties: { total: { $ref: '#/definitions/amount' }, child: { $ref: '#' } },
    });
    assert.equal(validate!({ child: { total: 'x' } }), '/child/total must be number');
  });
});

describe('validateRows: table columns', () => {
  it('stores every declared column in declared order, absent optional columns as null', () => {
    const rows = accepted(validateRows(makers, [{ source_url: 'https://a.example/x', company: 'Acme' }, { company: 'Beta', country: null }], SOURCE));
    assert.deepEqual(rows.map((r) => Object.keys(r.values)), [
      ['company', 'country', 'capacity_gwh', 'source_url'],
      ['company', 'country', 'capacity_gwh', 'source_url'],
    ]);
    assert.deepEqual(rows[0]!.values, { company: 'Acme', country: null, capacity_gwh: null, source_url: 'https://a.example/x' });
    assert.deepEqual(rows[1]!.values, { company: 'Beta', country: null, capacity_gwh: null, source_url: null });
  });

  it('requires required columns to be present and non-null', () => {
    const errors = rejected(validateRows(makers, [{ country: 'DE' }, { company: null }], SOURCE));
    assert.deepEqual(errors, [
      { index: 0, field: 'company', message: 'is required' },
      { index: 1, field: 'company', message: 'is required' },
    ]);
  });

  it('rejects undeclared columns and names them', () => {
    const errors = rejected(validateRows(makers, [{ company: 'Acme', ceo: 'X' }], SOURCE));
    assert.equal(errors.length, 1);
    assert.equal(errors[0]!.field, 'ceo');
    assert.match(errors[0]!.message, /is not a declared column \(declared columns: company, country, capacity_gwh, source_url\)/);
  });

  it('does not take inherited properties for columns', () => {
    const output = table([{ name: 'constructor', required: true }]);
    assert.deepEqual(rejected(validateRows(output, [{}], SOURCE)), [{ index: 0, field: 'constructor', message: 'is required' }]);
  });

  it('rejects reserved keys other than _sources', () => {
    const errors = rejected(validateRows(makers, [{ company: 'Acme', _row: 4, _note: 'x' }], SOURCE));
    assert.deepEqual(errors.map((e) => e.field), ['_row', '_note']);
    assert.match(errors[0]!.message, /reserved/);
  });

  it('rejects rows that are not objects', () => {
    const errors = rejected(validateRows(makers, [['Acme'], null, 'Acme'], SOURCE));
    assert.deepEqual(errors, [
      { index: 0, message: 'must be an object, got an array' },
      { index: 1, message: 'must be an object, got null' },
      { index: 2, message: 'must be an object, got "Acme"' },
    ]);
  });
});

describe('validateRows: column types', () => {
  it('string: keeps strings, converts numbers and booleans, rejects the rest', () => {
    assert.equal(convert('string', 'abc'), 'abc');
    assert.equal(convert('string', ''), '');
    assert.equal(convert('string', 12.5), '12.5');
    assert.equal(convert('string', false), 'false');
    assert.equal(conversionError('string', { a: 1 }).message, 'must be a string, got an object');
    assert.equal(conversionError('string', [1]).message, 'must be a string, got an array');
  });

  it('caps strings at the maximum length', () => {
    assert.equal(convert('string', 'x'.repeat(MAX_STRING_LENGTH)), 'x'.repeat(MAX_STRING_LENGTH));
    assert.equal(
      conversionError('string', 'x'.repeat(MAX_STRING_LENGTH + 1)).message,
      `must be at most ${MAX_STRING_LENGTH} characters, got ${MAX_STRING_LENGTH + 1}`,
    );
  });

  it('number: keeps finite numbers, converts numeric strings', () => {
    assert.equal(convert('number', 3.25), 3.25);
    assert.equal(convert('number', -7), -7);
    assert.equal(convert('number', '42'), 42);
    assert.equal(convert('number', ' -1.5e3 '), -1500);
    assert.equal(convert('number', '.5'), 0.5);
    for (const bad of ['abc', '', '1,5', '0x10', 'Infinity', '1e999', true, [1], Number.NaN]) {
      assert.match(conversionError('number', bad).message, /^must be a number, got /, String(bad));
    }
    assert.equal(conversionError('number', 'abc').message, 'must be a number, got "abc"');
  });

  it('integer: keeps safe integers, converts integer strings', () => {
    assert.equal(convert('integer', 12), 12);
    assert.equal(convert('integer', '-12'), -12);
    assert.equal(convert('integer', '+7'), 7);
    for (const bad of [1.5, '1.5', '12a', '', true, 2 ** 53, '9007199254740993']) {
      assert.match(conversionError('integer', bad).message, /^must be an integer between/, String(bad));
    }
  });

  it('boolean: keeps booleans, converts "true" and "false"', () => {
    assert.equal(convert('boolean', true), true);
    assert.equal(convert('boolean', false), false);
    assert.equal(convert('boolean', 'true'), true);
    assert.equal(convert('boolean', 'False'), false);
    for (const bad of ['yes', 1, 0, '']) {
      assert.match(conversionError('boolean', bad).message, /^must be a boolean/, String(bad));
    }
  });

  it('date: accepts ISO 8601 dates and date-times as given', () => {
    for (const good of ['2024-05-31', '2024-02-29', '2024-05-31T14:00', '2024-05-31T14:00:59Z', '2024-05-31T14:00:00.123+02:00', '2024-05-31T14:00:00-0500']) {
      assert.equal(convert('date', good), good);
    }
    for (const bad of ['2023-02-29', '2024-13-01', '2024-00-10', '2024-04-31', '31/05/2024', '2024-5-31', '2024-05-31 14:00', '2024-05-31T25:00', '2024-05-31T14:00+24:00', 20240531]) {
      assert.match(conversionError('date', bad).message, /^must be an ISO 8601 date/, String(bad));
    }
  });

  it('url: accepts absolute http and https URLs', () => {
    assert.equal(convert('url', 'http://example.com'), 'http://example.com');
    assert.equal(convert('url', 'https://example.com/a?b=c#d'), 'https://example.com/a?b=c#d');
    for (const bad of ['example.com', '/relative', 'ftp://example.com/f', 'javascript:alert(1)', 42]) {
      assert.match(conversionError('url', bad).message, /^must be an absolute http\(s\) URL/, String(bad));
    }
  });

  it('json: takes any JSON value', () => {
    assert.deepEqual(convert('json', { a: [1, 'b', null] }), { a: [1, 'b', null] });
    assert.deepEqual(convert('json', [1, 2]), [1, 2]);
    assert.equal(convert('json', 'text'), 'text');
    assert.equal(convert('json', 0), 0);
  });
});

describe('validateRows: sources', () => {
  it('applies call-level sources to rows without their own', () => {
    const rows = accepted(
      validateRows(makers, [{ company: 'A' }, { company: 'B', _sources: [{ upload_id: 'upl_1' }] }], [{ url: 'https://a.example/', title: 'A' }]),
    );
    assert.deepEqual(rows[0]!.sources, [{ url: 'https://a.example/', title: 'A' }]);
    assert.deepEqual(rows[1]!.sources, [{ upload_id: 'upl_1' }]);
    assert.equal('_sources' in rows[1]!.values, false);
  });

  it('accepts unsourced rows and counts them', () => {
    const result = validateRows(makers, [{ company: 'A' }, { company: 'B', _sources: SOURCE }, { company: 'C', _sources: [] }]);
    assert.equal(result.ok, true);
    assert.equal(result.ok && result.unsourced, 2);
    assert.deepEqual(accepted(result)[0]!.sources, []);
    assert.equal(accepted(validateRows(makers, [{ company: 'A' }], [])).length, 1);
  });

  it('keeps known source keys in a fixed order and drops unknown ones', () => {
    const rows = accepted(
      validateRows(makers, [{ company: 'A' }], [
        { fields: ['company'], quote: 'q', extra: 1, title: 't', url: 'https://a.example/', upload_id: null },
      ]),
    );
    assert.deepEqual(Object.entries(rows[0]!.sources[0]!), [['url', 'https://a.example/'], ['title', 't'], ['quote', 'q'], ['fields', ['company']]]);
  });

  it('rejects malformed sources with their paths', () => {
    const errors = rejected(
      validateRows(makers, [
        {
          company: 'A',
          _sources: [
            'https://a.example/',
            {},
            { url: 'https://a.example/', upload_id: 'upl_1' },
            { url: 'a.example' },
            { upload_id: '' },
            { url: 'https://a.example/', title: 'x'.repeat(501), quote: 'x'.repeat(2001) },
            { url: 'https://a.example/', title: 5 },
            { url: 'https://a.example/', fields: 'company' },
            { url: 'https://a.example/', fields: ['company', 'ceo'] },
          ],
        },
      ]),
    );
    assert.deepEqual(
      errors.map((e) => [e.index, e.field, e.message]),
      [
        [0, '_sources[0]', 'must be an object with "url" or "upload_id", got "https://a.example/"'],
        [0, '_sources[1]', 'must have exactly one of "url" or "upload_id"'],
        [0, '_sources[2]', 'must have exactly one of "url" or "upload_id"'],
        [0, '_sources[3].url', 'must be an absolute http(s) URL, got "a.example"'],
        [0, '_sources[4].upload_id', 'must be a non-empty string of at most 64 characters, got ""'],
        [0, '_sources[5].title', 'must be at most 500 characters, got 501'],
        [0, '_sources[5].quote', 'must be at most 2000 characters, got 2001'],
        [0, '_sources[6].title', 'must be a string, got 5'],
        [0, '_sources[7].fields', 'must be an array of column names, got "company"'],
        [0, '_sources[8].fields', 'names undeclared columns: "ceo"'],
      ],
    );
  });

  it('rejects a row _sources that is not an array, and too many sources', () => {
    const many = Array.from({ length: MAX_SOURCES_PER_ROW + 1 }, (_, i) => ({ url: `https://a.example/${i}` }));
    const errors = rejected(validateRows(makers, [{ company: 'A', _sources: 'https://a.example/' }, { company: 'B', _sources: many }]));
    assert.deepEqual(errors, [
      { index: 0, field: '_sources', message: 'must be an array of sources, got "https://a.example/"' },
      { index: 1, field: '_sources', message: `has ${MAX_SOURCES_PER_ROW + 1} sources; a row may cite at most ${MAX_SOURCES_PER_ROW}` },
    ]);
  });

  it('reports call-level source problems without a row index', () => {
    const errors = rejected(validateRows(makers, [{ company: 'A', _sources: SOURCE }], [{ url: 'https://a.example/', fields: ['ceo'] }]));
    assert.deepEqual(errors, [{ index: null, field: 'sources[0].fields', message: 'names undeclared columns: "ceo"' }]);
    assert.deepEqual(rejected(validateRows(makers, [{ company: 'A' }], { url: 'https://a.example/' })), [
      { index: null, field: 'sources', message: 'must be an array of sources, got an object' },
    ]);
  });

  it('allows any field names outside tables', () => {
    const rows = accepted(validateRows(records, [{ a: 1 }], [{ url: 'https://a.example/', fields: ['a', 'b'] }]));
    assert.deepEqual(rows[0]!.sources[0]!.fields, ['a', 'b']);
  });
});

describe('validateRows: report and records', () => {
  it('report rows are {heading, markdown}', () => {
    const rows = accepted(validateRows(report, [{ markdown: 'Body', heading: 'Intro' }], SOURCE));
    assert.deepEqual(rows[0]!.values, { heading: 'Intro', markdown: 'Body' });
    assert.deepEqual(Object.keys(rows[0]!.values), ['heading', 'markdown']);
  });

  it('report rows need both strings and nothing else', () => {
    const errors = rejected(validateRows(report, [{ heading: 'Intro' }, { heading: 1, markdown: 'x', level: 2 }], SOURCE));
    assert.deepEqual(errors, [
      { index: 0, field: 'markdown', message: 'is required and must be a string, got nothing' },
      { index: 1, field: 'level', message: 'is not allowed: a report row has only "heading" and "markdown"' },
      { index: 1, field: 'heading', message: 'is required and must be a string, got 1' },
    ]);
  });

  it('records take any object without a schema', () => {
    const rows = accepted(validateRows(records, [{ name: 'x', nested: { a: [1] } }, {}], SOURCE));
    assert.deepEqual(rows.map((r) => r.values), [{ name: 'x', nested: { a: [1] } }, {}]);
  });

  it('records are checked against the output schema, without their _sources', () => {
    const withSchema: OutputDecl = {
      ...records,
      schema: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, price: { type: 'number' } }, additionalProperties: false },
    };
    const rows = accepted(validateRows(withSchema, [{ name: 'x', _sources: SOURCE }]));
    assert.deepEqual(rows[0]!.values, { name: 'x' });
    const errors = rejected(validateRows(withSchema, [{ name: 'x', price: 'cheap' }, { price: 1 }], SOURCE));
    assert.deepEqual(errors, [
      { index: 0, message: "does not match the output's schema: /price must be number" },
      { index: 1, message: "does not match the output's schema: must have required property 'name'" },
    ]);
  });

  it('records output with a schema that does not compile rejects the call once', () => {
    const errors = rejected(validateRows({ ...records, schema: { type: 'nope' } }, [{ a: 1 }, { b: 2 }], SOURCE));
    assert.equal(errors.length, 1);
    assert.equal(errors[0]!.index, null);
    assert.match(errors[0]!.message, /^the schema of output "facts" does not compile: /);
  });

  it('records treat a literal __proto__ key as reserved, and constructor as data', () => {
    const row = JSON.parse('{"__proto__": {"polluted": true}, "constructor": 1}') as unknown;
    assert.deepEqual(rejected(validateRows(records, [row], SOURCE)).map((e) => e.field), ['__proto__']);
    const [valid] = accepted(validateRows(records, [{ constructor: 1 }], SOURCE));
    assert.equal(serializeRow(1, valid!), '{"_row":1,"constructor":1,"_sources":[{"url":"https://example.com/a"}]}');
  });
});

describe('validateRows: the call', () => {
  it('rows must be a non-empty array of at most the maximum', () => {
    assert.deepEqual(rejected(validateRows(makers, { company: 'A' })), [{ index: null, field: 'rows', message: 'must be an array of row objects, got an object' }]);
    assert.deepEqual(rejected(validateRows(makers, [])), [{ index: null, field: 'rows', message: 'must not be empty: send at least one row' }]);
    const tooMany = Array.from({ length: MAX_ROWS_PER_CALL + 1 }, () => ({ company: 'A' }));
    assert.match(rejected(validateRows(makers, tooMany))[0]!.message, /more than 5000 per call/);
    assert.equal(accepted(validateRows(makers, tooMany.slice(1))).length, MAX_ROWS_PER_CALL);
  });

  it('is all-or-nothing: one bad row rejects every row', () => {
    const result = validateRows(makers, [{ company: 'A' }, { company: 'B', capacity_gwh: 'lots' }, { company: 'C' }], SOURCE);
    assert.deepEqual(rejected(result), [{ index: 1, field: 'capacity_gwh', message: 'must be a number, got "lots"' }]);
  });

  it('lists every problem of a row', () => {
    const errors = rejected(validateRows(makers, [{ capacity_gwh: 'x', source_url: 'y', ceo: 'z' }], SOURCE));
    assert.deepEqual(errors.map((e) => e.field), ['ceo', 'company', 'capacity_gwh', 'source_url']);
  });

  it('lists at most 20 errors, then a count of the rest', () => {
    const rows = Array.from({ length: 30 }, () => ({ capacity_gwh: 'x' }));
    const errors = rejected(validateRows(makers, rows, SOURCE));
    assert.equal(errors.length, 21);
    assert.deepEqual(errors[0], { index: 0, field: 'company', message: 'is required' });
    assert.deepEqual(errors[19], { index: 9, field: 'capacity_gwh', message: 'must be a number, got "x"' });
    assert.deepEqual(errors[20], { index: null, message: '…and 40 more errors not listed' });
  });
});

describe('serializeRow', () => {
  it('writes _row first, the values in order, _sources last', () => {
    const [row] = accepted(validateRows(makers, [{ capacity_gwh: '1.5', company: 'Acme' }], [{ url: 'https://a.example/', quote: 'q' }]));
    const text = serializeRow(7, row!);
    assert.equal(
      text,
      '{"_row":7,"company":"Acme","country":null,"capacity_gwh":1.5,"source_url":null,"_sources":[{"url":"https://a.example/","quote":"q"}]}',
    );
    assert.deepEqual(JSON.parse(text), { _row: 7, company: 'Acme', country: null, capacity_gwh: 1.5, source_url: null, _sources: [{ url: 'https://a.example/', quote: 'q' }] });
  });

  it('keeps _row first even before integer-like column names', () => {
    const [row] = accepted(validateRows(table([{ name: 'name' }, { name: '2024', type: 'number' }]), [{ name: 'x', 2024: 3 }]));
    assert.equal(serializeRow(1, row!), '{"_row":1,"2024":3,"name":"x","_sources":[]}');
  });

  it('writes a report row', () => {
    const [row] = accepted(validateRows(report, [{ heading: 'H', markdown: 'line\n"quoted"' }], [{ upload_id: 'upl_1' }]));
    assert.equal(serializeRow(2, row!), '{"_row":2,"heading":"H","markdown":"line\\n\\"quoted\\"","_sources":[{"upload_id":"upl_1"}]}');
  });
});
