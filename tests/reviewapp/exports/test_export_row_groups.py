"""Parquet row groups cut by rows and by bytes, the same whichever pieces the rows come in."""

import itertools
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from reviewapp.exports.services.export_writers import COLUMNS, ParquetWriter, RowGroups, row_bytes

# One string column and one int64: each row counts its text's bytes, 4 for the string's offset, 8 for the int.
FIXED = 12
TEXTS = ["a" * 8, "bb", "c" * 10, "d", "e" * 40, "f", "g", "h", "i"]


def _table(texts: list[str], first: int = 0) -> pa.Table:
    return pa.table({"text": pa.array(texts, pa.string()), "n": pa.array(range(first, first + len(texts)), pa.int64())})


def _cut(texts: list[str], pieces: list[int], rows: int, size: int) -> list[list[str]]:
    groups, start = [], 0
    cutter = RowGroups(rows, size)
    for count in pieces:
        groups += cutter.add(_table(texts[start : start + count], start))
        start += count
    groups += cutter.finish()
    return [group.column("text").to_pylist() for group in groups]


def test_row_bytes_counts_each_rows_strings_and_fixed_widths():
    table = pa.table(
        {
            "s": pa.array(["abc", None, "é"], pa.string()),
            "n": pa.array([1, 2, 3], pa.int64()),
            "b": pa.array([True, False, None], pa.bool_()),
            "f": pa.array([1.0, None, 2.0], pa.float64()),
        }
    )
    # fixed: 4 (the string's offset) + 8 + 1 + 8; "é" is two bytes of UTF-8, a null none
    assert row_bytes(table).tolist() == [3 + 21, 0 + 21, 2 + 21]


def test_a_group_ends_at_its_rows_or_before_the_row_that_would_pass_its_bytes():
    # sizes 20, 14, 22, 13, 52, 13, 13, 13, 13 against 40 bytes and 3 rows:
    # a+b 34 (c would make 56) | c+d 35 | e alone (larger than a group) | f+g+h (3 rows) | i
    expected = [["a" * 8, "bb"], ["c" * 10, "d"], ["e" * 40], ["f", "g", "h"], ["i"]]
    assert [len(t) + FIXED for t in TEXTS] == [20, 14, 22, 13, 52, 13, 13, 13, 13]
    assert _cut(TEXTS, [len(TEXTS)], rows=3, size=40) == expected


def test_the_groups_do_not_depend_on_the_pieces_the_rows_come_in():
    expected = _cut(TEXTS, [len(TEXTS)], rows=3, size=40)
    every_split = [
        [b - a for a, b in itertools.pairwise((0, *cuts, len(TEXTS)))]
        for n in range(len(TEXTS))
        for cuts in itertools.combinations(range(1, len(TEXTS)), n)
    ]
    assert len(every_split) == 2 ** (len(TEXTS) - 1)
    for pieces in every_split:
        assert _cut(TEXTS, pieces, rows=3, size=40) == expected, pieces


def test_rows_alone_decide_when_the_bytes_never_do():
    texts = [f"t{i}" for i in range(10)]
    assert [len(g) for g in _cut(texts, [4, 6], rows=4, size=1 << 20)] == [4, 4, 2]
    assert _cut([], [], rows=4, size=100) == []


def _rows(count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        row = {name: None for name, _ in COLUMNS}
        row.update(
            dataset="calls",
            conversation_id=f"c{i}",
            language="fr",
            judge="conciseness",
            level="turn",
            turn_position=i,
            turn_role="agent",
            text="mot " * rng.randrange(1, 400),
            context=[{"role": "user", "text": "x" * rng.randrange(0, 3000)}],
            gold_rating=1.0,
            gold_passed=True,
            reviews=[],
            comments=[],
            verdicts={},
        )
        rows.append(row)
    return rows


@pytest.mark.parametrize("seed", [1, 2])
def test_a_parquet_file_written_row_by_row_or_as_tables_has_the_same_bytes_and_row_groups(tmp_path, seed):
    rows = _rows(300, seed)
    by_rows = ParquetWriter(tmp_path / "rows.parquet", group_rows=50, group_bytes=64 << 10)
    for row in rows:
        by_rows.write(row)
    by_rows.close()
    schema = by_rows.schema

    as_tables = ParquetWriter(tmp_path / "tables.parquet", group_rows=50, group_bytes=64 << 10)
    whole = pq.read_table(tmp_path / "rows.parquet")
    rng, start = random.Random(seed), 0
    while start < len(whole):
        count = rng.randrange(1, 70)
        as_tables.write_table(whole.slice(start, count).cast(schema))
        start += count
    as_tables.close()

    assert (tmp_path / "rows.parquet").read_bytes() == (tmp_path / "tables.parquet").read_bytes()
    metadata = pq.ParquetFile(tmp_path / "rows.parquet").metadata
    groups = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    assert sum(groups) == 300 and max(groups) <= 50 and len(set(groups)) > 2  # cut by bytes, not every 50
    # each group under 64 KiB by the rule's count, computed here from the values themselves
    for i, count in enumerate(itertools.accumulate(groups, initial=0)):
        if i == len(groups):
            break
        group = whole.slice(count, groups[i]).to_pylist()
        sizes = [
            sum(len(v.encode()) + 4 if isinstance(v, str) else 4 if kind in ("string", "json") else
                1 if kind == "bool" else 8 for (name, kind), v in zip(COLUMNS, row.values(), strict=True))
            for row in group
        ]  # fmt: skip
        assert len(group) == 1 or sum(sizes) <= 64 << 10
        following = whole.slice(count + groups[i], 1).to_pylist()
        if following and len(group) < 50:  # it ended because the next row would not fit
            extra = sum(
                len(v.encode()) + 4 if isinstance(v, str) else 4 if kind in ("string", "json") else
                1 if kind == "bool" else 8 for (name, kind), v in zip(COLUMNS, following[0].values(), strict=True)
            )  # fmt: skip
            assert sum(sizes) + extra > 64 << 10


def test_row_bytes_reads_sliced_and_chunked_columns():
    table = pa.table({"s": pa.array(["abc", None, "é", "xy"], pa.string()), "n": pa.array([1, 2, 3, 4], pa.int64())})
    pieces = pa.concat_tables([table.slice(2, 2), table.slice(0, 2)])  # two chunks, the first at an offset
    assert pieces.column("s").num_chunks == 2
    assert row_bytes(pieces).tolist() == [2 + 12, 2 + 12, 3 + 12, 0 + 12]


def test_cutting_row_groups_does_not_import_pandas():
    """pyarrow imports pandas for to_numpy, pa.scalar and pa.array on Python values (0.3 s of a
    worker's first Parquet export); the cutting goes around them."""
    import subprocess
    import sys

    code = (
        "import sys, pyarrow as pa\n"
        "from pyarrow import csv\n"
        "from reviewapp.exports.services.export_writers import RowGroups\n"
        "data = b''.join(b'%d,' % i + (b'x' * i if i % 3 else b'') + b'\\n' for i in range(500))\n"
        "table = csv.read_csv(pa.BufferReader(data), csv.ReadOptions(column_names=['n', 's'], block_size=1024),\n"
        "    convert_options=csv.ConvertOptions(column_types={'s': pa.string()}, strings_can_be_null=True))\n"
        "assert table.column('s').num_chunks > 1 and table.column('s').null_count\n"
        "cutter = RowGroups(100, 4000)\n"
        "groups = cutter.add(table) + cutter.finish()\n"
        "assert sum(map(len, groups)) == 500 and len(groups) > 5\n"
        "print('pandas' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_dictionaries_for_the_few_valued_columns_and_statistics_for_all_but_text_and_json(tmp_path):
    """The writing thread bounds a kept Parquet export: no dictionary is tried on free text or JSON
    (every context is its own), and no min/max is kept for them; the scalar columns keep theirs."""
    writer = ParquetWriter(tmp_path / "rows.parquet", group_rows=100)
    for row in _rows(150, 3):
        writer.write(row)
    writer.close()
    metadata = pq.ParquetFile(tmp_path / "rows.parquet").metadata
    assert metadata.num_row_groups == 2
    for g in range(metadata.num_row_groups):
        chunks = {metadata.schema.column(i).name: metadata.row_group(g).column(i) for i in range(len(COLUMNS))}
        dictionary = {name for name, chunk in chunks.items() if chunk.has_dictionary_page}
        assert dictionary == {
            "dataset", "language", "judge", "level", "turn_role", "gold_label", "gold_source", "gold_failure_modes",
        }  # fmt: skip
        with_statistics = {name for name, chunk in chunks.items() if chunk.is_stats_set}
        assert with_statistics == {
            "dataset", "conversation_id", "language", "judge", "level", "turn_position", "turn_role",
            "gold_rating", "gold_label", "gold_passed", "gold_source", "gold_labelled_at",
        }  # fmt: skip
        assert chunks["turn_position"].statistics.min == g * 100
    assert pq.read_table(tmp_path / "rows.parquet").column("context").to_pylist()[0].startswith('[{"role":"user"')
