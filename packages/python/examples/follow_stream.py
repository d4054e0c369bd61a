"""Starts a task and follows its stream as it runs: tool calls, the model's text, the end.
A dropped connection is resumed where it stopped; the loop ends after the turn's ``done``.

    QUARRY_URL=http://127.0.0.1:8080 QUARRY_API_KEY=qry_... python follow_stream.py "EU battery makers"
"""
import sys

from quarry import Quarry, QuarryError


def main(prompt: str) -> int:
    with Quarry() as client:
        try:
            task = client.tasks.create(prompt=prompt)
        except QuarryError as err:
            print(f"refused: {err.code}: {err.message}", file=sys.stderr)
            return 1
        print("task", task["task_id"])
        # after=0: from the task's first event, so a turn that ends before the stream opens is still seen.
        for event in client.tasks.stream(task["task_id"], after=0):
            if event["type"] == "tool":
                print(f"  {event['name']} {event['state']} {event.get('summary') or ''}")
            elif event["type"] == "text":
                # A restart withdraws the reply's text so far (it was cut off and is asked for again).
                if event.get("restart"):
                    print("\n[cut off: asked again]")
                print(event["text"], end="", flush=True)
            elif event["type"] == "error":
                print(f"\nerror: {event['error']}: {event['message']}")
            elif event["type"] == "done":
                print(f"\ndone: {event['outcome']}, {event['credits_used']} credits")
        print(sum(1 for _ in client.tasks.rows(task["task_id"])), "rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(" ".join(sys.argv[1:]) or "List the EU plants making Li-ion cells."))
