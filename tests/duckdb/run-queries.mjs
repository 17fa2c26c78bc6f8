// Runs the SQL of docs/tables.md in DuckDB over sprof's tables and prints each named query's rows
// as one JSON object: {"name": [rows...]}. Blocks of ```sql that start with "-- view" are run first
// (they define the tables' views, one statement each; a table with no folder gets no view, as the
// document says); blocks that start with "-- query: NAME" are the queries ({"error": ...} for one
// that reads a table without a view).
//   node run-queries.mjs TABLES_DIR DOC.md
import { existsSync, readFileSync } from "node:fs";
import { DuckDBInstance } from "@duckdb/node-api";

const [tables, doc] = process.argv.slice(2);
const blocks = [...readFileSync(doc, "utf8").matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1].replaceAll("{tables}", tables));
const instance = await DuckDBInstance.create(":memory:");
const connection = await instance.connect();
const out = {};
for (const block of blocks.filter((b) => b.startsWith("-- view"))) {
  for (const statement of block.replace(/^-- view\n/, "").split(/;\n/).filter((s) => s.trim())) {
    const table = /table=(\w+)\//.exec(statement);
    if (table && !existsSync(`${tables}/table=${table[1]}`)) continue;
    await connection.run(statement);
  }
}
for (const sql of blocks) {
  const name = /^-- query: (\S+)/.exec(sql);
  if (!name) continue;
  try {
    out[name[1]] = (await connection.runAndReadAll(sql)).getRowObjectsJson();
  } catch (e) {
    out[name[1]] = { error: String(e.message || e) };
  }
}
process.stdout.write(JSON.stringify(out) + "\n");
