"""Shared shapes for the structured-output tests: one answer written in every accepted
kind."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import pydantic


class Sky(enum.Enum):
    CLEAR = "clear"
    RAIN = "rain"


@dataclasses.dataclass
class Place:
    city: str
    country: str = "NO"


@dataclasses.dataclass
class Forecast:
    place: Place
    temperatures: list[float]
    sky: Sky
    unit: Literal["C", "F"]
    day: datetime.date
    wind: Annotated[int, "metres per second"] | None
    tags: tuple[str, ...] = ()
    note: str = "none"


class PlaceDict(TypedDict):
    city: str
    country: NotRequired[str]


class ForecastDict(TypedDict):
    place: PlaceDict
    temperatures: list[float]
    sky: Sky
    unit: Literal["C", "F"]
    day: datetime.date
    wind: int | None


class ForecastModel(pydantic.BaseModel):
    city: str
    temperatures: list[float]
    sky: Sky
    wind: int | None = None


class DuckForecast:
    """A pydantic-style class without pydantic: model_json_schema() and
    model_validate_json()."""

    def __init__(self, city: str, high: int) -> None:
        self.city = city
        self.high = high

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DuckForecast) and (self.city, self.high) == (
            other.city,
            other.high,
        )

    def __hash__(self) -> int:
        return hash((self.city, self.high))

    @classmethod
    def model_json_schema(cls) -> dict[str, Any]:
        return {
            "title": "DuckForecast",
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "high": {"type": "integer", "default": 0},
            },
            "required": ["city"],
        }

    @classmethod
    def model_validate_json(cls, text: str) -> DuckForecast:
        data = json.loads(text)
        if not isinstance(data.get("high"), int):
            raise ValueError("high must be an integer")
        return cls(data["city"], data["high"])


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "high": {"type": "integer"}},
    "required": ["city", "high"],
    "additionalProperties": False,
}

FORECAST_JSON = {
    "place": {"city": "Oslo", "country": None},
    "temperatures": [3.5, 7],
    "sky": "rain",
    "unit": "C",
    "day": "2026-11-24",
    "wind": None,
    "tags": ["cold"],
    "note": None,
}
FORECAST = Forecast(
    Place("Oslo"),
    [3.5, 7.0],
    Sky.RAIN,
    "C",
    datetime.date(2026, 11, 24),
    None,
    ("cold",),
    "none",
)

# kind -> (response_format, answer JSON, expected value)
KINDS: dict[str, tuple[Any, Any, Any]] = {
    "dataclass": (Forecast, FORECAST_JSON, FORECAST),
    "typeddict": (
        ForecastDict,
        {k: v for k, v in FORECAST_JSON.items() if k not in ("tags", "note")},
        {
            "place": {"city": "Oslo"},
            "temperatures": [3.5, 7.0],
            "sky": Sky.RAIN,
            "unit": "C",
            "day": datetime.date(2026, 11, 24),
            "wind": None,
        },
    ),
    "duck": (DuckForecast, {"city": "Oslo", "high": 7}, DuckForecast("Oslo", 7)),
    "pydantic": (
        ForecastModel,
        {"city": "Oslo", "temperatures": [1, 2.5], "sky": "clear", "wind": 4},
        ForecastModel(city="Oslo", temperatures=[1.0, 2.5], sky=Sky.CLEAR, wind=4),
    ),
    "schema": (SCHEMA, {"city": "Oslo", "high": 7}, {"city": "Oslo", "high": 7}),
    "wrapper": (
        {
            "type": "json_schema",
            "json_schema": {"name": "w", "schema": SCHEMA, "strict": True},
        },
        {"city": "Oslo", "high": 7},
        {"city": "Oslo", "high": 7},
    ),
    "json": ("json", [1, {"a": None}], [1, {"a": None}]),
}
