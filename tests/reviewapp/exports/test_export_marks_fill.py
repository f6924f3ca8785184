"""Markers in the JSON text PostgreSQL writes (export_sql.MARK: a quote, the control character \\x01,
a kind and a text, then a quote) filled in by Python: each marker where it stands, whatever surrounds
it; the same pseudonym read once however many rows hold it; each non-finite rating counted; and
JSON text that holds no raw control character (escapes such as \\u0001, or text that looks like an
older marker) left byte for byte."""

import hashlib
import hmac

import orjson
import pytest
from django.conf import settings

from reviewapp.exports.selectors import export_flat
from reviewapp.exports.selectors.export_flat import _Marks
from reviewapp.exports.services.export_writers import NonFinite


def reviewer(user_id: int) -> bytes:
    digest = hmac.new(settings.SECRET_KEY.encode(), f"reviewer:{user_id}".encode(), hashlib.sha256).hexdigest()
    return b'"r-' + digest[:16].encode() + b'"'


def test_every_marker_is_filled_where_it_stands():
    marks = _Marks(NonFinite())
    modes = orjson.dumps({"b": 1}).hex().encode()
    data = (
        b'{"reviews":[{"reviewer":"\x01p7","rating":"\x01finf"},{"reviewer":"\x01p7","rating":"\x01f-inf"}],'
        b'"gold_failure_modes":"\x01m' + modes + b'","text":"a \\u0001 b \\"\\\\u0000p1\\" c"}\n'
        b'{"reviews":[{"reviewer":"\x01p12","rating":"\x01f1e-07"}]}\n'
    )
    assert marks.fill(data) == (
        b'{"reviews":[{"reviewer":' + reviewer(7) + b',"rating":null},{"reviewer":' + reviewer(7) + b',"rating":null}],'
        b'"gold_failure_modes":["b"],"text":"a \\u0001 b \\"\\\\u0000p1\\" c"}\n'
        b'{"reviews":[{"reviewer":' + reviewer(12) + b',"rating":1e-7}]}\n'
    )
    assert marks.finite.count == 2  # both infinite ratings, the second one too
    assert marks.people == {b"7": reviewer(7), b"12": reviewer(12)}


def test_text_without_a_marker_is_returned_as_it_is():
    data = b'{"text":"\\u0001 looks like \\"\\\\u0000p1\\"","n":1}\n'
    assert _Marks(NonFinite()).fill(data) is data


def test_a_marker_at_either_end_of_the_text():
    marks = _Marks(NonFinite())
    assert marks.fill(b'"\x01p3"') == reviewer(3)
    assert marks.fill(b'["\x01p3","\x01p3"]') == b"[" + reviewer(3) + b"," + reviewer(3) + b"]"
    assert export_flat.MARK == b'"\x01'


def test_a_control_character_that_opens_no_marker_is_refused_not_written():
    marks = _Marks(NonFinite())
    with pytest.raises(ValueError, match="byte 0"):
        marks.fill(b'\x01p3"')
    with pytest.raises(ValueError, match="byte 5"):
        marks.fill(b'["a",\x01p3"]')
