"""The one error type the spec model raises, carrying where in which spec it happened."""

from __future__ import annotations


class SpecError(ValueError):
    """A spec file is malformed or breaks one of Kafka's generator rules.

    ``where`` names the spec file and the field path, e.g. ``FetchRequest.json: Topics.Partitions``.
    """

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.detail = message
