"""The suite runs against a real Quarry on the demo model: QUARRY_URL and QUARRY_API_KEY name it,
QUARRY_ADMIN_KEY lets a test make an account of its own. QUARRY_HELD_URL and QUARRY_HELD_API_KEY
name a second Quarry whose model never answers, so its turns run until they are stopped.
test/process/python-client.test.ts starts both servers and sets all five."""
import os
import sys
from typing import Iterator

import httpx
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import quarry  # noqa: E402

SPEC = {
    "prompt": "Find the headquarters city of the company given.",
    "input_columns": [{"name": "company", "required": True}],
    "outputs": [{"id": "hq", "kind": "table", "columns": [{"name": "city"}]}],
}


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run this suite through test/process/python-client.test.ts, or point it at a Quarry")
    return value


@pytest.fixture
def client() -> Iterator[quarry.Quarry]:
    env("QUARRY_URL")
    env("QUARRY_API_KEY")
    with quarry.Quarry() as c:
        yield c


@pytest.fixture
def held() -> Iterator[quarry.Quarry]:
    """A client of the Quarry whose turns run until stopped (retries off: a refusal shows at once)."""
    with quarry.Quarry(env("QUARRY_HELD_URL"), env("QUARRY_HELD_API_KEY"), max_retries=0) as c:
        yield c


def new_account(credits: float) -> str:
    """A fresh account's API key (through the admin API)."""
    response = httpx.post(f"{env('QUARRY_URL')}/admin/accounts", json={"name": "python-client", "credits": credits},
                          headers={"Authorization": f"Bearer {env('QUARRY_ADMIN_KEY')}"})
    response.raise_for_status()
    key: str = response.json()["api_key"]
    return key
