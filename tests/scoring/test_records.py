from dataclasses import dataclass

from scoring.records import record_dict


@dataclass
class Inner:
    value: float

    def as_dict(self) -> dict:
        return {"value": round(self.value, 2)}


@dataclass
class Outer:
    name: str
    interval: tuple[float, float] | None
    inner: Inner | None = None

    @property
    def label(self) -> str:
        return self.name.upper()


def test_every_field_in_declaration_order_with_nested_results_and_tuples_as_plain_data():
    out = record_dict(Outer("a", (0.1, 0.2), Inner(0.123)))
    assert out == {"name": "a", "interval": [0.1, 0.2], "inner": {"value": 0.12}}
    assert list(out) == ["name", "interval", "inner"]


def test_named_attributes_in_the_order_given_properties_included_none_kept():
    out = record_dict(Outer("a", None), "label", "inner", "name")
    assert out == {"label": "A", "inner": None, "name": "a"}
    assert list(out) == ["label", "inner", "name"]
