"""The index of external ids an import has read: the line of each id's first use, the same before and after
it moves to disk, and memory that stays flat once it has."""

import json

import pytest

from reviewapp.corpus.importers.seen_ids import SeenIds
from reviewapp.corpus.services.imports import ImportFailed, dataset_import


@pytest.mark.parametrize("in_memory", [1_000, 3])
def test_each_id_gives_the_line_of_its_first_use_in_memory_and_on_disk(in_memory):
    seen = SeenIds(in_memory=in_memory)
    ids = ["b", "a", "c", "d", "é", "a", "e", "b", "f", "é", "a"]
    answers = [seen.first_use(key, line) for line, key in enumerate(ids, start=1)]
    assert answers == [None, None, None, None, None, 2, None, 1, None, 5, 2]
    assert (seen.database is not None) == (in_memory == 3)
    assert len(seen) == 7
    seen.close()
    assert seen.database is None and not seen.lines


def test_past_the_threshold_the_dict_is_emptied_onto_disk():
    seen = SeenIds(in_memory=10)
    for line in range(1, 12):
        assert seen.first_use(f"call-{line:03d}", line) is None
    assert seen.lines == {} and len(seen) == 11
    assert seen.first_use("call-004", 50) == 4 and seen.first_use("call-011", 51) == 11
    seen.close()


@pytest.mark.django_db
def test_a_repeated_id_far_into_a_long_file_is_refused_with_its_first_line(tmp_path, monkeypatch):
    monkeypatch.setattr(SeenIds.__init__, "__defaults__", (5,))
    moved = tmp_path / "moved-to-disk"
    to_disk = SeenIds._to_disk

    def noted(self):
        moved.touch()  # a file: the import may read in a child process
        to_disk(self)

    monkeypatch.setattr(SeenIds, "_to_disk", noted)
    records = [{"external_id": f"call-{i:03d}", "turns": [{"role": "user", "text": f"hi {i}"}]} for i in range(30)]
    records[27]["external_id"] = "call-002"  # its first use, line 3, is long on disk by then
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")

    with pytest.raises(ImportFailed) as refused:
        dataset_import(path=path, fmt="jsonl", dataset_name="long", batch_size=4)

    assert moved.exists()
    assert refused.value.summary.errors == [
        {"file": "calls.jsonl", "line": 28, "field": "external_id", "message": '"call-002" already used on line 3'}
    ]
