/**
 * The value normalizer (src/domain/value-match.ts, decisions §17.1 and §17.3), table by table:
 * every format it claims, written the ways pages write it, with the near misses that must not
 * match.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { answersAgree, normalizeValueText, valueInQuote } from '../../src/domain/value-match.js';
import type { ColumnType } from '../../src/contract/index.js';

type Case = [value: unknown, quote: string, expected: boolean | null];

function table(type: ColumnType, cases: readonly Case[]): void {
  for (const [value, quote, expected] of cases) {
    it(`${type} ${JSON.stringify(value)} in ${JSON.stringify(quote)} → ${String(expected)}`, () => {
      assert.equal(valueInQuote(value, quote, type), expected);
    });
  }
}

describe('text values', () => {
  table('string', [
    ['Ørsted', 'The operator Ørsted said on Monday', true],
    ['Orsted', 'The operator Ørsted said on Monday', true],
    ['Ørsted', 'the operator orsted said', true],
    ['Zürich', 'offices in Zurich and Geneva', true],
    ['Zurich', 'offices in ZÜRICH and Geneva', true],
    ['São Paulo', 'the city of Sao  Paulo', true],
    ['Łódź', 'a plant near Lodz', true],
    ['Nestlé', 'NESTLE S.A. reported', true],
    ['Straße', 'on the Hauptstrasse, the strasse', true],
    ['Société Générale', 'Societe\u00a0Generale, the bank', true],
    ['Málaga', 'the port of Malaga', true],
    ['Québec', 'Hydro-Québec', true],
    ['Encyclopædia', 'the Encyclopaedia Britannica', true],
    ['Œuvre', 'his oeuvre', true],
    ['İstanbul', 'from istanbul to ankara', true],
    ['ﬁnance', 'the finance team', true],
    ['company’s plan', "the company's plan was", true],
    ["company's plan", 'the company’s plan was', true],
    ['“Net Zero” plan', 'its "net zero" plan', true],
    ['2020–2030', 'over 2020-2030 the grid', true],
    ['2020-2030', 'over 2020\u20142030 the grid', true],
    ['north-east', 'the north\u2011east region', true],
    ['New   York', 'in New\nYork City', true],
    ['new york', 'in NEW YORK', true],
    ['  padded value ', 'a padded value here', true],
    ['Acme Corp.', 'Acme Corp. announced', true],
    ['soft\u00adware', 'the software vendor', true],
    ['zero\u200bwidth', 'a zerowidth space', true],
    ['https://example.com/a', 'see https://example.com/a for', true],
    ['ten', 'it happens often', false],
    ['cat', 'concatenate the strings', false],
    ['Paris', 'Parisian cafés', false],
    ['Orsted', 'Ørstedt', false],
    ['Siemens Energy', 'Siemens and energy', false],
    ['Zürich', 'Geneva and Basel', false],
    ['Model 3', 'sold 3 cars', false],
    ['Model 3', 'the Model 3 sold well', true],
    ['', 'anything', null],
    ['   ', 'anything', null],
  ]);
  table('url', [
    ['https://example.com/report', 'published at https://example.com/report.', true],
    ['https://example.com/report', 'published at https://example.com/reports', false],
  ]);
});

/** One number written the ways pages write it: [value, written forms that hold it, forms that do not]. */
const NUMBER_FORMS: [number, string[], string[]][] = [
  [1234567, ['1234567', '1,234,567', '1.234.567', '1 234 567', '1\u00a0234\u00a0567', '1\u202f234\u202f567', '1\u2009234\u2009567', "1'234'567", '1’234’567', '+1,234,567', '1.234567 million', '1,234567 millions'], ['1,234,568', '12,345,67', '-1,234,567', '1.2 million', '123456']],
  [1234567.89, ['1,234,567.89', '1.234.567,89', '1 234 567,89', "1'234'567.89", '1\u202f234\u202f567,89'], ['1,234,567.8', '1.234.567.89', '1234567']],
  [1200000, ['1.2 million', '1,2 million', '1.2 Million', '1.2m', '1.2 m', '1.2M', '1.2mn', '1.2 mln', '1,200,000', '1.200.000', '1 200 000', '1200 thousand', '1,200k', '$1.2m', '€1,2 million', '0.0012 billion', '1.20 million'], ['1.2 billion', '1.3 million', '12 million', '120,000']],
  [4500000000, ['4.5 billion', '4.5bn', '$4.5bn', '4,5 billion', '4.5 bn', '4,500,000,000', '4.5 billions', '4500 million', '0.0045 trillion', '4.5 BN'], ['4.5 million', '45 billion', '4.6bn']],
  [2e12, ['2 trillion', '2tn', '2,000 billion'], ['2 billion']],
  [45, ['45', '45 GWh', '45GWh', '45 MW', '45.0', '45,0', '+45', '(45)', '45%', '45 %', '45 percent', '45 per cent', 'USD 45', '€45', '45th'], ['450', '4.5', '-45', '145', '45.5', '4,5']],
  [0.45, ['45%', '45 %', '45 percent', '0.45', '0,45'], ['45', '4.5%']],
  [-5, ['-5', '−5', '\u20125', '-5%', '–5', '-5.0'], ['5', '+5', '-50', 'covid-5']],
  [5, ['5', '+5', '5.00', 'covid-5', 'route-5'], ['-5', '−5', '55', '0.5', 'v5', 'a5']],
  [19, ['COVID-19', 'covid 19', 'aged 19.'], ['2019', '190', '1.9']],
  [3.14159, ['3.14159', '3,14159'], ['3.1416', '314159']],
  [0.5, ['0.5', '0,5', '0.50', '50%'], ['.5', '5', '0.05']],
  [1234, ['1,234', '1.234', '1 234', "1'234", '1234', '1.234k'], ['12,34', '1,2345']],
  [1.234, ['1,234', '1.234'], ['1234.5']],
  [2020, ['in 2020 500 people', '2020', 'the 2020-2021 season'], ['20,20']],
  [500, ['in 2020 500 people'], ['5000']],
  [2021, ['the 2020-2021 season', '2020–2021', '2020/2021'], ['-2021']],
  [0, ['0', '0.0', '0%', '-0'], ['10', '0.01']],
  [1e3, ['1k', '1 thousand', '1,000', '1.000', '1 000', '1K'], ['1 km', '10k']],
  [72.5, ['72.5 %', '72,5%', 'rose to 72.5.'], ['72', '725']],
  [100000, ['100k', '100,000', '100 000', '100.000', '0.1 million', '0,1 million'], ['1,000,000', '10,000']],
];

describe('number values', () => {
  const cases: Case[] = [];
  for (const [value, yes, no] of NUMBER_FORMS) {
    for (const written of yes) cases.push([value, `The figure was ${written} last year.`, true]);
    for (const written of no) cases.push([value, `The figure was ${written} last year.`, false]);
  }
  table('number', cases);
  table('integer', [
    [1200000, 'around 1.2 million homes', true],
    [1200000, 'around 1.25 million homes', false],
    [42, 'The answer is forty-two (42).', true],
    [42, 'The answer is forty-two.', false],
  ]);
  table('number', [
    ['1,234.5', 'a total of 1234.5 units', true],
    ['1.2 million', 'some 1,200,000 people', true],
    ['45%', 'a 45 percent share', true],
    ['€4.5bn', '4,500 million euros', true],
    ['n/a', 'n/a in this report', true],
    ['n/a', 'not given', false],
    [Number.NaN, '45', null],
    [Number.POSITIVE_INFINITY, 'infinity', null],
  ]);
  table('string', [
    ['$4.5bn', 'revenue of 4,500,000,000 dollars', true],
    ['1.2 million', '1,200,000 residents', true],
    ['45%', 'a 45 per cent share', true],
    ['-3,5 %', 'a decline of −3.5%', true],
    ['1.2 million', '1.3 million residents', false],
    ['45 GWh', 'produced 45 GWh', true],
    ['45 GWh', 'produced 45 gigawatt hours', false],
  ]);
});

/** One date written the ways pages write it: [ISO value, forms that hold it, forms that do not]. */
const DATE_FORMS: [string, string[], string[]][] = [
  ['2026-03-12', ['2026-03-12', '2026/03/12', '2026-3-12', '12 March 2026', '12 march 2026', '12 Mar 2026', '12 Mar. 2026', '12th March 2026', '12th March 2026', 'March 12, 2026', 'March 12 2026', 'Mar 12, 2026', 'Mar. 12, 2026', 'March 12th, 2026', 'MARCH 12, 2026', '12 mars 2026', '12. März 2026', '12. Maerz 2026', '12 de marzo de 2026', '12 marzo 2026', '12 de março de 2026', '12 maart 2026', '12.03.2026', '12.3.2026', '12\u00a0March\u00a02026', '2026–03–12'], ['12/03/2026', '03/12/2026', '3/12/2026', '12-03-2026', '13 March 2026', '12 March 2025', 'March 2026', '12 April 2026', '2026-03-13', '2026-12-03']],
  ['2026-03-25', ['25/03/2026', '03/25/2026', '3/25/2026', '25-03-2026', '25.03.2026', '25 March 2026', 'March 25, 2026'], ['25/04/2026', '2026-03-24']],
  ['2026-12-12', ['12/12/2026', '12.12.2026', '12 December 2026', '12 Dezember 2026', '12 décembre 2026', 'Dec 12, 2026', '12 dicembre 2026'], ['12/11/2026']],
  ['2024-02-29', ['29 February 2024', '2024-02-29', 'Feb 29, 2024', '29/02/2024', '29 février 2024'], ['2023-02-29', '28 February 2024']],
  ['2026-01-01', ['1 January 2026', '1st January 2026', '1er janvier 2026', 'January 1, 2026', '1. Januar 2026', '1 Jänner 2026', '2026-01-01', '1 enero 2026', '1 gennaio 2026', '1 januari 2026'], ['01/01/2025', '11 January 2026']],
  ['2026-08-15', ['15 août 2026', '15 agosto 2026', '15 augustus 2026', 'Aug. 15, 2026', '15 Aug 2026', '08/15/2026', '15/08/2026'], ['15 July 2026']],
  ['2026-09-07', ['7 Sept 2026', '7 September 2026', 'Sep 7, 2026', '7 settembre 2026', '7 setembro 2026', '7 septiembre 2026'], ['07/09/2026', '09/07/2026', '7 October 2026']],
];

describe('date values', () => {
  const cases: Case[] = [];
  for (const [value, yes, no] of DATE_FORMS) {
    for (const written of yes) cases.push([value, `It was signed on ${written}, in public.`, true]);
    for (const written of no) cases.push([value, `It was signed on ${written}, in public.`, false]);
  }
  table('date', cases);
  table('date', [
    ['2026-03-12T10:00:00Z', 'signed on 12 March 2026', true],
    ['12 March 2026', 'signed on 2026-03-12', true],
    ['March 12, 2026', 'signed on 12.03.2026', true],
    ['2026-02-30', 'on 2026-02-30', true],
    ['2026-02-30', 'on 1 March 2026', false],
    ['Q1 2026', 'results for Q1 2026', true],
    ['Q1 2026', 'results for Q2 2026', false],
  ]);
  table('string', [
    ['12 March 2026', 'on March 12, 2026', true],
    ['2026-03-12', 'on 12 mars 2026', true],
    ['2026-03-12', 'on 12/03/2026', false],
  ]);
});

describe('values not checked', () => {
  table('boolean', [[true, 'yes, true', null], [false, 'false', null], ['true', 'true', null]]);
  table('json', [[{ a: 1 }, '{"a":1}', null], [[1, 2], '1, 2', null], ['text', 'text', null]]);
  table('string', [[null, 'null', null], [{ a: 1 }, 'a 1', null], [['x'], 'x', null]]);
});

describe('normalizeValueText', () => {
  for (const [text, normal] of [
    ['  Ørsted’s “Big”   Plan — 2030 ', 'orsted\'s "big" plan - 2030'],
    ['Crème\u00a0Brûlée', 'creme brulee'],
    ['ÄÖÜäöüß', 'aouaouss'],
    ['already plain', 'already plain'],
    ['line\r\nbreak\ttab', 'line break tab'],
  ] as const) {
    it(`${JSON.stringify(text)} → ${JSON.stringify(normal)}`, () => assert.equal(normalizeValueText(text), normal));
  }
});

type AnswerCase = [expected: string, given: string, type: 'text' | 'number' | 'date' | undefined, agree: boolean];

describe('answersAgree', () => {
  const cases: AnswerCase[] = [
    ['Paris', 'Paris', undefined, true],
    ['Paris', 'paris.', undefined, true],
    ['Paris', 'Paris, France', undefined, true],
    ['Paris', 'The answer is Paris.', 'text', true],
    ['Paris', 'Parisian', undefined, false],
    ['Paris', 'Lyon', 'text', false],
    ['Zürich', 'Zurich', undefined, true],
    ['“Hamlet”', "'Hamlet'", undefined, true],
    ['Jean-Luc Godard', 'Jean–Luc Godard', undefined, true],
    ['1200000', '1.2 million', undefined, true],
    ['1200000', 'about 1.21 million', 'number', true],
    ['1200000', '1.22 million', 'number', false],
    ['1,200,000', '1200000', undefined, true],
    ['100', '101', 'number', true],
    ['100', '99', 'number', true],
    ['100', '98.9', 'number', false],
    ['100', '102', 'number', false],
    ['0', '0', 'number', true],
    ['0', '0.001', 'number', false],
    ['-5', '−5', undefined, true],
    ['-5', '5', 'number', false],
    ['45%', '45 percent', undefined, true],
    ['45%', '0.45', 'number', true],
    ['3.5', '3,5', undefined, true],
    ['$4.5bn', '4.5 billion dollars', undefined, true],
    ['4.5 billion', '4,500 million', 'number', true],
    ['42', 'forty-two', 'number', false],
    ['42', 'The answer is 42.', 'number', true],
    ['2026-03-12', 'March 12, 2026', undefined, true],
    ['2026-03-12', '12 March 2026', 'date', true],
    ['12 March 2026', '2026-03-12', 'date', true],
    ['2026-03-12', '12/03/2026', 'date', false],
    ['2026-03-12', '13 March 2026', 'date', false],
    ['1969', '1969', undefined, true],
    ['1969', '1970', undefined, false],
    ['', 'anything', undefined, false],
    ['Paris', '', undefined, false],
    ['Albert Einstein', 'Einstein', 'text', false],
    ['Einstein', 'Albert Einstein', 'text', true],
  ];
  for (const [expected, given, type, agree] of cases) {
    it(`${JSON.stringify(expected)} vs ${JSON.stringify(given)} (${type ?? 'any'}) → ${String(agree)}`, () => {
      assert.equal(answersAgree(expected, given, type), agree);
    });
  }
});
