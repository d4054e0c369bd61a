/** Text search of the lists (`q`): a column holds the text anywhere, in any case. */
import { sql, type RawBuilder } from 'kysely';
import type { DialectProfile } from './dialect-profile.js';

/** A LIKE pattern that matches `text` anywhere, its own `%`, `_` and `\` taken literally. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Whether one of `columns` holds `text`, ignoring case; binds containsPattern(text) once per column, in order. */
export function containsText(profile: DialectProfile, columns: readonly string[], text: string): RawBuilder<boolean> {
  const like = sql.raw(profile.caseInsensitiveLike);
  const pattern = containsPattern(text);
  return sql<boolean>`(${sql.join(columns.map((column) => sql`${sql.ref(column)} ${like} ${pattern} escape '\\'`), sql` or `)})`;
}
