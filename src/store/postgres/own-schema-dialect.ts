import { PostgresDialect, sql, type DatabaseIntrospector, type DatabaseMetadata, type Kysely, type PostgresDialectConfig, type SchemaMetadata, type TableMetadata } from 'kysely';

/**
 * PostgreSQL only (an SQLite file holds one install and no catalog of others): a
 * PostgresDialect whose introspector reads one schema only. Kysely's own introspector (which its
 * migrator uses to look for the migration tables) reads the catalog of every schema and calls
 * functions such as pg_get_serial_sequence on each column it finds; those fail (3F000, 42P01,
 * 42703) when another application or install drops a schema or table during the read. A database
 * shared with others must not make Quarry's start fail, so the catalog of other schemas is never read.
 */
export class OwnSchemaDialect extends PostgresDialect {
  constructor(
    config: PostgresDialectConfig,
    private readonly schema: string,
  ) {
    super(config);
  }

  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new OwnSchemaIntrospector(db, this.schema);
  }
}

interface ColumnRow {
  table: string;
  is_view: boolean;
  column: string;
  type: string;
  type_schema: string;
  not_null: boolean;
  has_default: boolean;
  auto_incrementing: boolean;
  description: string | null;
}

class OwnSchemaIntrospector implements DatabaseIntrospector {
  constructor(
    private readonly db: Kysely<unknown>,
    private readonly schema: string,
  ) {}

  async getSchemas(): Promise<SchemaMetadata[]> {
    // A plain read of pg_namespace: no per-row function that could trip over a dropped schema.
    const { rows } = await sql<{ name: string }>`select nspname as name from pg_catalog.pg_namespace`.execute(this.db);
    return rows;
  }

  /** Tables and views of this schema, the migration tables included (the migrator looks for them). */
  async getTables(): Promise<TableMetadata[]> {
    // The functions in the select list run on this schema's rows only: WHERE filters first.
    const { rows } = await sql<ColumnRow>`
      select c.relname as table, c.relkind = 'v' as is_view, a.attname as column,
             t.typname as type, tns.nspname as type_schema, a.attnotnull as not_null, a.atthasdef as has_default,
             (a.attidentity <> '' or coalesce(pg_catalog.pg_get_expr(d.adbin, d.adrelid), '') like 'nextval(%') as auto_incrementing,
             pg_catalog.col_description(a.attrelid, a.attnum) as description
        from pg_catalog.pg_class c
        join pg_catalog.pg_namespace ns on ns.oid = c.relnamespace
        join pg_catalog.pg_attribute a on a.attrelid = c.oid
        join pg_catalog.pg_type t on t.oid = a.atttypid
        join pg_catalog.pg_namespace tns on tns.oid = t.typnamespace
        left join pg_catalog.pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
       where ns.nspname = ${this.schema} and c.relkind in ('r', 'v', 'p') and a.attnum > 0 and not a.attisdropped
       order by c.relname, a.attnum`.execute(this.db);
    const tables = new Map<string, TableMetadata>();
    for (const row of rows) {
      let table = tables.get(row.table);
      if (!table) tables.set(row.table, (table = { name: row.table, schema: this.schema, isView: row.is_view, columns: [] }));
      table.columns.push({
        name: row.column,
        dataType: row.type,
        dataTypeSchema: row.type_schema,
        isNullable: !row.not_null,
        hasDefaultValue: row.has_default,
        isAutoIncrementing: row.auto_incrementing,
        ...(row.description === null ? {} : { comment: row.description }),
      });
    }
    return [...tables.values()];
  }

  async getMetadata(): Promise<DatabaseMetadata> {
    return { tables: await this.getTables() };
  }
}
