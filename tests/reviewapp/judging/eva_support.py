"""EVA's conciseness validation set, swept: the ratings the endpoint gave, those stored, and the judge's report.

The set alternates user (odd positions) and agent (even): user 2k-1 opens EVA turn k, agent 2k answers it.
A conversation is known by its first user turn, which is unique in the set.
"""

import json
import re
from io import StringIO
from pathlib import Path

from django.core.management import call_command

from reviewapp.models import Turn

REPO = Path(__file__).resolve().parents[3]
CONCISENESS_SET = (
    REPO / ".." / "shared" / "data" / "eva" / "docs" / "metrics" / "judge_validation_datasets" / "conciseness.jsonl"
)
CONCISENESS_VERSION = "eva-997ae97"


def eva_turn_of_agent_position(position: int) -> int:
    return position // 2


def ratings_given(responses) -> dict[tuple[str, int], int]:
    """{(first user turn, EVA turn id): rating} from the endpoint's answers (its recorded responses)."""
    given: dict[tuple[str, int], int] = {}
    for request, text in responses:
        prompt = request["messages"][-1]["content"]
        first_user = re.search(r"^Turn 1:\n  user: (.*)$", prompt, re.MULTILINE).group(1)
        for entry in json.loads(text):
            if entry["rating"] is not None:
                given[(first_user, entry["turn_id"])] = entry["rating"]
    return given


def ratings_stored(verdicts) -> dict[tuple[str, int], float | None]:
    """The same keys for the stored turn verdicts (select_related("turn"))."""
    first_user_of = dict(Turn.objects.filter(position=1, role="user").values_list("conversation_id", "text"))
    return {(first_user_of[v.conversation_id], eva_turn_of_agent_position(v.turn.position)): v.rating for v in verdicts}


def gold_and_predicted(given: dict[tuple[str, int], int]) -> tuple[list[str], list[str]]:
    """The set's expected rating of each labelled agent turn, read from the file, beside the rating given."""
    records = [json.loads(line) for line in CONCISENESS_SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    gold, predicted = [], []
    for record in records:
        first = next(t["content"] for t in record["conv_turns"] if t["role"] == "user")
        for turn in record["conv_turns"]:
            if "expected_rating" in turn:
                gold.append(str(turn["expected_rating"]))
                predicted.append(str(given[(first, eva_turn_of_agent_position(turn["position"]))]))
    return gold, predicted


def conciseness_report() -> dict:
    """`manage.py judge_report --json` for the conciseness version over the set."""
    out = StringIO()
    call_command(
        "judge_report",
        "--judge",
        "conciseness",
        "--version",
        CONCISENESS_VERSION,
        "--dataset",
        "eva-conciseness",
        "--json",
        "--bootstrap",
        "0",
        stdout=out,
    )
    return json.loads(out.getvalue())


FIXTURES = REPO / "tests" / "fixtures" / "eva"
JUDGE_YAML = FIXTURES / "judge.yaml"
JUDGE_YAML_OLD = FIXTURES / "judge.dcb3750b.yaml"
RUN_RECORDS = REPO / ".." / "shared" / "data" / "eva" / "tests" / "artifacts" / "records"


def load(path, label):
    out = StringIO()
    call_command("load_judges", str(path), "--version", label, stdout=out)
    return out.getvalue()
