"""Runs one question over a list of companies as a task group and writes the merged rows to a CSV
file, with the standard library's csv module (no pandas).

    QUARRY_URL=http://127.0.0.1:8080 QUARRY_API_KEY=qry_... python group_rows_to_csv.py hq.csv
"""
import csv
import sys
from typing import Any, Dict, List

from quarry import Quarry

SPEC = {
    "prompt": "Find the headquarters city of the company given.",
    "input_columns": [{"name": "company", "required": True}],
    "outputs": [{"id": "hq", "kind": "table", "columns": [{"name": "city"}]}],
}


def main(path: str) -> None:
    with Quarry() as client:
        group = client.groups.create(SPEC, inputs=[{"company": "Northvolt"}, {"company": "ACC"}], max_parallel=8)
        for event in client.groups.stream(group["group_id"]):
            if event["type"] == "run":
                print(f"input {event['input']}: {event['status']}")
            elif event["type"] == "done":
                print("counts:", event["group"]["counts"])
        rows: List[Dict[str, Any]] = list(client.groups.rows(group["group_id"]))
    # Sources and the run are nested: keep the plain columns, and the first source's URL.
    columns = sorted({key for row in rows for key in row if not key.startswith("_")})
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["_input", *columns, "source"])
        for row in rows:
            sources = row.get("_sources") or [{}]
            writer.writerow([row["_input"], *(row.get(c, "") for c in columns), sources[0].get("url", "")])
    print(f"wrote {len(rows)} rows to {path}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "group-rows.csv")
