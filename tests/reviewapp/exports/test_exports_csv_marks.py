"""The Parquet columns PostgreSQL writes as CSV (export_flat.CsvTables): markers are filled in where a
value holds one, and every other value of the column (none, empty, text that only looks like JSON)
comes out as it went in, in its row."""

import hashlib
import hmac

import pyarrow as pa
from django.conf import settings

from reviewapp.exports.selectors.export_flat import MARKED_COLUMNS, CsvTables
from reviewapp.exports.services.export_writers import NonFinite


def reviewer(user_id: int) -> str:
    digest = hmac.new(settings.SECRET_KEY.encode(), f"reviewer:{user_id}".encode(), hashlib.sha256).hexdigest()
    return "r-" + digest[:16]


def test_only_the_values_with_a_marker_change_and_every_row_keeps_its_place():
    schema = pa.schema([("text", pa.string()), *((name, pa.string()) for name in MARKED_COLUMNS)])
    tables = CsvTables(finite=NonFinite(), schema=schema)
    # key, text, gold_failure_modes, adjudication, reviews, comments, verdicts: CSV as COPY writes it
    # (NULL unquoted and empty, quotes doubled), one row a block as COPY sends them.
    blocks = [
        b'"k1","a",[],,"[{""reviewer"":""\x01p7"",""rating"":""\x01finf""}]",[],{}\n',
        b'"k2","b",[],,[],[],{}\n',
        b'"k3","\x01p9 in a text",[],"{""lead"":""\x01p8""}",,[],{}\n',
        b'"k4","d",[],,"[{""reviewer"":""\x01p9""},{""reviewer"":null}]",[],{}\n',
        b'"k5","",[],,"",[],{}\n',
    ]
    table, keys = tables(blocks)

    assert blocks == []
    assert keys == ["k1", "k2", "k3", "k4", "k5"]
    assert table.column("reviews").to_pylist() == [
        f'[{{"reviewer":"{reviewer(7)}","rating":null}}]',
        "[]",
        None,
        f'[{{"reviewer":"{reviewer(9)}"}},{{"reviewer":null}}]',
        "",
    ]
    assert table.column("adjudication").to_pylist() == [None, None, f'{{"lead":"{reviewer(8)}"}}', None, None]
    # not a column that can hold markers: left as it is
    assert table.column("text").to_pylist() == ["a", "b", "\x01p9 in a text", "d", ""]
    assert table.column("comments").to_pylist() == ["[]"] * 5
    assert tables.marks.finite.count == 1  # the infinite rating written as null


def test_a_table_without_markers_is_the_csv_as_it_is():
    schema = pa.schema([(name, pa.string()) for name in MARKED_COLUMNS])
    table, keys = CsvTables(finite=NonFinite(), schema=schema)([b'"k",[],,"[1]",[],{}\n', b'"j",,,,,\n'])
    assert keys == ["k", "j"]
    assert table.to_pylist() == [
        {"gold_failure_modes": "[]", "adjudication": None, "reviews": "[1]", "comments": "[]", "verdicts": "{}"},
        {"gold_failure_modes": None, "adjudication": None, "reviews": None, "comments": None, "verdicts": None},
    ]
